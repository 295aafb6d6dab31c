#pragma once
// A tuning worker: claims a job from the queue, holds its lease by heartbeats from a second
// connection, runs a tuning session (tune::Session over the isolated GPU evaluator), and writes
// the winner to the shared cache. A worker that dies leaves its lease to expire; the next claim
// resumes the session from the job's results.jsonl when it shares the work folder, so a killed
// worker loses no finished evaluation, and the cache key keeps one winner per job.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "ktune/store/cache_entry.hpp"

namespace ktune::fleet {

struct WorkerOptions {
  std::string db;                  // store URL (Store::open)
  std::string name;                // shown in `ktune queue ls`; default host:pid[/gpuN]
  int device = 0;                  // CUDA ordinal
  double lease_s = 30;             // a claim lives this long without a heartbeat
  double heartbeat_s = 0;          // 0: lease_s / 3, at most 2 s (queue ls shows progress)
  double poll_s = 2;               // wait between claims when the queue has nothing for this worker
  bool once = false;               // one job, then return
  bool drain = false;              // return when no job is queued or running (anyone's)
  int max_attempts = 3;            // claims of one job before it is marked failed
  std::filesystem::path work_dir;  // job sessions go to work_dir/<job id>; default data_dir()/jobs
  // NVRTC threads of a spec job. 0: this machine's hardware threads divided by its GPUs, so the
  // workers of a machine (one per GPU) share its cores rather than each taking all of them.
  unsigned compile_threads = 0;
  // TEST ONLY (KTUNE_TEST_FAKE_EVALUATOR): measure nothing, give each configuration a time made
  // from its values, taking this many ms per evaluation. No GPU is touched.
  std::optional<double> fake_evaluation_ms;
  std::function<void(const std::string&)> log;  // one line per event; default: stderr
};

struct WorkerStats {
  std::int64_t done = 0, failed = 0, lost = 0;
  std::int64_t refused = 0;  // jobs of other PyTorch or Triton versions, left to other workers
};

// Runs until `once`/`drain` says stop (else for ever). ktune::Error when the store cannot be
// opened or (real evaluator) no GPU is there.
WorkerStats run_worker(const WorkerOptions& options);

// A worker's share of this machine's hardware threads when each of its `gpus` GPUs has one
// (at least one thread).
unsigned compile_share(int gpus);

// This machine's GPUs and environment, read in a short-lived child process so that the caller
// (which forks workers and evaluators) never initialises CUDA itself. NoGpuError without a GPU.
struct GpuProbe {
  int device_count = 0;
  store::Environment environment;  // of the probed ordinal
};
GpuProbe probe_gpu(int ordinal);

// The environment the fake evaluator reports as its GPU.
store::Environment fake_environment();

}  // namespace ktune::fleet
