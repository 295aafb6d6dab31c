// ktune queue add | ls | from-backlog: tuning jobs as rows of the store, for `ktune worker`s.
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "fleet_options.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/fleet/queue.hpp"
#include "ktune/store/store.hpp"
#include "ktune/tune/gemm_library.hpp"
#include "print_json.hpp"
#include "spec_options.hpp"

namespace ktune::cli {
namespace {

struct QueueArgs {
  std::string spec, shape, arch, toolkit, since, gpu, build;
  std::string library, op, dtype;  // a library job: --library cublaslt --op gemm_nn --dtype bf16
  std::vector<std::string> specs;
  std::int64_t budget = 60;
  std::size_t limit = 20;
  bool json = false;
  std::string inductor;     // from-backlog: a scan of Inductor's Triton kernels to queue too
  bool cuda_graph = false;  // ... timed as CUDA-graph replays
};

using AddOutcome = store::FleetStore::AddOutcome;

const char* outcome_name(AddOutcome o) {
  switch (o) {
    case AddOutcome::added:
      return "queued";
    case AddOutcome::requeued:
      return "queued again";
    case AddOutcome::exists:
      break;
  }
  return "already queued";
}

void print_added(const store::FleetJob& j, AddOutcome outcome) {
  print_text("{} {}  {} {} bucket {} arch {} toolkit {} budget {}\n", outcome_name(outcome), j.id,
             j.op, j.dtype, j.bucket, j.arch.empty() ? "any" : j.arch,
             j.toolkit.empty() ? "any" : j.toolkit, j.budget);
}

int run_add(const QueueArgs& a, const GlobalOptions& g) {
  const auto now = fleet::now_ms();
  fleet::JobRequest req{a.spec, {}, a.arch, a.toolkit, a.budget, 0};
  if (!a.library.empty() || !a.op.empty() || !a.dtype.empty()) {
    if (a.library != "cublaslt")
      throw UsageError(fmt::format(
          "a library job needs --library cublaslt (with --op, --shape and --dtype), not '{}'.",
          a.library));
    if (!a.spec.empty())
      throw UsageError("--library queues a library's GEMM search, not a SPEC; drop one of them.");
    req.gemm = tune::library_problem(a.op, parse_shape_variables(a.shape, 0), a.dtype);
  } else {
    if (a.spec.empty())
      throw UsageError(
          "ktune queue add needs a SPEC, or --library cublaslt --op OP --shape m=..,n=..,k=.. "
          "--dtype D.");
    refuse_stdin(a.spec, "a tuning spec (workers read it at its path)");
    req.shape = parse_shape_variables(a.shape);
  }
  const store::FleetJob job = fleet::make_job(req, now);
  auto st = store::Store::open(g.db);
  // Asking again for a job that failed queues it again: the way to retry one once its cause (a
  // bad spec, a full disk) is fixed. Its folder's results are resumed.
  const AddOutcome outcome = store::FleetStore(*st).add_job(job, /*retry_failed=*/true);
  if (a.json)
    print_json({{"id", job.id},
                {"added", outcome != AddOutcome::exists},
                {"requeued", outcome == AddOutcome::requeued}},
               fleet::kQueueSchemaVersion);
  else
    print_added(job, outcome);
  return 0;
}

int run_ls(const QueueArgs& a, const GlobalOptions& g) {
  const auto st = open_for_listing(g.db);
  const auto jobs = st ? store::FleetStore(*st).jobs() : std::vector<store::FleetJob>{};
  const auto now = fleet::now_ms();
  if (a.json) {
    print_json(fleet::jobs_json(jobs, now));
    return 0;
  }
  print_text("{:<16} {:<8} {:<28} {:>8} {:>9}  {:<10} {:<6} {:<12} {}\n", "id", "state", "worker",
             "age_s", "evals", "op", "dtype", "bucket", "result");
  std::map<std::string, int> counts;
  for (const auto& j : jobs) {
    ++counts[j.state];
    std::string state = j.state;
    if (j.state == "running" && j.lease_until_ms < now) state = "expired";
    std::string result = j.error;
    if (j.state == "done" && j.result.is_object())
      result = fmt::format("{:.2f} us", j.result.value("median_ns", 0.0) / 1e3);
    print_text("{:<16} {:<8} {:<28} {:>8.1f} {:>4}/{:<4}  {:<10} {:<6} {:<12} {}\n", j.id, state,
               j.worker, (now - j.created_ms) / 1e3, j.evaluations, j.budget, j.op, j.dtype,
               j.bucket, result);
  }
  std::string summary;
  for (const auto& [state, n] : counts)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, state);
  print_text("{} job{}{}{}\n", jobs.size(), jobs.size() == 1 ? "" : "s",
             summary.empty() ? "" : ": ", summary);
  return 0;
}

int run_from_backlog(const QueueArgs& a, const GlobalOptions& g) {
  auto st = store::Store::open(g.db);
  const auto rep = fleet::top(*st, {since_timestamp(a.since), a.gpu, a.build, ""}, a.limit,
                              fleet::spec_catalog(spec_dirs(a.specs)));
  store::FleetStore fleet(*st);
  nlohmann::json list = nlohmann::json::array();
  const auto now = fleet::now_ms();
  std::vector<fleet::JobRequest> requests =
      fleet::backlog_requests(rep, a.arch, a.toolkit, a.budget);
  if (!a.inductor.empty()) {
    // Read whole before anything is queued: a bad scan queues nothing.
    nlohmann::json scan;
    try {
      scan = nlohmann::json::parse(read_file(a.inductor));
    } catch (const nlohmann::json::exception& e) {
      throw Error(
          fmt::format("--inductor {} is not JSON ({}); give the file ktune profile wrote "
                      "beside the trace (OUT.inductor.json).",
                      a.inductor, e.what()));
    }
    std::vector<std::string> skipped;
    for (auto& r : fleet::inductor_requests(analyze::parse_inductor_scan(scan, a.inductor), rep,
                                            a.arch, a.toolkit, a.budget, a.cuda_graph, skipped))
      requests.push_back(std::move(r));
    for (const std::string& why : skipped) std::fprintf(stderr, "ktune: %s\n", why.c_str());
  }
  for (const auto& req : requests) {
    const auto job = fleet::make_job(req, now);
    const AddOutcome outcome = fleet.add_job(job);
    const bool added = outcome == AddOutcome::added;
    list.push_back({{"id", job.id},
                    {"op", job.op},
                    {"dtype", job.dtype},
                    {"bucket", job.bucket},
                    {"spec", job.spec},
                    {"library", job.library},
                    {"added", added}});
    if (!a.json) print_added(job, outcome);
  }
  if (a.json)
    print_json({{"jobs", list}}, fleet::kQueueSchemaVersion);
  else if (list.empty())
    print_text(
        "the backlog is empty: every GEMM problem the fleet ran and every kernel a known spec "
        "tunes has a winner (GEMM problems come from traces taken with --gemm-shapes)\n");
  return 0;
}

const bool registered = register_command(
    {"queue", "Tuning jobs for ktune worker: add, list, fill from the fleet's backlog", 55,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<QueueArgs>();
       app.require_subcommand(1);
       auto json = [&](CLI::App* sub) {
         sub->add_flag("--json", a->json,
                       fmt::format("JSON output (schema_version {})", fleet::kQueueSchemaVersion));
       };
       auto job_options = [&](CLI::App* sub) {
         sub->add_option("--arch", a->arch, "Only workers of this arch take it (default: any)");
         sub->add_option("--toolkit", a->toolkit,
                         "Only workers of this toolkit take it (default: any)");
         sub->add_option("--budget", a->budget, "Evaluations per job (default 60)");
         json(sub);
       };
       auto* add =
           app.add_subcommand("add",
                              "Queue a tuning job (once per op, bucket, arch, toolkit; a job that "
                              "failed is queued again)");
       add->add_option("spec", a->spec, "T1 tuning spec (JSON); workers read it at this path");
       add->add_option(
           "--shape", a->shape,
           "Shape variables NAME=VALUE,... (with --library: m=..,n=..,k=..[,batch=..])");
       add->add_option("--library", a->library,
                       "Queue a library search instead of a SPEC: cublaslt (with --op, --shape, "
                       "--dtype as ktune tune --library takes them)");
       add->add_option("--op", a->op,
                       "With --library: gemm_<layout>[_<epilogue>], e.g. gemm_tn_bias");
       add->add_option("--dtype", a->dtype, "With --library: f16, bf16, f32 or tf32");
       job_options(add);
       auto* ls = app.add_subcommand("ls", "Each job's state, worker, age and evaluations done");
       json(ls);
       auto* fb = app.add_subcommand(
           "from-backlog",
           "Queue the fleet's backlog: its GEMM problems (library jobs) and the kernels a known "
           "spec tunes");
       job_options(fb);
       fb->add_option("--since", a->since, "Runs started since: 2026-11-20, 24h, 7d");
       fb->add_option("--gpu", a->gpu, "Only kernels run on this GPU (name or arch)");
       fb->add_option("--build", a->build, "Only kernels of this build");
       fb->add_option("--inductor", a->inductor,
                      "Also queue the tunable Triton kernels of this scan of torch.compile's "
                      "kernels (OUT.inductor.json, which ktune profile writes beside the trace); "
                      "each job carries its kernel module's text");
       fb->add_flag("--cuda-graph", a->cuda_graph,
                    "With --inductor: time the kernels as CUDA-graph replays (programs compiled "
                    "with mode=\"reduce-overhead\")");
       fb->add_option("--limit", a->limit, "Look at the top N kernels (default 20; 0: all)");
       add_specs_option(*fb, a->specs);
       return [a, add, ls, &globals] {
         if (add->parsed()) return run_add(*a, globals);
         if (ls->parsed()) return run_ls(*a, globals);
         return run_from_backlog(*a, globals);
       };
     }});

}  // namespace
}  // namespace ktune::cli
