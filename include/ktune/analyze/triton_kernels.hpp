#pragma once
// The Triton kernels torch.compile's Inductor generated for a profiled program, as `ktune
// profile` recorded them (`python3 -m ktune.inductor scan`, kept beside the trace as
// OUT.inductor.json): each kernel's ops, kind, launch shape (numels), source hash and module path,
// tied by name to the GPU time the trace measured.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune::analyze {

struct Analysis;

inline constexpr int kInductorScanSchemaVersion = 1;

struct TritonKernel {
  std::string name;  // the kernel's function name, as CUPTI records its launches
  std::string kind;  // pointwise | reduction | persistent_reduction | template | ...
  std::string lookup_hash, source_hash, path, dtype;
  std::vector<std::pair<std::string, std::int64_t>> numels;  // xnumel, ..., r0_numel
  std::vector<std::string> ops;                              // the ATen ops it fuses
  std::vector<std::string> stack_traces;                     // source lines, when Inductor kept any
  bool tunable = false;
  std::string why_not;  // one sentence when not tunable
  // From the trace: its launches and GPU time (0 when the trace saw none), and its row in the
  // report's kernels (nullopt when none).
  std::size_t launches = 0;
  std::int64_t gpu_ns = 0;
  std::optional<std::size_t> kernel_row;
};

struct TritonKernels {
  bool recorded = false;  // a scan was found for the trace
  std::filesystem::path file;
  std::string torch, triton;
  std::vector<TritonKernel> kernels;  // most GPU time first, then by name
};

// Reads a scan (its shape: docs/inductor.md); ktune::Error naming `where` and the field.
TritonKernels parse_inductor_scan(const nlohmann::json& scan, const std::string& where);

// The scan ktune profile kept for `trace`: OUT.inductor.json for OUT.ktrace, also for the traces
// of its child processes and windows (OUT.<pid>.ktrace, OUT.wK.ktrace); nullopt when there is none.
std::optional<std::filesystem::path> inductor_scan_for(const std::filesystem::path& trace);

// Ties each scanned kernel to the analysis's kernel of the same name (launches, GPU time, row)
// and keeps them in a.triton, most GPU time first.
void attach_triton_kernels(Analysis& a, TritonKernels scan);

// "xnumel=32768 r0_numel=128"
std::string numels_text(const TritonKernel& k);
// The command that tunes it: ktune tune --inductor-kernel PATH ("" when not tunable).
std::string inductor_tune_command(const TritonKernel& k);

}  // namespace ktune::analyze
