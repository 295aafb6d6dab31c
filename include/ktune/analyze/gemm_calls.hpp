#pragma once
// The GEMM calls a trace recorded (ktune profile --gemm-shapes) as a report shows them: one entry
// per problem with its algorithms merged, its dtype, the problem as the library search describes
// it (bench/gemm_problem.hpp) with the `ktune tune --library cublaslt` command that tunes it, or
// why there is none.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/bench/gemm_problem.hpp"
#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze {

class TraceSource;

struct GemmShape {
  // The problem; `calls` summed over its records, leading dimensions and algorithm fields those
  // of its most-called record.
  trace::GemmCallRecord problem;
  // "algo 66 tile 192x192 stages 64xAUTO split-K 3", one per distinct algorithm, most calls first.
  std::vector<std::string> algorithms;
  std::string dtype;  // "f16", "bf16", "tf32", ...; "f16*f16->f32" when A, B and D differ
  std::optional<bench::GemmProblem> tunable;  // the library search's problem, when it has one
  std::string tune_command;                   // "" when there is none
  std::string not_tunable;  // why not, when tune_command is "": "types i8*i8->i32 ...", ...
  // GPU time of the cuBLASLt kernels its calls launched, and how many calls that covers (a call
  // captured into a CUDA graph runs at replay, where no call launches it).
  std::int64_t gpu_ns = 0;
  std::uint64_t timed_calls = 0;
  // The kernels (display names) its calls launched, so a profiled kernel finds its problem.
  std::vector<std::string> kernels;
  // Where its calls came in ("cublasLtMatmul", "cublasSgemm_v2", ...) and what the router did with
  // them (calls by "passed", "routed", "kept", "trial"); empty for calls read from cuBLASLt's log.
  std::vector<std::string> entries;
  std::map<std::string, std::uint64_t> routes;
};

struct GemmCalls {
  bool recorded = false;  // the trace was taken with --gemm-shapes (or holds GEMM calls)
  bool timed = false;     // the trace has each call's time and thread (schema 4), so GPU time
  std::uint64_t calls = 0;
  std::int64_t gpu_ns = 0;  // over every shape
  std::uint64_t timed_calls = 0;
  std::vector<GemmShape> shapes;  // most GPU time first (by calls when not timed), then FLOP
};

// What the analysis tied to one gemm_calls row: its kernels' GPU time, over how many calls.
struct GemmTiming {
  std::int64_t gpu_ns = 0;
  std::uint64_t timed_calls = 0;
  std::vector<std::string> kernels;  // display names, each once
};

// Groups `records` by problem (sizes, batch, types, compute and scale type, transposes,
// epilogue, leading dimensions and batch strides, as the cache keys a tuned GEMM); algorithms, the
// entry point and the router's verdict do not split a problem.
// Ties cuBLASLt's GEMM calls (--gemm-shapes' events: thread and time of each call) to the kernels
// they launched, for the analysis and for the fleet's ingest alike. A launch call made on a thread
// after a GEMM call, and before that thread's next one, is the call's while it has launched fewer
// than four (a matmul and its split-K reduction); its kernel counts when cuBLAS named it
// (is_cublaslt_kernel) and it was not replayed from a CUDA graph. Feed every event first (in time
// order, as sources give them), then launch calls, then kernels.
class GemmTimer {
 public:
  void add_event(const trace::GemmEventRecord& e);
  bool empty() const { return events_.empty(); }
  // The event a launch call followed on its thread, or -1.
  std::int64_t on_launch(std::uint32_t process_id, std::uint32_t thread_id, std::uint64_t start_ns);
  // A kernel whose launch call on_launch() tied to `event` (>= 0).
  void on_kernel(std::int64_t event, const trace::KernelRecord& k, std::int64_t duration_ns);
  // The source's GEMM calls grouped by problem, with the GPU time tied to them.
  GemmCalls calls(TraceSource& source) const;

 private:
  struct ThreadKey {
    std::uint32_t pid, tid;
    bool operator<(const ThreadKey& o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
  };
  std::vector<trace::GemmEventRecord> events_;
  std::map<ThreadKey, std::vector<std::size_t>> threads_;
  std::vector<std::uint8_t> launches_;             // per event
  std::vector<bool> timed_;                        // per event
  std::vector<std::int64_t> gpu_ns_;               // per gemm_calls row
  std::vector<std::vector<std::string>> kernels_;  // per gemm_calls row, each name once
};

// `timing`, when given, holds one entry per record: the shapes get GPU time and rank by it.
GemmCalls group_gemm_calls(const std::vector<trace::GemmCallRecord>& records, bool recorded,
                           const std::vector<GemmTiming>* timing = nullptr);

// The library search's problem for a logged call (its layout, leading dimensions and strides as
// the program ran it), or nullopt with `why_not` saying what the search cannot run: types that
// differ or are not f16, bf16 and f32, a compute type or epilogue it does not know.
std::optional<bench::GemmProblem> gemm_problem_of(const trace::GemmCallRecord& r,
                                                  std::string* why_not);
// The command that tunes `r` (bench::gemm_tune_command), or "" with `why_not` set.
std::string gemm_tune_command(const trace::GemmCallRecord& r, std::string* why_not);

// The GEMM calls of a trace with their GPU time: the analysis's GEMM part alone (it reads the GEMM
// events, the launch calls and the kernels), for a reader that needs nothing else (ingest).
GemmCalls read_gemm_calls(TraceSource& source);

// Whether a kernel (as traced, demangled) is one cuBLASLt runs for a GEMM: nvjet*, sm<NN>_xmma*,
// CUTLASS kernels, the library's own (cublasLt::...), and the architecture-named GEMMs of earlier
// GPUs (ampere_*gemm*, volta_*gemm*, ...).
bool is_cublaslt_kernel(std::string_view name);

// 'N', 'T' or 'C' for cuBLASLt's OP_N, OP_T, OP_C; '?' for anything else.
char gemm_op_letter(const std::string& op);

}  // namespace ktune::analyze
