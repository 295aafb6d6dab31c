#include "ktune/trace/watch.hpp"

#include <algorithm>

#include "ktune/core/error.hpp"
#include "ktune/trace/ktrace.hpp"
#include "ktune/trace/options.hpp"

namespace ktune::trace {

namespace fs = std::filesystem;

std::vector<fs::path> traces_written(const fs::path& output, fs::file_time_type since) {
  std::vector<fs::path> out;
  std::error_code ec;
  auto fresh = [&](const fs::path& p) {
    return fs::is_regular_file(p, ec) && fs::last_write_time(p, ec) >= since;
  };
  if (fresh(output)) out.push_back(output);
  const fs::path dir = output.parent_path().empty() ? fs::path(".") : output.parent_path();
  std::vector<fs::path> others;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path p = output.parent_path() / e.path().filename();
    if (p != output && is_trace_of(output, p) && fresh(p)) others.push_back(p);
  }
  std::sort(others.begin(), others.end(), [](const fs::path& a, const fs::path& b) {
    const std::string& x = a.native();
    const std::string& y = b.native();
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

TraceWatch::TraceWatch(fs::path output, fs::file_time_type since, double every_s)
    : output_(std::move(output)), since_(since), every_s_(every_s) {}

namespace {

// A trace the tracer has finished writing: a window that closed, or a process that exited. Only
// the metadata is read (no row counts): an open window may hold millions of rows, and this runs
// every second.
bool finished(const fs::path& p) {
  try {
    return KtraceReader(p).metadata().complete;
  } catch (const Error&) {
    return false;  // still being created, or damaged: rest() hands it over at the end
  }
}

}  // namespace

std::vector<fs::path> TraceWatch::closed(double now_s) {
  std::vector<fs::path> out;
  if (now_s < next_s_) return out;
  next_s_ = now_s + every_s_;
  for (const fs::path& p : traces_written(output_, since_))
    if (!given_.count(p) && finished(p)) {
      given_.insert(p);
      out.push_back(p);
    }
  return out;
}

std::vector<fs::path> TraceWatch::rest() {
  std::vector<fs::path> out;
  for (const fs::path& p : traces_written(output_, since_))
    if (given_.insert(p).second) out.push_back(p);
  return out;
}

}  // namespace ktune::trace
