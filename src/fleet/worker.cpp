#include "ktune/fleet/worker.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/fleet/queue.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/fleet.hpp"
#include "ktune/tune/run.hpp"

namespace ktune::fleet {
namespace fs = std::filesystem;
namespace {

// Deterministic stand-in for the GPU: a configuration's "time" is a hash of its values, so every
// worker, in any order, finds the same winner; a library job's candidates are 24 made-up
// configurations. Only for tests of the queue (no GPU on CI).
class FakeEvaluator : public tune::Evaluator {
 public:
  explicit FakeEvaluator(double ms) : ms_(ms) {}
  nlohmann::json describe() override {
    tune::LibraryCandidates c;
    c.cublaslt_version = "fake (test only)";
    for (int i = 0; i < 24; ++i) {
      bench::LtAlgoConfig a;
      a.algo_id = 60 + i % 4;
      a.tile = static_cast<std::uint32_t>(10 + i / 4);
      a.source = i < 4 ? "heuristic" : "enumerated";
      a.heuristic_rank = i < 4 ? i + 1 : 0;
      c.configs.push_back(a);
    }
    c.heuristic = 4;
    return c;
  }
  std::size_t next_ready(const std::vector<tune::ConfigMap>&) override { return 0; }
  tune::CandidateOutcome evaluate(const tune::ConfigMap& config, std::optional<double>) override {
    if (ms_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms_));
    std::uint64_t h = 14695981039346656037ull;
    for (const auto& [k, v] : config)
      for (unsigned char c : k + "=" + v.repr() + ";") h = (h ^ c) * 1099511628211ull;
    tune::CandidateOutcome r;
    r.status = tune::Status::ok;
    r.full = true;
    r.set_time(1000.0 + static_cast<double>(h % 9000), 1, 10);
    r.detail = "fake evaluator (test only)";
    return r;
  }

 private:
  double ms_;
};

// Renews a claim's lease from its own connection while the session runs; sets `lost` when another
// claim took the job (the session then stops after its current evaluation).
class Heartbeat {
 public:
  Heartbeat(const WorkerOptions& o, const store::FleetJob& job,
            std::atomic<std::int64_t>& evaluations, std::atomic<bool>& lost)
      : thread_([this, &o, job, &evaluations, &lost] {
          std::unique_ptr<store::Store> st;
          const auto period = std::chrono::duration<double>(
              o.heartbeat_s > 0 ? o.heartbeat_s : std::min(o.lease_s / 3, 2.0));
          std::unique_lock lock(m_);
          while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
            try {
              if (!st) st = store::Store::open(o.db);
              store::FleetStore fleet(*st);
              if (!fleet.heartbeat(job.id, job.attempt,
                                   now_ms() + static_cast<std::int64_t>(o.lease_s * 1e3),
                                   evaluations.load())) {
                lost = true;
                return;
              }
            } catch (const Error& e) {
              // The store is unreachable for now: keep trying; the lease may run out meanwhile.
              o.log(fmt::format("heartbeat of job {} failed: {}", job.id, e.what()));
              st.reset();
            }
          }
        }) {}
  ~Heartbeat() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// What a job's session left: its summary, and the winner's cache entry when it has one.
// A job through tuning's front door: the spec's space at the job's shape, or cuBLASLt's candidates
// for its GEMM problem (kept in the job's folder, so a resumed job chooses among the same set);
// measured by the isolated GPU evaluator (or the fake one), each evaluation counted for the
// heartbeat, the lease renewed while it runs.
tune::Outcome run_job(const WorkerOptions& o, const store::FleetJob& job, tune::SessionOptions so,
                      const store::Environment& env, std::atomic<std::int64_t>& evaluations,
                      std::atomic<bool>& lost) {
  std::optional<tune::ProblemSpec> spec;
  tune::Job j;
  if (job.library.empty()) {
    spec = tune::ProblemSpec::load(job.spec);
    so.shape = job.shape.get<std::map<std::string, std::int64_t>>();
    bench::PipelineSettings settings;
    settings.full = bench::PipelineSettings::tuning_full();
    settings.compile_threads = o.compile_threads;
    j.target = tune::SpecKernel{&*spec, settings};
  } else if (job.library == "cublaslt") {
    j.target = tune::LibraryGemm{job.shape.get<bench::GemmProblem>(), {}};
  } else {
    throw Error(fmt::format("job {} names library '{}', which this ktune does not search.", job.id,
                            job.library));
  }
  j.session = std::move(so);
  j.device = o.device;
  j.environment = [env] { return env; };
  j.host = host_identity();
  if (o.fake_evaluation_ms)
    j.make_evaluator = [ms = *o.fake_evaluation_ms](tune::IsolatedEvaluator::Factory) {
      return std::unique_ptr<tune::Evaluator>(std::make_unique<FakeEvaluator>(ms));
    };
  j.on_result = [&evaluations](const tune::CandidateOutcome&) { ++evaluations; };
  Heartbeat beat(o, job, evaluations, lost);
  return tune::run(j);
}

}  // namespace

