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
// Tensor-core work; the exact Hopper (GMMA) metric names are checked on the GPU by the counter tier
// and fixed here.
inline constexpr std::string_view kTensorPipePct =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
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

struct MetricSet {
  std::string_view name;         // "roofline", "memory", "stalls", "compute", "full"
  std::string_view description;  // one line for --help
  std::vector<std::string_view> metrics;
};

// Every named set, in the order --help lists them.
const std::vector<MetricSet>& metric_sets();
// A set's name or a comma-separated list of metric names -> the metrics to collect, deduplicated,
// in order. Throws ktune::Error naming the unknown set and the known ones.
std::vector<std::string> resolve_metrics(std::string_view set_or_list);

}  // namespace ktune::trace::metric
