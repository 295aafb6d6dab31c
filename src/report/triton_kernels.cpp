// The report's view of Inductor's Triton kernels (a scan kept beside the trace by ktune profile):
// the "Triton kernels (Inductor)" section with each kernel's GPU time, kind, launch shape, ops,
// source hash and module, the backlog's note naming the tunable ones with their GPU time, and
// their JSON.
#include <fmt/format.h>

#include "sections.hpp"
#include "units.hpp"

namespace ktune::report::detail {
namespace {

using analyze::Analysis;
using analyze::TritonKernel;
using nlohmann::json;

std::string short_hash(const std::string& h) {
  return h.substr(0, 12);
}

std::string joined(const std::vector<std::string>& words) {
  return words.empty() ? "-" : fmt::format("{}", fmt::join(words, ", "));
}

// The scanned kernels that are in the backlog and tunable, in backlog order: (row, kernel).
std::vector<std::pair<std::size_t, const TritonKernel*>> tunable_backlog(const Analysis& a) {
  std::vector<std::pair<std::size_t, const TritonKernel*>> out;
  for (const TritonKernel& k : a.triton.kernels)
    if (k.tunable && k.kernel_row && *k.kernel_row < a.backlog_size)
      out.emplace_back(*k.kernel_row, &k);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<Section> triton_sections(const Analysis& a) {
  const analyze::TritonKernels& t = a.triton;
  if (!t.recorded) return {};
  Section s{"Triton kernels (Inductor)",
            fmt::format("{} kernels torch.compile generated (PyTorch {}, Triton {}; scan {}). "
                        "Tune one with ktune tune --inductor-kernel MODULE.",
                        t.kernels.size(), t.torch, t.triton, t.file.string())};
  s.header = {"GPU time", "Launches", "Kernel", "Kind", "Launch shape", "Ops", "Source", "Module"};
  for (const TritonKernel& k : t.kernels)
    s.rows.push_back({k.kernel_row ? duration(static_cast<double>(k.gpu_ns)) : "not run",
                      std::to_string(k.launches), k.name,
                      k.tunable ? k.kind : k.kind + " (not tunable: " + k.why_not + ")",
                      analyze::numels_text(k), joined(k.ops), short_hash(k.source_hash), k.path});
  return {s};
}

std::string backlog_triton_note(const Analysis& a) {
  const auto rows = tunable_backlog(a);
  if (rows.empty()) return "";
  std::vector<std::string> words;
  for (const auto& [row, k] : rows)
    words.push_back(fmt::format("#{} {} ({}, {})", row + 1, k->kind,
                                duration(static_cast<double>(k->gpu_ns)),
                                analyze::numels_text(*k)));
  return fmt::format(
      " Inductor's Triton kernels in it, tunable: {}. Their modules are under Triton kernels "
      "(Inductor).",
      fmt::join(words, "; "));
}

json triton_kernels_json(const Analysis& a) {
  json kernels = json::array();
  for (const TritonKernel& k : a.triton.kernels) {
    json numels = json::object();
    for (const auto& [name, v] : k.numels) numels[name] = v;
    kernels.push_back(
        {{"name", k.name},
         {"kind", k.kind},
         {"lookup_hash", k.lookup_hash},
         {"source_hash", k.source_hash},
         {"path", k.path},
         {"dtype", k.dtype},
         {"numels", numels},
         {"ops", k.ops},
         {"stack_traces", k.stack_traces},
         {"tunable", k.tunable},
         {"why_not", k.why_not},
         {"launches", k.launches},
         {"gpu_ns", k.gpu_ns},
         {"tune_command", k.tunable ? json(analyze::inductor_tune_command(k)) : json(nullptr)}});
  }
  return {{"recorded", a.triton.recorded},
          {"file", a.triton.file.string()},
          {"torch", a.triton.torch},
          {"triton", a.triton.triton},
          {"kernels", kernels}};
}

json backlog_triton_json(const Analysis& a) {
  json out = json::array();
  for (const auto& [row, k] : tunable_backlog(a))
    out.push_back({{"name", k->name},
                   {"gpu_ns", k->gpu_ns},
                   {"lookup_hash", k->lookup_hash},
                   {"path", k->path},
                   {"tune_command", analyze::inductor_tune_command(*k)}});
  return out;
}

}  // namespace ktune::report::detail
