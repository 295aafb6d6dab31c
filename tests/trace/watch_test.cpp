#include "ktune/trace/watch.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "ktune/trace/ktrace.hpp"
#include "trace_test_util.hpp"

namespace ktune::trace {
namespace {

namespace fs = std::filesystem;

// Writes a trace of one kernel as the tracer leaves it: `complete` once it has finished the file.
void write_window(const fs::path& path, bool complete, std::uint64_t window) {
  Trace t;
  t.metadata.complete = complete;
  t.metadata.window.period_s = 60;
  t.metadata.window.window_s = 3;
  t.metadata.window.index = window;
  KernelRecord k;
  k.name = "scale";
  k.start_ns = 1000;
  k.end_ns = 2000;
  t.kernels.push_back(k);
  write_ktrace(path, t);
}

std::vector<std::string> names(const std::vector<fs::path>& paths) {
  std::vector<std::string> out;
  for (const fs::path& p : paths) out.push_back(p.filename().string());
  return out;
}

// A service traced with periodic windows: each window reaches the caller once, when the tracer
// has closed it and the watch's next look comes due on the caller's clock, not before.
TEST(TraceWatch, HandsOverEachWindowOnceWhenItCloses) {
  test::TempDir dir;
  const fs::path out = dir.path / "svc.ktrace";
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(1);
  TraceWatch watch(out, since, /*every_s=*/1.0);
  EXPECT_TRUE(watch.closed(0).empty());  // nothing written yet

  write_window(dir.path / "svc.w0.ktrace", /*complete=*/false, 0);  // window 0 is open
  EXPECT_TRUE(watch.closed(1.0).empty());

  write_window(dir.path / "svc.w0.ktrace", true, 0);  // closed as window 1 opens
  write_window(dir.path / "svc.w1.ktrace", false, 1);
  EXPECT_TRUE(watch.closed(1.5).empty());  // the next look is due at 2.0
  EXPECT_EQ(names(watch.closed(2.0)), std::vector<std::string>{"svc.w0.ktrace"});
  EXPECT_TRUE(watch.closed(3.0).empty());  // window 0 is not handed over twice

  // A child process's windows are traces of the run too (OUT.<pid>.wK.ktrace).
  write_window(dir.path / "svc.4242.w0.ktrace", true, 0);
  write_window(dir.path / "svc.w1.ktrace", true, 1);
  write_window(dir.path / "svc.w2.ktrace", false, 2);
  EXPECT_EQ(names(watch.closed(4.0)),
            (std::vector<std::string>{"svc.w1.ktrace", "svc.4242.w0.ktrace"}));

  // The process was killed in window 2: its open window is all the run ends with.
  EXPECT_EQ(names(watch.rest()), std::vector<std::string>{"svc.w2.ktrace"});
  EXPECT_TRUE(watch.rest().empty());
}

// Files that only look like traces of the run, or are older than it, or are not traces at all
// (half-created, damaged) are never handed over while the run goes on.
TEST(TraceWatch, IgnoresWhatIsNotAFinishedTraceOfThisRun) {
  test::TempDir dir;
  const fs::path out = dir.path / "svc.ktrace";
  write_window(dir.path / "svc.w7.ktrace", true, 7);  // an earlier run's window
  fs::last_write_time(dir.path / "svc.w7.ktrace",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(1);
  TraceWatch watch(out, since, 1.0);
  write_window(dir.path / "other.w0.ktrace", true, 0);
  write_window(dir.path / "svc.wx.ktrace", true, 0);
  { std::ofstream(dir.path / "svc.w3.ktrace") << "not yet a trace"; }
  EXPECT_TRUE(watch.closed(0).empty());
  EXPECT_EQ(names(watch.rest()), std::vector<std::string>{"svc.w3.ktrace"});
}

}  // namespace
}  // namespace ktune::trace
