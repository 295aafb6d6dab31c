#include "ktune/fleet/queue.hpp"

#include <array>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/store/bucket.hpp"
#include "ktune/tune/gpu_evaluator.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::fleet {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

// The id names the key: 64 bits of FNV-1a, shown in `ktune queue ls`.
std::string job_id(const store::FleetJob& j) {
  std::uint64_t h = 14695981039346656037ull;
  for (const std::string& part : {j.op, j.dtype, j.bucket, j.arch, j.toolkit}) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

// A job of `req` as it enters the queue, its key (op, dtype, bucket) already set.
store::FleetJob queued(store::FleetJob j, const JobRequest& req, std::int64_t now) {
  j.arch = req.arch;
  j.toolkit = req.toolkit;
  j.budget = req.budget;
  j.priority = req.priority;
  j.state = "queued";
  j.created_ms = now;
  j.created_at = utc_now_iso8601();
  j.id = job_id(j);
  return j;
}

// A library job: the key the winner's cache entry will have (tune/gemm_library.hpp).
store::FleetJob make_library_job(const JobRequest& req, std::int64_t now) {
  bench::validate(*req.gemm, "the queued GEMM problem");
  store::FleetJob j;
  j.library = "cublaslt";
  j.op = bench::gemm_cache_op(*req.gemm);
  j.dtype = bench::gemm_cache_dtype(*req.gemm);
  j.bucket = store::bucket_name(store::bucket_of({}, bench::gemm_cache_shape(*req.gemm)));
  j.shape = *req.gemm;
  return queued(std::move(j), req, now);
}

// An Inductor kernel's job: the key its winner's cache entry will have (tune/inductor_kernel.hpp),
// bar the toolkit, which the worker's Python extends with its Triton and PyTorch versions.
store::FleetJob make_inductor_job(const JobRequest& req, std::int64_t now) {
  const nlohmann::json& p = *req.inductor;
  store::FleetJob j;
  j.library = "inductor";
  try {
    j.op = "inductor:" + p.at("lookup_hash").get<std::string>();
    j.dtype = p.at("dtype").get<std::string>();
    std::vector<std::int64_t> shape;
    for (const auto& [k, v] : p.at("numels").items()) shape.push_back(v.get<std::int64_t>());
    j.bucket = store::bucket_name(store::bucket_of({}, shape));
    (void)p.at("source").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("an Inductor kernel's job lacks a field ({}).", e.what()));
  }
  j.shape = p;
  return queued(std::move(j), req, now);
}

}  // namespace

store::FleetJob make_job(const JobRequest& req, std::int64_t now) {
  if (req.budget <= 0)
    throw Error(
        fmt::format("--budget {} for a queued job must be a positive number of "
                    "evaluations.",
                    req.budget));
  if (req.gemm) return make_library_job(req, now);
  if (req.inductor) return make_inductor_job(req, now);
  const auto spec = tune::ProblemSpec::load(req.spec);
  if (!spec.runnable())
    throw Error(fmt::format("{} is a {} spec; ktune tunes CUDA kernels only.", req.spec,
                            spec.kernel.language));
  (void)spec.constants(req.shape);  // unknown shape variables fail here, not on a worker
  // The cache entry's shape and bucket, computed the way the winner will be filed: through
  // winner_entry with a stand-in result, so the queue's key and the cache's key cannot drift.
  tune::SessionSummary stand_in;
  stand_in.shape = req.shape;
  stand_in.best.emplace();
  stand_in.best->result.set_time(1, 0, 0);
  const store::CacheEntry entry = tune::winner_entry(spec, stand_in, {}, {});
  const store::OpSpec op = tune::op_spec(spec);
  store::FleetJob j;
  j.spec = std::filesystem::absolute(req.spec).string();
  j.op = entry.key.op;
  j.dtype = entry.key.dtype;
  j.bucket = store::bucket_name(store::bucket_of(op.buckets, entry.shape));
  j.shape = req.shape;
  return queued(std::move(j), req, now);
}

namespace {

// "x,y,z" -> {x, y, z}; nullopt for anything else.
std::optional<std::array<std::int64_t, 3>> dims_of(const std::string& text) {
  std::array<std::int64_t, 3> d{};
  std::size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t end = i < 2 ? text.find(',', at) : text.size();
    if (end == std::string::npos) return std::nullopt;
    try {
      std::size_t used = 0;
      d[static_cast<std::size_t>(i)] = std::stoll(text.substr(at, end - at), &used);
      if (used != end - at) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    at = end + 1;
  }
  return d;
}

}  // namespace

std::map<std::string, std::int64_t> launch_shape_of(const TopRow& row) {
  if (!row.spec || row.grid.empty()) return {};
  const auto grid = dims_of(row.grid), block = dims_of(row.block);
  if (!grid || !block) return {};
  try {
    const tune::ProblemSpec spec = tune::ProblemSpec::load(row.spec->path);
    return tune::shape_from_launch(spec, *grid, *block)
        .value_or(std::map<std::string, std::int64_t>{});
  } catch (const Error&) {
    return {};  // a spec that cannot be read now: make_job says why
  }
}

std::vector<JobRequest> backlog_requests(const TopReport& report, const std::string& arch,
                                         const std::string& toolkit, std::int64_t budget) {
  std::vector<JobRequest> out;
  for (const auto& row : report.backlog) {
    JobRequest r;
    r.spec = row.spec->path;
    r.shape = launch_shape_of(row);
    r.arch = arch;
    r.toolkit = toolkit;
    r.budget = budget;
    r.priority = static_cast<double>(row.total_ns) / 1e9;
    out.push_back(r);
  }
  for (const auto& row : report.gemm_backlog) {
    JobRequest r;
    r.gemm = row.total.problem.get<bench::GemmProblem>();
    r.arch = arch;
    r.toolkit = toolkit;
    r.budget = budget;
    r.priority = static_cast<double>(row.total.gpu_ns) / 1e9;
    out.push_back(r);
  }
  return out;
}

namespace {

// A job's shape as listed: an Inductor kernel's without its module's text.
nlohmann::json shown_shape(const store::FleetJob& j) {
  nlohmann::json shape = j.shape;
  if (j.library == "inductor" && shape.is_object()) shape.erase("source");
  return shape;
}

}  // namespace

nlohmann::json jobs_json(const std::vector<store::FleetJob>& jobs, std::int64_t now) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& j : jobs)
    list.push_back({{"id", j.id},
                    {"state", j.state},
                    {"worker", j.worker},
                    {"age_s", static_cast<double>(now - j.created_ms) / 1e3},
                    {"run_s", j.finished_ms > j.started_ms && j.started_ms > 0
                                  ? static_cast<double>(j.finished_ms - j.started_ms) / 1e3
                                  : 0.0},
                    {"evaluations", j.evaluations},
                    {"budget", j.budget},
                    {"op", j.op},
                    {"dtype", j.dtype},
                    {"bucket", j.bucket},
                    {"arch", j.arch},
                    {"toolkit", j.toolkit},
                    {"spec", j.spec},
                    {"library", j.library},
                    {"shape", shown_shape(j)},
                    {"attempt", j.attempt},
                    {"priority", j.priority},
                    {"lease_expired", j.state == "running" && j.lease_until_ms < now},
                    {"result", j.result},
                    {"error", j.error}});
  return {{"schema_version", kQueueSchemaVersion}, {"jobs", list}};
}

}  // namespace ktune::fleet
