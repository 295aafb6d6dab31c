#pragma once
// --gemm-shapes inside the traced process: the tracer hooks the cuBLASLt the program loaded with
// cuBLASLt's logger callback (Trace level, one message per matmul, PyTorch's cuBLAS calls
// included), reads each message with the one parser of cuBLASLt's log lines, and stamps it with
// the calling thread and CUPTI's clock. The kernels that thread launches next are the call's, so
// the analysis gives every GEMM problem its GPU time. Nothing is written to a file: cuBLASLt's own
// output goes to /dev/null. Contract of the tracer: no call here throws or blocks the program for
// long (one mutex, held for the parse).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ktune/trace/cublaslt_log.hpp"
#include "ktune/trace/ktrace.hpp"

namespace ktune::trace {

class GemmCapture {
 public:
  // `capturing` (not owned) says whether records are being kept now: calls outside a capture
  // window are not counted. `now_ns` and `thread_id` give CUPTI's clock and the thread id CUPTI's
  // API records carry (the tracer's; tests give their own).
  GemmCapture(const std::atomic<bool>* capturing, std::uint64_t (*now_ns)(),
              std::uint32_t (*thread_id)());

  // Hooks the program's cuBLASLt, if one is loaded. True once hooked; cheap to call again (the
  // tracer calls it at start and as modules load, for a cuBLASLt loaded after cuInit).
  bool attach() noexcept;
  bool attached() const { return attached_.load(std::memory_order_relaxed); }

  // The calls since the last take, for the writer thread: one event per call.
  void take_events(std::vector<GemmEventRecord>& out);
  // Every problem and algorithm seen so far, in the order events refer to them, with the calls
  // counted since the last take_calls (a trace per capture window counts its own).
  std::vector<GemmCallRecord> take_calls();
  // One line for the end of the run when messages could not be read; "" when all were.
  std::string summary() const;

  // The logger's entry (any thread). Public for the callback trampoline and tests.
  void on_message(int level, const char* function, const char* message) noexcept;

 private:
  const std::atomic<bool>* capturing_;
  std::atomic<bool> attached_{false};
  mutable std::mutex mu_;
  CublasLtLogParser parser_;
  std::vector<std::uint64_t> counted_;  // per parser record, since the last take_calls
  std::vector<GemmEventRecord> events_;
  std::uint64_t (*now_ns_)();
  std::uint32_t (*thread_id_)();
  std::uint32_t pid_;
};

}  // namespace ktune::trace
