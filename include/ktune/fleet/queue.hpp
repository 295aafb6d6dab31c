#pragma once
// The tuning queue: jobs are rows of the store (store/fleet.hpp) keyed by what they would tune,
// (op, dtype, shape bucket, arch, toolkit), so the same job is queued once however many nodes ask.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/fleet/query.hpp"
#include "ktune/store/fleet.hpp"

namespace ktune::fleet {

inline constexpr int kQueueSchemaVersion = 1;

struct JobRequest {
  std::string spec;                           // T1 file; workers read it at this path
  std::map<std::string, std::int64_t> shape;  // overrides of the spec's shape variables
  std::string arch, toolkit;                  // "": any worker
  std::int64_t budget = 60;                   // evaluations
  double priority = 0;
};

// Reads the spec (ktune::Error naming it when bad) and fills the job's key and id.
store::FleetJob make_job(const JobRequest& request, std::int64_t now_ms);

// Milliseconds since the epoch: the queue's clock (leases compare workers' clocks, so a fleet's
// hosts keep them in step, as NTP does).
std::int64_t now_ms();

// The backlog's kernels (query.hpp) as jobs of their spec at its default shape, for workers of
// `arch` and `toolkit` ("": any); priority = the kernel's fleet time in seconds.
std::vector<JobRequest> backlog_requests(const TopReport& report, const std::string& arch,
                                         const std::string& toolkit, std::int64_t budget);

// {"schema_version", "jobs": [{"id", "state", "worker", "age_s", "evaluations", "budget", "op",
//  "dtype", "bucket", "arch", "toolkit", "spec", "shape", "attempt", "priority", "result",
//  "error"}]}
nlohmann::json jobs_json(const std::vector<store::FleetJob>& jobs, std::int64_t now_ms);

}  // namespace ktune::fleet