unsigned compile_share(int gpus) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1u, cores / unsigned(std::max(1, gpus)));
}

namespace {

std::string default_name(int device) {
  return fmt::format("{}:{}/gpu{}", host_identity().hostname, ::getpid(), device);
}

// --- A graceful stop: SIGTERM or SIGINT ends the current evaluation, gives the claim back and
// returns. Without it, each rolling restart cost the job an attempt until it was failed for good.
std::atomic<bool> g_stop_requested{false};
std::atomic<std::atomic<bool>*> g_job_interrupt{nullptr};  // the running session's stop flag
static_assert(std::atomic<bool>::is_always_lock_free &&
              std::atomic<std::atomic<bool>*>::is_always_lock_free);

extern "C" void on_stop_signal(int) {
  g_stop_requested = true;
  if (std::atomic<bool>* job = g_job_interrupt.load()) *job = true;
}

class StopSignals {
 public:
  StopSignals() {
    g_stop_requested = false;
    struct sigaction sa = {};
    sa.sa_handler = on_stop_signal;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, &old_term_);
    ::sigaction(SIGINT, &sa, &old_int_);
  }
  ~StopSignals() {
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_term_ = {}, old_int_ = {};
};

// Sleeps up to `s` seconds, waking early when a stop is requested.
void sleep_unless_stopped(double s) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(s));
  while (!g_stop_requested && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
}

// --- The store, opened again when it went away (a PostgreSQL restart, a network cut): the
// worker waits for it rather than exiting, so jobs queued after the server is back are run.
class StoreLink {
 public:
  explicit StoreLink(const WorkerOptions& o) : o_(o), store_(store::Store::open(o.db)) {}

  store::Store& store() {
    if (!store_) store_ = store::Store::open(o_.db);
    return *store_;
  }

  // Runs fn(FleetStore&) until it does not throw StoreUnavailable, reopening the store between
  // tries with a growing wait. false: a stop was requested, or `give_up_after_s` (if > 0) passed.
  template <class Fn>
  bool run(Fn&& fn, double give_up_after_s = 0) {
    const auto start = std::chrono::steady_clock::now();
    double wait_s = std::min(o_.poll_s, 0.1);
    for (bool logged = false;;) {
      try {
        store::FleetStore fleet(store());
        fn(fleet);
        if (logged) o_.log(fmt::format("{}: the store is back", o_.name));
        return true;
      } catch (const store::StoreUnavailable& e) {
        store_.reset();
        if (!logged) o_.log(fmt::format("{}: waiting for the store: {}", o_.name, e.what()));
        logged = true;
      }
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (g_stop_requested || (give_up_after_s > 0 && waited >= give_up_after_s)) return false;
      sleep_unless_stopped(wait_s);
      wait_s = std::min(wait_s * 2, std::max(o_.poll_s, 10.0));
    }
  }

 private:
  const WorkerOptions& o_;
  std::unique_ptr<store::Store> store_;
};

// Evaluations already in a job's results file: what an earlier claim finished and this one
// resumes. The heartbeat reports them with this claim's, so `queue ls` counts the job's total.
std::int64_t evaluations_recorded(const fs::path& results) {
  std::error_code ec;
  if (!fs::exists(results, ec)) return 0;
  try {
    return static_cast<std::int64_t>(tune::read_results(results).size());
  } catch (const Error&) {
    return 0;  // unreadable: the session says so when it resumes
  }
}

