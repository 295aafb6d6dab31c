#pragma once
// --gemm-shapes inside the traced process. `ktune profile --gemm-shapes` preloads the router
// (libktune_route.so), which sees every GEMM call where the program calls cuBLASLt or cuBLAS's
// legacy entry points (cublasSgemm_v2, cublasGemmEx, strided and batched forms) with its whole
// descriptor; the tracer registers an observer with it and stamps each call with the calling
// thread and CUPTI's clock. Where the router is not loaded (a program that drops LD_PRELOAD), the
// tracer falls back to cuBLASLt's logger callback (Trace level, one message per cuBLASLt matmul,
// read with the one parser of cuBLASLt's log lines), which misses the legacy calls. The kernels
// that thread launches next are the call's, so the analysis gives every GEMM problem its GPU time.
// Nothing is written to a file: cuBLASLt's own output goes to /dev/null. Contract of the tracer: no
// call here throws or blocks the program for long (one mutex, held for the parse).
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
  // Whether attach() may fall back to cuBLASLt's logger (false: the user configured it).
  void allow_logger(bool allowed) { logger_allowed_ = allowed; }
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
  // The router's entry (any thread), before the call launches its kernels.
  void on_call(const ktune_gemm_call& call) noexcept;
  // Whether calls come from the router (every entry point) rather than cuBLASLt's logger.
  bool from_router() const { return from_router_.load(std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* capturing_;
  std::atomic<bool> attached_{false};
  std::atomic<bool> from_router_{false};
  bool logger_allowed_ = true;
  void add(std::optional<std::size_t> (*read)(CublasLtLogParser&, const void*),
           const void* what) noexcept;
  mutable std::mutex mu_;
  CublasLtLogParser parser_;
  std::vector<std::uint64_t> counted_;  // per parser record, since the last take_calls
  std::vector<GemmEventRecord> events_;
  std::uint64_t (*now_ns_)();
  std::uint32_t (*thread_id_)();
  std::uint32_t pid_;
};

}  // namespace ktune::trace
