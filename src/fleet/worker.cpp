#include "ktune/fleet/worker.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/fleet/queue.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/fleet.hpp"
#include "ktune/tune/gemm_library.hpp"
#include "ktune/tune/gpu_evaluator.hpp"
#include "ktune/tune/isolated_evaluator.hpp"
#include "ktune/tune/session.hpp"

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
  tune::CandidateResult evaluate(const tune::ConfigMap& config, std::optional<double>) override {
    if (ms_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms_));
    std::uint64_t h = 14695981039346656037ull;
    for (const auto& [k, v] : config)
      for (unsigned char c : k + "=" + v.repr() + ";") h = (h ^ c) * 1099511628211ull;
    tune::CandidateResult r;
    r.status = tune::Status::ok;
    r.full = true;
    r.time_ns = 1000.0 + static_cast<double>(h % 9000);
    r.noise_ns = 1;
    r.samples = 10;
    r.detail = "fake evaluator (test only)";
    return r;
  }

 private:
  double ms_;
};

// Counts evaluations for the heartbeat (which reports them to `ktune queue ls`).
class CountingEvaluator : public tune::Evaluator {
 public:
  CountingEvaluator(tune::Evaluator& inner, std::atomic<std::int64_t>& count)
      : inner_(inner), count_(count) {}
  void prepare(const std::vector<tune::ConfigMap>& upcoming) override { inner_.prepare(upcoming); }
  std::size_t next_ready(const std::vector<tune::ConfigMap>& candidates) override {
    return inner_.next_ready(candidates);
  }
  tune::CandidateResult evaluate(const tune::ConfigMap& c, std::optional<double> best) override {
    auto r = inner_.evaluate(c, best);
    ++count_;
    return r;
  }

 private:
  tune::Evaluator& inner_;
  std::atomic<std::int64_t>& count_;
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
struct JobRun {
  tune::SessionSummary session;
  std::optional<store::CacheEntry> winner;
  std::optional<store::OpSpec> ops;  // the op's bucket policy, declared with its first winner
  std::optional<double> default_ns;  // a library job: cuBLASLt's own first choice
};

std::unique_ptr<tune::Evaluator> isolated_or_fake(const WorkerOptions& o,
                                                  tune::IsolatedEvaluator::Factory factory) {
  if (o.fake_evaluation_ms) return std::make_unique<FakeEvaluator>(*o.fake_evaluation_ms);
  return std::make_unique<tune::IsolatedEvaluator>(std::move(factory));
}

// A spec job: the spec's space at the job's shape, measured by the isolated GPU evaluator.
JobRun run_spec_job(const WorkerOptions& o, const store::FleetJob& job, tune::SessionOptions so,
                    const store::Environment& env, std::atomic<std::int64_t>& evaluations,
                    std::atomic<bool>& lost) {
  const tune::ProblemSpec spec = tune::ProblemSpec::load(job.spec);
  so.shape = job.shape.get<std::map<std::string, std::int64_t>>();
  auto inner = isolated_or_fake(o, [&spec, shape = so.shape, device = o.device] {
    bench::PipelineSettings settings;
    settings.full = bench::PipelineSettings::tuning_full();
    return std::make_unique<tune::GpuEvaluator>(spec, shape, settings, device);
  });
  CountingEvaluator counted(*inner, evaluations);
  JobRun run;
  {
    Heartbeat beat(o, job, evaluations, lost);
    run.session = tune::Session(spec, so, counted).run();
  }
  if (run.session.best) {
    run.winner = tune::winner_entry(spec, run.session, env, host_identity());
    run.ops = tune::op_spec(spec);
  }
  return run;
}

// A library job: cuBLASLt's candidates for the job's GEMM problem, as `ktune tune --library`
// searches them (the candidates recorded in the job's folder, so a resumed job chooses among the
// same set).
JobRun run_library_job(const WorkerOptions& o, const store::FleetJob& job, tune::SessionOptions so,
                       const store::Environment& env, std::atomic<std::int64_t>& evaluations,
                       std::atomic<bool>& lost) {
  if (job.library != "cublaslt")
    throw Error(fmt::format("job {} names library '{}', which this ktune does not search.", job.id,
                            job.library));
  const bench::GemmProblem problem = job.shape.get<bench::GemmProblem>();
  so.prefetch = 1;  // nothing compiles: propose as results come
  auto inner = isolated_or_fake(o, [problem, device = o.device] {
    return std::make_unique<tune::LibraryEvaluator>(problem, tune::LibrarySearchOptions{}, device);
  });
  CountingEvaluator counted(*inner, evaluations);
  JobRun run;
  {
    Heartbeat beat(o, job, evaluations, lost);
    const tune::LibraryCandidates candidates =
        tune::library_candidates(*inner, so.out_dir, so.resume);
    const tune::LibrarySpace space(candidates);
    run.session =
        tune::Session(tune::library_target(problem, candidates, space), so, counted).run();
    if (run.session.best) {
      run.winner =
          tune::library_winner_entry(problem, candidates, run.session, env, host_identity());
      if (const tune::SessionRecord* d = tune::library_default_record(candidates, run.session))
        run.default_ns = d->result.time_ns;
    }
  }
  return run;
}

std::string default_name(int device) {
  return fmt::format("{}:{}/gpu{}", host_identity().hostname, ::getpid(), device);
}

}  // namespace