// Gives a claim back (FleetStore::release), waiting for the store at most one lease: after that
// the lease has run out and the job is free anyway.
void release_claim(StoreLink& link, const WorkerOptions& o, const store::FleetJob& job,
                   std::int64_t evaluations) {
  bool released = false;
  link.run(
      [&](store::FleetStore& fleet) { released = fleet.release(job.id, job.attempt, evaluations); },
      o.lease_s);
  o.log(fmt::format("{}: {} job {} ({} evaluations recorded)", o.name,
                    released ? "stopped; gave back" : "stopped; could not give back", job.id,
                    evaluations));
}

}  // namespace

store::Environment fake_environment() {
  return {"sm_90", "ktune fake device (test only)", "13.0", 0};
}

GpuProbe probe_gpu(int ordinal) {
  subprocess::Options bounds;
  bounds.timeout_s = 120;  // the driver's first initialisation of many GPUs takes seconds, not this
  const subprocess::Result r = subprocess::run_forked(
      [ordinal] {
        nlohmann::json j;
        try {
          const store::Environment env = runtime::detect_environment(ordinal);
          j = {{"count", cuda::capture_identity().devices.size()},
               {"arch", env.arch},
               {"device_name", env.device_name},
               {"toolkit", env.toolkit},
               {"driver_major", env.driver_major}};
        } catch (const std::exception& e) {
          j = {{"error", e.what()}};
        }
        std::fputs(j.dump().c_str(), stdout);
        return 0;
      },
      bounds);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!r.exit.ok() || j.is_discarded() || !j.is_object())
    throw Error(
        fmt::format("the GPU probe process {}; run `ktune info` to see what the driver says.",
                    r.exit.ok() ? "answered nothing readable" : r.exit.describe()));
  if (j.contains("error")) throw NoGpuError(j["error"].get<std::string>());
  return {j["count"].get<int>(),
          {j["arch"], j["device_name"], j["toolkit"], j["driver_major"].get<int>()}};
}

