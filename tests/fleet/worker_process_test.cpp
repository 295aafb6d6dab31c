// Workers as a user runs them: `ktune worker` processes with the test-only fake evaluator
// (KTUNE_TEST_FAKE_EVALUATOR_MS) against both store backends. Leases of 1 s keep these fast.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../store/store_fixture.hpp"
#include "../store/tcp_proxy.hpp"
#include "fleet_test_util.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/fleet/queue.hpp"
#include "ktune/store/fleet.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::test {
namespace {

namespace fs = std::filesystem;

class WorkerProcessTest : public StoreTest {
 protected:
  // Starts `ktune worker` in the background; its output goes to dir()/NAME.log.
  // drain: exit when the queue is empty; else run until stopped. db: another URL of the store.
  pid_t start_worker(const std::string& name, double eval_ms, const std::string& extra = "",
                     bool drain = true, const std::string& db = "") {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string log = (dir() / (name + ".log")).string();
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(log.c_str(), "a", stderr);
      const std::string ms = std::to_string(eval_ms);
      ::setenv("KTUNE_TEST_FAKE_EVALUATOR_MS", ms.c_str(), 1);
      ::setenv("KTUNE_HOME", (dir() / "home").c_str(), 1);
      std::vector<std::string> args = {KTUNE_EXE,
                                       "--db",
                                       db.empty() ? url() : db,
                                       "worker",
                                       drain ? "--drain" : "--max-attempts=3",
                                       "--lease",
                                       "1",
                                       "--poll",
                                       "0.1",
                                       "--name",
                                       name,
                                       "--work-dir",
                                       (dir() / "work").string()};
      for (std::size_t at = 0; at < extra.size();) {  // space-separated flags
        const std::size_t end = std::min(extra.find(' ', at), extra.size());
        if (end > at) args.push_back(extra.substr(at, end - at));
        at = end + 1;
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(KTUNE_EXE, argv.data());
      ::_exit(127);
    }
    return pid;
  }
  int wait_exit(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::vector<std::string> queue_specs(int n, std::int64_t budget) {
    auto st = store::Store::open(url());
    store::FleetStore f(*st);
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      const auto spec = copy_spec(dir() / "specs", 1024 << i);
      const auto job = fleet::make_job({spec.string(), {}, "", "", budget, 0}, fleet::now_ms());
      EXPECT_EQ(f.add_job(job), store::FleetStore::AddOutcome::added);
      ids.push_back(job.id);
    }
    return ids;
  }
  // Every job done, and the cache holds exactly one entry per job, in its bucket.
  void expect_every_winner_once(const std::vector<std::string>& ids) {
    auto st = store::Store::open(url());
    store::FleetStore f(*st);
    const auto entries = st->list_entries({.op = "copy"});
    EXPECT_EQ(entries.size(), ids.size());
    std::map<std::string, int> per_bucket;
    for (const auto& e : entries) ++per_bucket[e.key.bucket];
    for (const auto& id : ids) {
      const auto j = f.job(id);
      ASSERT_TRUE(j);
      EXPECT_EQ(j->state, "done") << id << ": " << j->error;
      EXPECT_EQ(per_bucket[j->bucket], 1) << j->bucket;
    }
  }
  // Waits until job `id` runs and reports at least `n` evaluations (its heartbeat does).
  void wait_for_evaluations(const std::string& id, std::int64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      const auto j = store::FleetStore(*store::Store::open(url())).job(id);
      if (j && j->state == "running" && j->evaluations >= n) return;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no worker reported progress";
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  }
};

TEST_P(WorkerProcessTest, TwoWorkersDrainTheQueueAndEveryWinnerIsCachedOnce) {
  const auto ids = queue_specs(6, 4);
  const pid_t a = start_worker("a", 20), b = start_worker("b", 20);
  EXPECT_EQ(wait_exit(a), 0);
  EXPECT_EQ(wait_exit(b), 0);
  expect_every_winner_once(ids);
  // Both took a share: claims skip each other's rows rather than queueing behind them.
  std::map<std::string, int> by_worker;
  for (const auto& j : store::FleetStore(*store::Store::open(url())).jobs()) ++by_worker[j.worker];
  EXPECT_EQ(by_worker.size(), 2u);
}

// `worker --all-devices` forks one worker per GPU (two fake ones here): both drain the queue, each
// under its own name, and the parent exits when both have.
TEST_P(WorkerProcessTest, AllDevicesRunsOneWorkerPerGpu) {
  const auto ids = queue_specs(6, 4);
  const pid_t parent = start_worker("all", 20, "--all-devices --fake-devices 2");
  EXPECT_EQ(wait_exit(parent), 0);
  expect_every_winner_once(ids);
  std::set<std::string> workers;
  for (const auto& j : store::FleetStore(*store::Store::open(url())).jobs())
    workers.insert(j.worker);
  EXPECT_EQ(workers, (std::set<std::string>{"all/gpu0", "all/gpu1"}));
}

// Library jobs (from-backlog's GEMM problems) are drained like spec jobs: a session over the
// library's candidates (the fake evaluator's, here), its winner cached under the problem's key.
// Inductor's kernels as jobs: each carries its module's text; tests/fixtures/inductor/
// fake_serve.py plays the measuring program (KTUNE_PYTHON), reporting the PyTorch and Triton
// versions FAKE_TORCH / FAKE_TRITON name.
TEST_P(WorkerProcessTest, InductorJobsCarryTheirModuleAndWaitForAWorkerOfTheirVersions) {
  const fs::path fixtures = fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/inductor";
  nlohmann::json scan = nlohmann::json::parse(std::ifstream(fixtures / "scan.json"));
  // The scan's modules as this machine has them (the fixture names the H200's paths).
  for (auto& k : scan["kernels"]) {
    const fs::path p = k["path"].get<std::string>();
    k["path"] = (fixtures / "cache" / p.parent_path().filename() / p.filename()).string();
  }
  std::vector<std::string> skipped;
  const auto requests = fleet::inductor_requests(analyze::parse_inductor_scan(scan, "scan.json"),
                                                 {}, "", "", 20, false, skipped);
  ASSERT_EQ(requests.size(), 3u);  // the template is not tunable
  EXPECT_TRUE(skipped.empty());
  std::vector<std::string> ids;
  {
    auto st = store::Store::open(url());
    store::FleetStore f(*st);
    for (const auto& r : requests) {
      const auto job = fleet::make_job(r, fleet::now_ms());
      EXPECT_EQ(job.library, "inductor");
      EXPECT_EQ(job.op, "inductor:" + r.inductor->at("lookup_hash").get<std::string>());
      ASSERT_EQ(f.add_job(job), store::FleetStore::AddOutcome::added);
      ids.push_back(job.id);
    }
    // What travels is the module's text, not its path.
    const auto stored = f.job(ids[0]);
    ASSERT_TRUE(stored);
    EXPECT_NE(stored->shape.at("source").get<std::string>().find("@triton.jit"), std::string::npos);
  }
  ::setenv("KTUNE_PYTHON", (fixtures / "fake_serve.py").c_str(), 1);
  ::setenv("FAKE_TORCH", "2.10.0+cu128", 1);  // a worker whose Python has another PyTorch
  EXPECT_EQ(wait_exit(start_worker("old-torch", 1)), 0);
  ::unsetenv("FAKE_TORCH");
  std::ifstream log(dir() / "old-torch.log");
  const std::string said((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(said.find("refused: triton_poi_fused__unsafe_view_clone_permute_select_view_1 was "
                      "generated by PyTorch 2.11.0+cu130"),
            std::string::npos)
      << said;
  {
    auto st = store::Store::open(url());
    store::FleetStore f(*st);
    for (const auto& id : ids) EXPECT_EQ(f.job(id)->state, "queued") << id;  // left for others
    EXPECT_TRUE(st->list_entries({}).empty());
  }
  EXPECT_EQ(wait_exit(start_worker("same-torch", 1)), 0);
  ::unsetenv("KTUNE_PYTHON");
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  for (const auto& id : ids) {
    const auto j = f.job(id);
    EXPECT_EQ(j->state, "done") << j->error;
    EXPECT_EQ(j->attempt, 1);  // the refusals gave their claims back uncounted
    EXPECT_EQ(j->result.at("default_median_ns"), 1768.0) << j->result;
  }
  const auto entries = st->list_entries({});
  ASSERT_EQ(entries.size(), 3u);
  for (const auto& e : entries) {
    EXPECT_EQ(e.key.op.rfind("inductor:", 0), 0u) << e.key.op;
    EXPECT_EQ(e.key.toolkit, "13.0+triton-3.6.0+torch-2.11.0+cu130");
    EXPECT_EQ(e.config, nlohmann::json::parse(R"({"XBLOCK": 256, "num_warps": 4,
                                                  "num_stages": 1})"));
  }
}

TEST_P(WorkerProcessTest, LibraryJobsAreDrainedIntoTheCacheUnderTheProblemsKey) {
  std::vector<std::string> ids;
  {
    auto st = store::Store::open(url());
    store::FleetStore f(*st);
    for (std::int64_t m : {256, 512}) {
      fleet::JobRequest req;
      req.gemm = bench::GemmProblem{
          .trans_a = true, .m = m, .n = 64, .k = 128, .batch = 4, .dtype = DType::bf16};
      req.budget = 12;
      const auto job = fleet::make_job(req, fleet::now_ms());
      ASSERT_EQ(f.add_job(job), store::FleetStore::AddOutcome::added);
      ids.push_back(job.id);
    }
  }
  EXPECT_EQ(wait_exit(start_worker("w1", 1)), 0);
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  for (const auto& id : ids) {
    const auto j = f.job(id);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->state, "done") << j->error;
    EXPECT_EQ(j->evaluations, 12);
    EXPECT_TRUE(j->result.contains("default_median_ns")) << j->result;
  }
  const auto entries = st->list_entries({.op = "gemm_tn"});
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) {
    EXPECT_EQ(e.key.dtype, "bf16");
    EXPECT_EQ(e.shape.size(), 4u);
    EXPECT_EQ(e.config["library"], "cublaslt");
    EXPECT_EQ(e.config["layout"], "TN");
  }
}

TEST_P(WorkerProcessTest, WorkerKilledMidJobLosesNothing) {
  const auto ids = queue_specs(1, 12);
  const pid_t a = start_worker("a", 60);
  // Kill it with SIGKILL once it has finished a few evaluations (its heartbeat reports them).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    const auto j = store::FleetStore(*store::Store::open(url())).job(ids[0]);
    if (j && j->evaluations >= 2) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "worker a never reported progress";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(a, SIGKILL);
  EXPECT_EQ(wait_exit(a), 128 + SIGKILL);
  const pid_t b = start_worker("b", 10);  // waits out a's lease, then resumes its session
  EXPECT_EQ(wait_exit(b), 0);
  expect_every_winner_once(ids);
  const auto j = store::FleetStore(*store::Store::open(url())).job(ids[0]);
  EXPECT_EQ(j->worker, "b");
  EXPECT_EQ(j->attempt, 2);
  EXPECT_GE(j->result.value("resumed", 0), 1);  // a's finished evaluations were kept
  // Each of the budget's evaluations ran once: none lost, none repeated.
  const auto records = tune::read_results(tune::Session::results_path(dir() / "work" / ids[0]));
  EXPECT_EQ(records.size(), 12u);
}

// Issue 44: a worker frozen past its lease kept appending to the job's results after another took
// the job over: 31-32 records for a budget of 30, configurations repeated. Its late lines are
// fenced off by the later claim, and it leaves the folder's outputs to the claim that finished.
TEST_P(WorkerProcessTest, AWorkerFrozenPastItsLeaseAddsNothingToTheJob) {
  const auto ids = queue_specs(1, 30);
  const pid_t a = start_worker("a", 150);
  ASSERT_NO_FATAL_FAILURE(wait_for_evaluations(ids[0], 2));
  ::kill(a, SIGSTOP);
  const pid_t b = start_worker("b", 5);  // waits out a's lease, resumes, finishes
  EXPECT_EQ(wait_exit(b), 0);
  const auto summary = dir() / "work" / ids[0] / "summary.json";
  const auto written = fs::last_write_time(summary);
  ::kill(a, SIGCONT);
  EXPECT_EQ(wait_exit(a), 0);
  expect_every_winner_once(ids);
  const auto j = store::FleetStore(*store::Store::open(url())).job(ids[0]);
  EXPECT_EQ(j->worker, "b");
  EXPECT_EQ(j->evaluations, 30);
  const auto records = tune::read_results(tune::Session::results_path(dir() / "work" / ids[0]));
  EXPECT_EQ(records.size(), 30u);
  std::set<std::string> configs;
  for (const auto& r : records) configs.insert(nlohmann::json(r.config).dump());
  EXPECT_EQ(configs.size(), 30u);  // none repeated
  EXPECT_EQ(fs::last_write_time(summary), written);
}

// Issue 44: a brief disk-full in a worker's folder failed a healthy job for good on its first
// attempt, and nothing could queue it again. The machine's failure costs an attempt (the job is
// retried, and failed only after the last), and asking again for a failed job queues it again.
TEST_P(WorkerProcessTest, AJobTheMachineFailedIsRetriedThenQueuedAgainOnRequest) {
  const auto ids = queue_specs(1, 6);
  fs::create_directories(dir() / "work");
  std::ofstream(dir() / "work" / ids[0]) << "not a folder: every claim fails to write there\n";
  const pid_t a = start_worker("a", 1);
  EXPECT_EQ(wait_exit(a), 1);  // a worker that failed a job says so
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  auto j = f.job(ids[0]);
  EXPECT_EQ(j->state, "failed");
  EXPECT_EQ(j->attempt, 3);  // retried twice before the last attempt failed it
  EXPECT_NE(j->error.find("cannot create the output directory"), std::string::npos) << j->error;
  std::ifstream log(dir() / "a.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("queued again: attempt 1 of 3, retried: cannot create"), std::string::npos)
      << text;
  fs::remove(dir() / "work" / ids[0]);
  // Queued again by asking again (ktune queue add), not by from-backlog's automatic adds.
  const store::FleetJob again = fleet::make_job({j->spec, {}, "", "", 6, 0}, fleet::now_ms());
  EXPECT_EQ(f.add_job(again), store::FleetStore::AddOutcome::exists);
  EXPECT_EQ(f.add_job(again, /*retry_failed=*/true), store::FleetStore::AddOutcome::requeued);
  j = f.job(ids[0]);
  EXPECT_EQ(j->state, "queued");
  EXPECT_EQ(j->attempt, 0);
  EXPECT_EQ(j->error, "");
  const pid_t b = start_worker("b", 1);
  EXPECT_EQ(wait_exit(b), 0);
  expect_every_winner_once(ids);
}

// Three ordinary stops (SIGTERM) of workers mid-job marked a healthy job failed for good: a
// graceful stop did not give the claim back, so each restart burnt an attempt. And `queue ls`
// counted only the last claim's evaluations (26 of 200 while the results file held 87).
TEST_P(WorkerProcessTest, GracefulStopsGiveTheClaimBackAndCountEveryEvaluation) {
  const auto ids = queue_specs(1, 40);
  const auto results = tune::Session::results_path(dir() / "work" / ids[0]);
  std::int64_t recorded = 0;
  for (int restart = 1; restart <= 3; ++restart) {
    const pid_t w = start_worker("w" + std::to_string(restart), 60);
    ASSERT_NO_FATAL_FAILURE(wait_for_evaluations(ids[0], recorded + 2));
    ::kill(w, SIGTERM);
    EXPECT_EQ(wait_exit(w), 0);
    const auto j = store::FleetStore(*store::Store::open(url())).job(ids[0]);
    EXPECT_EQ(j->state, "queued") << restart;
    EXPECT_EQ(j->attempt, 0) << restart;
    recorded = static_cast<std::int64_t>(tune::read_results(results).size());
    EXPECT_EQ(j->evaluations, recorded) << restart;
  }
  EXPECT_LT(recorded, 40);
  const pid_t last = start_worker("last", 5);
  EXPECT_EQ(wait_exit(last), 0);
  expect_every_winner_once(ids);
  const auto j = store::FleetStore(*store::Store::open(url())).job(ids[0]);
  EXPECT_EQ(j->attempt, 1);
  EXPECT_EQ(j->evaluations, 40);
  EXPECT_EQ(tune::read_results(results).size(), 40u);  // none lost, none repeated
}

// An idle worker exited for good when PostgreSQL restarted (33 ms after the server stopped), so
// jobs queued after the server was back stayed queued. The proxy stands for the server: it drops
// every connection and refuses new ones, then accepts again, as a restart looks to a client.
TEST_P(WorkerProcessTest, AWorkerWaitsOutAServerRestart) {
  if (GetParam() == BackendKind::sqlite) GTEST_SKIP() << "a server's restart";
  store::Store::open(url());  // the schema exists before the worker connects through the proxy
  const auto [host, port] = pg_host_port(url());
  TcpProxy proxy(host, port);
  const pid_t w = start_worker("w", 5, "", /*drain=*/false, proxy.url_through(url()));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  proxy.down();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  const auto ids = queue_specs(1, 4);
  proxy.up();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const auto j = store::FleetStore(*store::Store::open(url())).job(ids[0]);
    if (j->state == "done") break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(w, SIGKILL);
      wait_exit(w);
      std::ifstream log(dir() / "w.log");
      FAIL() << "the job queued after the restart was not run; state " << j->state
             << "; the worker's log:\n"
             << std::string(std::istreambuf_iterator<char>(log), {});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(w, SIGTERM);  // an idle worker stops at once, with exit status 0
  EXPECT_EQ(wait_exit(w), 0);
  expect_every_winner_once(ids);
}

KTUNE_BOTH_BACKENDS(WorkerProcessTest);

}  // namespace
}  // namespace ktune::test
