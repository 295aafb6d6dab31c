#pragma once
// Compiles kernel launches with NVRTC on worker threads, each distinct compile input once, for the
// candidate pipeline. Host only: no GPU is needed to compile.
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ktune/bench/problem.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::bench {

// A compilation's outcome, produced on a worker thread.
struct Compiled {
  std::optional<cuda::CompiledProgram> program;
  std::string error;      // one sentence plus the first lines of NVRTC's log
  bool resource = false;  // the compiler hit a hardware limit (static shared memory, ...)
  double compile_s = 0;   // 0 when the binary came from the disk cache
};

// Compiles `launch` on this thread (or takes it from the disk cache); never throws for the
// kernel's own errors, which come back in Compiled::error.
Compiled compile_now(const KernelLaunch& launch, const std::string& arch);

// Results wait until taken; a launch asked for before it was queued is compiled on the caller's
// thread.
class CompilePool {
 public:
  CompilePool(std::string arch, unsigned threads);
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  void enqueue(const KernelLaunch& launch);
  Compiled take(const KernelLaunch& launch);
  // The position in `launches` of one whose compilation has finished, waiting until one has. One
  // that was never queued counts as ready (take() compiles it at once); so does the first, when
  // nothing would ever finish (no worker threads). A session measures candidates in this order,
  // so that a slow compile does not hold up the binaries that are ready behind it.
  std::size_t first_done(const std::vector<KernelLaunch>& launches);

 private:
  struct Job {
    KernelLaunch launch;
    std::optional<Compiled> result;
    int wanted = 0;
  };
  std::string key_of(const KernelLaunch& l) const;
  void work();
  std::string arch_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::deque<std::string> queue_;
  std::map<std::string, Job> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ktune::bench