store::Environment fake_environment() {
  return {"sm_90", "ktune fake device (test only)", "13.0", 0};
}

GpuProbe probe_gpu(int ordinal) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error("cannot create a pipe to probe the GPU.");
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot fork a process to probe the GPU.");
  if (pid == 0) {
    ::close(fds[0]);
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
    const std::string s = j.dump();
    [[maybe_unused]] auto n = ::write(fds[1], s.data(), s.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error("the GPU probe process died; run `ktune info` to see what the driver says.");
  if (j.contains("error")) throw NoGpuError(j["error"].get<std::string>());
  return {j["count"].get<int>(),
          {j["arch"], j["device_name"], j["toolkit"], j["driver_major"].get<int>()}};
}

WorkerStats run_worker(const WorkerOptions& in) {
  WorkerOptions o = in;
  if (!o.log) o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  if (o.name.empty()) o.name = default_name(o.device);
  if (o.work_dir.empty()) o.work_dir = data_dir() / "jobs";
  if (!(o.lease_s > 0)) throw Error("--lease must be a positive number of seconds.");
  const store::Environment env =
      o.fake_evaluation_ms ? fake_environment() : probe_gpu(o.device).environment;
  auto st = store::Store::open(o.db);
  store::FleetStore fleet(*st);
  WorkerStats stats;
  for (;;) {
    const auto job =
        fleet.claim(o.name, env.arch, env.toolkit, static_cast<std::int64_t>(o.lease_s * 1e3),
                    now_ms(), o.max_attempts);
    if (!job) {
      // Draining waits for jobs others hold: their worker may die and leave them to this one.
      if (o.once || (o.drain && fleet.pending_jobs() == 0)) return stats;
      std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
      continue;
    }
    o.log(fmt::format("{}: claimed job {} ({} {} bucket {}, attempt {})", o.name, job->id, job->op,
                      job->dtype, job->bucket, job->attempt));
    std::atomic<std::int64_t> evaluations{0};
    std::atomic<bool> lost{false};
    nlohmann::json result;
    std::string error;
    bool ok = false;
    try {
      tune::SessionOptions so;
      so.budget = static_cast<std::size_t>(job->budget);
      so.out_dir = o.work_dir / job->id;
      so.resume = fs::exists(tune::Session::results_path(so.out_dir));
      so.interrupt = &lost;
      const JobRun run = job->library.empty()
                             ? run_spec_job(o, *job, so, env, evaluations, lost)
                             : run_library_job(o, *job, so, env, evaluations, lost);
      evaluations = static_cast<std::int64_t>(run.session.evaluations);
      if (lost) {
        ++stats.lost;
        o.log(fmt::format("{}: lost the lease of job {}; another worker has it", o.name, job->id));
        continue;
      }
      if (run.winner) {
        if (run.ops && !st->get_op(run.ops->op)) st->put_op(*run.ops);
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
    } catch (const std::exception& e) {
      error = e.what();  // a job that cannot run is that job's failure, not the worker's end
    }
    if (fleet.finish(job->id, job->attempt, ok, now_ms(), evaluations.load(), result, error)) {
      ok ? ++stats.done : ++stats.failed;
      o.log(fmt::format("{}: job {} {}{}", o.name, job->id,
                        ok ? "done" : "failed: ", ok ? "" : error));
    } else {
      ++stats.lost;
    }
    if (o.once) return stats;
  }
}

}  // namespace ktune::fleet
