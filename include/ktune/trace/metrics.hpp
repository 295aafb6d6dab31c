#pragma once
// The counter tier's metric sets (`ktune profile --metrics SET|LIST`). Names are Perfworks metric
// names, spelled as Nsight Compute spells them, so every value can be checked against `ncu` on the
// same launch. The analysis (analyze/counters) reads values only through these constants.
#include <string>
#include <string_view>
#include <vector>

namespace ktune::trace::metric {

// --- roofline ---
inline constexpr std::string_view kDuration = "gpu__time_duration.sum";  // ns
inline constexpr std::string_view kSmThroughputPct =
    "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kMemoryThroughputPct =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kDramThroughputPct =
    "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kDramBytesRead = "dram__bytes_read.sum";
inline constexpr std::string_view kDramBytesWrite = "dram__bytes_write.sum";
// Thread-level executed instructions by precision; an FMA counts 2 FLOP.
inline constexpr std::string_view kFp32Fma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr std::string_view kFp32Add = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr std::string_view kFp32Mul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr std::string_view kFp64Fma = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum";
inline constexpr std::string_view kFp64Add = "sm__sass_thread_inst_executed_op_dadd_pred_on.sum";
inline constexpr std::string_view kFp64Mul = "sm__sass_thread_inst_executed_op_dmul_pred_on.sum";
inline constexpr std::string_view kFp16Fma = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum";
inline constexpr std::string_view kFp16Add = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum";
inline constexpr std::string_view kFp16Mul = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum";
// Tensor-core work. The roofline set counts Hopper's warpgroup MMA (GMMA: cuBLASLt's nvjet and
// CUTLASS 3 kernels) by precision, cheaply (they fitted in the set's two replay passes before the
// speed-of-light pair joined it; on H100 the GMMA fp16 count of a cuBLASLt GEMM equals 2*M*N*K:
// these "math ops" are FLOP).
// Warp-level HMMA (mma.sync) is not in those counters: a kernel whose tensor pipe is busy
// (kTensorPipePct) with no GMMA ops uses it, and its FLOP come from the all-paths counters of the
// `compute` set (FLOP too: 2*M*N*K on WMMA GEMMs, logs/2026-11-26-gpu-mma-flop-h100.md), else
// from the pipe's activity (analyze/counters).
inline constexpr std::string_view kTensorGmmaFp16Ops = "sm__ops_path_tensor_op_hgmma_src_fp16.sum";
inline constexpr std::string_view kTensorGmmaBf16Ops =
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum";
// Warp instructions on the tensor pipe (HMMA, HGMMA and QGMMA alike).
inline constexpr std::string_view kTensorInst = "sm__inst_executed_pipe_tensor_op_hmma.sum";
inline constexpr std::string_view kTensorFp16Ops = "sm__ops_path_tensor_src_fp16.sum";
inline constexpr std::string_view kTensorBf16Ops = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
inline constexpr std::string_view kTensorTf32Ops = "sm__ops_path_tensor_src_tf32_dst_fp32.sum";
inline constexpr std::string_view kTensorFp8Ops = "sm__ops_path_tensor_src_fp8.sum";
// Tensor pipe busy (HMMA, HGMMA and QGMMA on Hopper).
inline constexpr std::string_view kTensorPipePct =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
// Instruction issue busy, over the SMs' active cycles (the stalls set's view of the SM; a profile
// without kSmThroughputPct is judged by it).
inline constexpr std::string_view kIssueActivePct =
    "smsp__issue_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kAchievedOccupancyPct =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kSmClockHz = "sm__cycles_elapsed.avg.per_second";

// --- memory (read by analyze/counters for the locality and spill verdicts) ---
inline constexpr std::string_view kL2HitRatePct = "lts__t_sector_hit_rate.pct";
// 32-byte sectors of local memory (register spills, local arrays) loaded and stored through L1.
inline constexpr std::string_view kLocalLoadSectors =
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum";
inline constexpr std::string_view kLocalStoreSectors =
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum";
// The rest of the memory set.
inline constexpr std::string_view kL1HitRatePct = "l1tex__t_sector_hit_rate.pct";
inline constexpr std::string_view kDramSectorsRead = "dram__sectors_read.sum";  // L2 <- DRAM
inline constexpr std::string_view kDramSectorsWrite = "dram__sectors_write.sum";
inline constexpr std::string_view kL2SectorsFromL1Read = "lts__t_sectors_srcunit_tex_op_read.sum";
inline constexpr std::string_view kL2SectorsFromL1Write = "lts__t_sectors_srcunit_tex_op_write.sum";
inline constexpr std::string_view kSharedBankConflictsLoad =
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
inline constexpr std::string_view kSharedBankConflictsStore =
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
inline constexpr std::string_view kSharedWavefronts =
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";

// --- stalls: warps stalled per issued instruction, by reason (Nsight Compute's warp-state
// section); the names are kStallPrefix + reason + kStallSuffix.
inline constexpr std::string_view kStallPrefix = "smsp__average_warps_issue_stalled_";
inline constexpr std::string_view kStallSuffix = "_per_issue_active.ratio";
inline constexpr std::string_view kStallReasons[] = {"long_scoreboard",
                                                     "short_scoreboard",
                                                     "barrier",
                                                     "mio_throttle",
                                                     "math_pipe_throttle",
                                                     "wait",
                                                     "not_selected",
                                                     "selected",
                                                     "lg_throttle",
                                                     "membar",
                                                     "no_instruction",
                                                     "dispatch_stall",
                                                     "gmma",
                                                     "branch_resolving",
                                                     "drain",
                                                     "sleeping",
                                                     "tex_throttle",
                                                     "imc_miss",
                                                     "misc"};

// --- compute: pipe utilisation ---
inline constexpr std::string_view kFmaPipePct =
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kAluPipePct =
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kFp64PipePct =
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kTensorAnyPipePct =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kLsuPipePct =
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active";

struct MetricSet {
  std::string_view name;         // "triage", "roofline", "memory", "stalls", "compute", "full"
  std::string_view description;  // one line for --help
  std::vector<std::string_view> metrics;
};

// Every named set, in the order --help lists them.
const std::vector<MetricSet>& metric_sets();
// A set's name or a comma-separated list of set and metric names -> the metrics to collect,
// deduplicated, in order. A metric name is anything with Perfworks' "unit__counter" shape (the
// profiler checks it against the GPU's list when it builds the configuration). Throws
// ktune::Error naming the unknown set and the known ones.
std::vector<std::string> resolve_metrics(std::string_view set_or_list);

}  // namespace ktune::trace::metric
