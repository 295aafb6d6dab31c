// Inductor's Triton kernels as tuning jobs: each carries its kernel module's text, since the
// worker that claims it runs on another machine; the worker writes it to a private file and tunes
// it through tune::run's InductorKernel target.
#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/fleet/queue.hpp"

namespace ktune::fleet {

nlohmann::json inductor_job_payload(const analyze::TritonKernel& k, const std::string& torch,
                                    const std::string& triton, bool cuda_graph) {
  nlohmann::json numels = nlohmann::json::object();
  for (const auto& [name, v] : k.numels) numels[name] = v;
  return {{"schema_version", kInductorJobSchemaVersion},
          {"name", k.name},
          {"kind", k.kind},
          {"lookup_hash", k.lookup_hash},
          {"source_hash", k.source_hash},
          {"dtype", k.dtype},
          {"numels", numels},
          {"ops", k.ops},
          {"torch", torch},
          {"triton", triton},
          {"cuda_graph", cuda_graph},
          {"module", std::filesystem::path(k.path).filename().string()},
          {"source", read_file(k.path)}};
}

std::vector<JobRequest> inductor_requests(const analyze::TritonKernels& scan,
                                          const TopReport& report, const std::string& arch,
                                          const std::string& toolkit, std::int64_t budget,
                                          bool cuda_graph, std::vector<std::string>& skipped) {
  std::vector<JobRequest> out;
  for (const analyze::TritonKernel& k : scan.kernels) {
    if (!k.tunable) continue;
    JobRequest r;
    try {
      r.inductor = inductor_job_payload(k, scan.torch, scan.triton, cuda_graph);
    } catch (const Error& e) {
      skipped.push_back(fmt::format("{} was not queued: {}", k.name, e.what()));
      continue;
    }
    r.arch = arch;
    r.toolkit = toolkit;
    r.budget = budget;
    for (const TopRow& row : report.rows)
      if (row.kernel == k.name) r.priority = static_cast<double>(row.total_ns) / 1e9;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ktune::fleet
