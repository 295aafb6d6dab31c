// ktune worker [--device N | --all-devices]: drains the tuning queue on this machine's GPUs, one
// worker process per GPU with --all-devices.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "command.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/fleet/worker.hpp"

namespace ktune::cli {
namespace {

struct WorkerArgs {
  fleet::WorkerOptions o;
  bool all_devices = false;
  int devices = 0;  // --all-devices with the fake evaluator: how many fake GPUs
  double fake_ms = -1;
};

int run_one(fleet::WorkerOptions o) {
  const auto stats = fleet::run_worker(o);
  fmt::print("{}: {} done, {} failed, {} lost\n", o.name.empty() ? "worker" : o.name, stats.done,
             stats.failed, stats.lost);
  return stats.failed > 0 ? 1 : 0;
}

// The per-GPU workers of --all-devices, for the parent's SIGTERM to reach: each gives its claim
// back and exits (a terminal's Ctrl-C reaches them already, through the process group).
std::vector<pid_t> g_children;
extern "C" void forward_stop(int sig) {
  for (pid_t pid : g_children) ::kill(pid, sig);
}

int run_worker_cmd(WorkerArgs a, const GlobalOptions& g) {
  a.o.db = g.db;
  if (a.fake_ms >= 0) a.o.fake_evaluation_ms = a.fake_ms;
  if (!a.all_devices) {
    a.o.device = g.device;
    return run_one(a.o);
  }
  // One process per GPU: each has its own CUDA context and evaluator child. The count comes from a
  // probe process, so this one never initialises CUDA before forking.
  const int n = a.o.fake_evaluation_ms ? std::max(1, a.devices) : fleet::probe_gpu(0).device_count;
  std::vector<subprocess::Child> children;
  subprocess::Spawn spawn;
  spawn.own_group = false;  // a terminal's Ctrl-C reaches every worker
  spawn.die_with_ktune = false;
  for (int d = 0; d < n; ++d)
    children.push_back(subprocess::Child::fork(
        [&a, d] {
          fleet::WorkerOptions o = a.o;
          o.device = d;
          if (!o.name.empty()) o.name += fmt::format("/gpu{}", d);  // one name per GPU's worker
          try {
            return run_one(o);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "ktune worker (GPU %d): %s\n", d, e.what());
            return 1;
          }
        },
        spawn));
  for (const auto& c : children) g_children.push_back(c.pid());  // before the handler can see it
  struct sigaction sa = {};
  sa.sa_handler = forward_stop;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  int worst = 0;
  for (auto& c : children) {
    const int status = c.wait();
    worst = std::max(worst, WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  return worst;
}

const bool registered = register_command(
    {"worker", "Claim tuning jobs from the queue, tune them, write winners to the cache", 56,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<WorkerArgs>();
       app.add_flag("--all-devices", a->all_devices, "One worker process per GPU");
       app.add_flag("--once", a->o.once, "Take one job, then exit");
       app.add_flag("--drain", a->o.drain,
                    "Exit when no job is queued or running (waits out other workers' leases)");
       app.add_option("--lease", a->o.lease_s,
                      "Seconds a claim lives without a heartbeat (default 30); a dead worker's job "
                      "is taken again after it");
       app.add_option("--poll", a->o.poll_s, "Seconds between claims when idle (default 2)");
       app.add_option("--max-attempts", a->o.max_attempts,
                      "Claims of one job before it is marked failed (default 3)");
       app.add_option("--work-dir", a->o.work_dir,
                      "Where job sessions are kept (default: the data folder's jobs/); workers "
                      "sharing it resume each other's sessions");
       app.add_option("--name", a->o.name,
                      "Worker name in ktune queue ls (default host:pid/gpuN; with --all-devices, "
                      "NAME/gpuN)");
       app.add_option("--compile-threads", a->o.compile_threads,
                      "NVRTC threads for a job (default: this machine's hardware threads divided "
                      "by its GPUs, so one worker per GPU shares the cores)");
       // Test only: documented in docs/fleet.md and docs/configuration.md, hidden from --help.
       app.add_option("--fake-evaluator-ms", a->fake_ms)
           ->envname("KTUNE_TEST_FAKE_EVALUATOR_MS")
           ->group("");
       app.add_option("--fake-devices", a->devices)->group("");
       return [a, &globals] { return run_worker_cmd(*a, globals); };
     }});

}  // namespace
}  // namespace ktune::cli
