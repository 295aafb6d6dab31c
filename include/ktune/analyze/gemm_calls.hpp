#pragma once
// The GEMM calls a trace recorded (ktune profile --gemm-shapes) as a report shows them: one entry
// per problem with its algorithms merged, its dtype, and the `ktune tune --library cublaslt`
// command that tunes it, or why ktune cannot yet. Calls are counts only: cuBLASLt's log has no
// timestamps or correlation ids, so no kernel, and no GPU time, is tied to a call.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze {

struct GemmShape {
  // The problem; `calls` summed over its records, leading dimensions and algorithm fields those
  // of its most-called record.
  trace::GemmCallRecord problem;
  // "algo 66 tile 192x192 stages 64xAUTO split-K 3", one per distinct algorithm, most calls first.
  std::vector<std::string> algorithms;
  std::string dtype;         // "f16", "bf16", "f32", ...; "f16*f16->f32" when A, B and D differ
  std::string tune_command;  // "" when ktune cannot tune it
  std::string not_tunable;   // why not, when tune_command is "": "batched (batch 2)", ...
};

struct GemmCalls {
  bool recorded = false;  // the trace was taken with --gemm-shapes (or holds GEMM calls)
  std::uint64_t calls = 0;
  std::vector<GemmShape> shapes;  // most calls first, then most FLOP per call
};

// Groups `records` by problem (sizes, batch, types, compute and scale type, transposes,
// epilogue); leading dimensions and algorithms do not split a problem, as the cache keys a tuned
// GEMM by (op, dtype, m, n, k) alone.
GemmCalls group_gemm_calls(const std::vector<trace::GemmCallRecord>& records, bool recorded);

// The command that tunes `r`, accepted as is by `ktune tune --library cublaslt` (src/cli/
// cmd_tune.cpp: one GEMM D = A^T B (+ bias), f16 or bf16, fp32 compute); "" with `why_not` set
// for every other GEMM.
std::string gemm_tune_command(const trace::GemmCallRecord& r, std::string* why_not);

// cuBLASLt's names for a type as the cache names dtypes: "R_16F" -> "f16"; others unchanged.
std::string gemm_dtype_name(std::string_view cublaslt_type);

// Whether a kernel (as traced, demangled) is one cuBLASLt runs for a GEMM: nvjet*, sm<NN>_xmma*,
// CUTLASS kernels, the library's own (cublasLt::...), and the architecture-named GEMMs of earlier
// GPUs (ampere_*gemm*, volta_*gemm*, ...).
bool is_cublaslt_kernel(std::string_view name);

// 'N', 'T' or 'C' for cuBLASLt's OP_N, OP_T, OP_C; '?' for anything else.
char gemm_op_letter(const std::string& op);

}  // namespace ktune::analyze
