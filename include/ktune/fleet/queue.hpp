#pragma once
// The tuning queue: jobs are rows of the store (store/fleet.hpp) keyed by what they would tune,
// (op, dtype, shape bucket, arch, toolkit), so the same job is queued once however many nodes ask.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/analyze/triton_kernels.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/fleet/query.hpp"
#include "ktune/store/fleet.hpp"

namespace ktune::fleet {

inline constexpr int kQueueSchemaVersion = 2;

struct JobRequest {
  std::string spec;                           // T1 file; workers read it at this path
  std::map<std::string, std::int64_t> shape;  // overrides of the spec's shape variables
  std::string arch, toolkit;                  // "": any worker
  std::int64_t budget = 60;                   // evaluations
  double priority = 0;
  // A library job instead of a spec: cuBLASLt's algorithms for this GEMM problem.
  std::optional<bench::GemmProblem> gemm;
  // An Inductor Triton kernel instead: inductor_job_payload(), the kernel module's text included
  // (a worker's machine does not share this one's files).
  std::optional<nlohmann::json> inductor;
};

// Reads the spec (ktune::Error naming it when bad), or takes the GEMM problem, and fills the job's
// key (the cache key its winner will have) and id.
store::FleetJob make_job(const JobRequest& request, std::int64_t now_ms);

// Milliseconds since the epoch: the queue's clock (leases compare workers' clocks, so a fleet's
// hosts keep them in step, as NTP does).
std::int64_t now_ms();

// The shape variables a backlog kernel ran with, read from its costliest launch shape through its
// spec (tune::shape_from_launch); empty (the spec's defaults) when none fits.
std::map<std::string, std::int64_t> launch_shape_of(const TopRow& row);

// The backlog (query.hpp) as jobs for workers of `arch` and `toolkit` ("": any): each kernel a
// known spec tunes, at the shape its launches imply (launch_shape_of), and each GEMM problem as a
// library job; priority = its fleet GPU time in seconds.
std::vector<JobRequest> backlog_requests(const TopReport& report, const std::string& arch,
                                         const std::string& toolkit, std::int64_t budget);

inline constexpr int kInductorJobSchemaVersion = 1;

// What an Inductor kernel's job carries (FleetJob::shape): {"schema_version", "name", "kind",
// "lookup_hash", "source_hash", "dtype", "numels", "ops", "torch", "triton", "cuda_graph",
// "module" (its file name), "source" (its text)}. ktune::Error naming the module when it cannot be
// read.
nlohmann::json inductor_job_payload(const analyze::TritonKernel& kernel, const std::string& torch,
                                    const std::string& triton, bool cuda_graph);

// The scan's tunable kernels as jobs for workers of `arch` and `toolkit` ("": any); priority =
// the kernel's fleet GPU time in seconds (report.rows, by name; 0 when the fleet has not seen it).
// A kernel whose module cannot be read is left out with its sentence in `skipped`.
std::vector<JobRequest> inductor_requests(const analyze::TritonKernels& scan,
                                          const TopReport& report, const std::string& arch,
                                          const std::string& toolkit, std::int64_t budget,
                                          bool cuda_graph, std::vector<std::string>& skipped);

// {"schema_version", "jobs": [{"id", "state", "worker", "age_s", "run_s" (its last claim, start to
//  finish; 0 while it runs), "evaluations", "budget", "op", "dtype", "bucket", "arch", "toolkit",
//  "spec", "library", "shape", "attempt", "priority", "result", "error"}]}
nlohmann::json jobs_json(const std::vector<store::FleetJob>& jobs, std::int64_t now_ms);

}  // namespace ktune::fleet