WorkerStats run_worker(const WorkerOptions& in) {
  WorkerOptions o = in;
  if (!o.log)  // UTC time to the millisecond: an operator (and gpu-fleet.sh) sees where time goes
    o.log = [](const std::string& line) {
      const auto now = std::chrono::system_clock::now();
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
      std::fprintf(stderr, "%s.%03dZ %s\n",
                   fmt::format("{:%Y-%m-%dT%H:%M:%S}",
                               fmt::gmtime(std::chrono::system_clock::to_time_t(now)))
                       .c_str(),
                   int(ms.count()), line.c_str());
    };
  if (o.name.empty()) o.name = default_name(o.device);
  if (o.work_dir.empty()) o.work_dir = data_dir() / "jobs";
  if (!(o.lease_s > 0)) throw Error("--lease must be a positive number of seconds.");
  store::Environment env = fake_environment();
  if (!o.fake_evaluation_ms) {
    const GpuProbe probe = probe_gpu(o.device);
    env = probe.environment;
    if (o.compile_threads == 0) o.compile_threads = compile_share(probe.device_count);
  }
  StopSignals signals;
  StoreLink link(o);
  WorkerStats stats;
  for (;;) {
    std::optional<store::FleetJob> job;
    bool idle_done = false;
    if (!link.run([&](store::FleetStore& fleet) {
          job = fleet.claim(o.name, env.arch, env.toolkit,
                            static_cast<std::int64_t>(o.lease_s * 1e3), now_ms(), o.max_attempts);
          // Draining waits for jobs others hold: their worker may die and leave them to this one.
          idle_done = !job && (o.once || (o.drain && fleet.pending_jobs() == 0));
        }))
      return stats;  // stopped while the store was away
    if (!job) {
      if (idle_done || g_stop_requested) return stats;
      sleep_unless_stopped(o.poll_s);
      if (g_stop_requested) return stats;
      continue;
    }
    o.log(fmt::format("{}: claimed job {} ({} {} bucket {}, attempt {})", o.name, job->id, job->op,
                      job->dtype, job->bucket, job->attempt));
    std::atomic<std::int64_t> evaluations{
        evaluations_recorded(tune::Session::results_path(o.work_dir / job->id))};
    std::atomic<bool> lost{false};  // another claim took the job, or a stop was requested
    g_job_interrupt = &lost;
    if (g_stop_requested) lost = true;  // a signal between the claim and here
    bool store_lost = false;            // the store went away during the job
    std::string machine_failed;         // an EnvironmentError with attempts left: retried
    nlohmann::json result;
    std::string error;
    bool ok = false;
    try {
      store::Store* st = &link.store();
      tune::SessionOptions so;
      so.budget = static_cast<std::size_t>(job->budget);
      so.out_dir = o.work_dir / job->id;
      so.resume = fs::exists(tune::Session::results_path(so.out_dir));
      so.interrupt = &lost;
      so.claim = job->attempt;  // fences off the lines of claims that lost the job
      const tune::Outcome run = run_job(o, *job, so, env, evaluations, lost);
      evaluations = static_cast<std::int64_t>(run.session.evaluations);
      g_job_interrupt = nullptr;
      if (g_stop_requested && run.session.stop == tune::StopCause::interrupted) {
        release_claim(link, o, *job, evaluations.load());
        return stats;
      }
      if (lost && !g_stop_requested) {
        ++stats.lost;
        o.log(fmt::format("{}: lost the lease of job {}; another worker has it", o.name, job->id));
        continue;
      }
      if (run.winner) {
        if (run.op && !st->get_op(run.op->op)) st->put_op(*run.op);
        const store::PutResult put = st->put_entry(*run.winner);
        result = {{"median_ns", run.winner->median_ns},
                  {"config", run.winner->config},
                  {"bucket", put.bucket},
                  {"cache", put.reason},
                  {"resumed", run.session.resumed}};
        if (run.default_ns) result["default_median_ns"] = *run.default_ns;
        ok = true;
      } else {
        error = "no configuration passed verification" + tune::common_failure(run.session) +
                "; see " + tune::Session::results_path(so.out_dir).string();
      }
    } catch (const store::StoreUnavailable& e) {
      store_lost = true;  // not the job's failure: it is given back once the store is there
      o.log(fmt::format("{}: job {}: {}", o.name, job->id, e.what()));
    } catch (const EnvironmentError& e) {
      // The machine failed it (a full disk): queued again, this attempt counted, unless it was
      // the last one; a later claim resumes from the lines already written.
      if (job->attempt < o.max_attempts) machine_failed = e.what();
      error = e.what();
    } catch (const std::exception& e) {
      error = e.what();  // a job that cannot run is that job's failure, not the worker's end
    }
    g_job_interrupt = nullptr;
    if (store_lost) {
      release_claim(link, o, *job, evaluations.load());
      if (g_stop_requested) return stats;
      continue;
    }
    if (!machine_failed.empty()) {
      bool requeued = false;
      const std::string shown = fmt::format("attempt {} of {}, retried: {}", job->attempt,
                                            o.max_attempts, machine_failed);
      link.run(
          [&](store::FleetStore& fleet) {
            requeued = fleet.retry(job->id, job->attempt, evaluations.load(), shown);
          },
          o.lease_s);
      o.log(fmt::format("{}: job {} {}: {}", o.name, job->id, requeued ? "queued again" : "lost",
                        shown));
      ++stats.lost;
      if (o.once || g_stop_requested) return stats;
      sleep_unless_stopped(o.poll_s);  // a full disk is seldom freed within a millisecond
      continue;
    }
    // Waiting for the store longer than the lease is pointless: the job is free by then, and the
    // next claim resumes its session from the results file.
    bool finished = false;
    link.run(
        [&](store::FleetStore& fleet) {
          finished =
              fleet.finish(job->id, job->attempt, ok, now_ms(), evaluations.load(), result, error);
        },
        o.lease_s);
    if (finished) {
      ok ? ++stats.done : ++stats.failed;
      o.log(fmt::format("{}: job {} {}{}", o.name, job->id,
                        ok ? "done" : "failed: ", ok ? "" : error));
    } else {
      ++stats.lost;
    }
    if (o.once || g_stop_requested) return stats;
  }
}

}  // namespace ktune::fleet
