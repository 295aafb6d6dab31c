#pragma once
// Advice at the level a PyTorch user works at: the program, not a kernel's code. Fed the kernels in
// start order with the op that launched each (ktune profile --ops, or a torch.profiler trace), it
// finds the patterns a change of the program removes, each with the evidence that raised it:
// - casts: aten::copy_ / aten::_to_copy / aten::to owning a real share of GPU time;
// - elementwise chains: runs of at least 3 elementwise kernels back to back on one stream, which
//   torch.compile fuses into one kernel;
// - attention written out: a GEMM, a softmax and a GEMM in a row on one stream (elementwise
//   scaling or masking between), which scaled_dot_product_attention runs as one fused kernel;
// - small GEMMs: many short launches of one GEMM kernel with one launch shape, which batch.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/analyze/launch_shape.hpp"
#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze {

enum class ProgramPattern { casts, elementwise_chain, attention, small_gemms };
const char* to_string(ProgramPattern p);  // "casts", "elementwise_chain", "attention", ...

struct OpAdvice {
  ProgramPattern pattern;
  std::string action;    // one line: what to change in the program
  std::string evidence;  // what the trace showed: ops, launches, time
  std::size_t launches = 0;
  std::int64_t gpu_ns = 0;  // GPU time of the kernels involved
  double share = 0;         // of all kernel GPU time, 0..1
  // At most this share of all GPU time saved, by the pattern's own model (docs/report.md).
  double saving = 0;
};

// One op's GPU time: the kernels launched inside it (innermost op of the launching thread).
struct OpGroup {
  std::string name;
  std::size_t kernels = 0;
  std::int64_t total_ns = 0;
  double share = 0;  // of all kernel GPU time, 0..1
};

namespace advice_threshold {
// Casts are worth removing when they own this share of GPU time.
inline constexpr double kCastShare = 0.05;
// Other patterns are listed when the kernels involved own this share.
inline constexpr double kMinShare = 0.02;
inline constexpr std::size_t kMinChain = 3;  // elementwise kernels in a row
// A GEMM shorter than this on average, launched at least kManyGemms times with one shape, is
// small enough that launching it is a real part of its cost and batching pays.
inline constexpr double kSmallGemmNs = 20'000;
inline constexpr std::size_t kManyGemms = 32;
}  // namespace advice_threshold

class ProgramPatterns {
 public:
  // Kernels in start order per stream; `op` is "" when no op launched the kernel.
  void on_kernel(const trace::KernelRecord& k, const LaunchShape& shape, std::string_view op,
                 std::int64_t duration_ns);
  // The advice found, largest saving first, and the GPU time by op (largest first); shares are of
  // `kernel_total_ns`.
  std::vector<OpAdvice> advice(std::int64_t kernel_total_ns);
  std::vector<OpGroup> ops(std::int64_t kernel_total_ns) const;

 private:
  enum class Kind { gemm, softmax, elementwise, other };
  struct Stream {
    // The current run of elementwise kernels.
    std::vector<std::string> chain;
    std::int64_t chain_ns = 0;
    // Attention: 0 nothing, 1 after a GEMM, 2 after GEMM then softmax.
    int attention = 0;
    std::size_t attention_launches = 0;
    std::int64_t attention_ns = 0, attention_gemm_ns = 0;  // the pattern's kernels; its GEMM
  };
  struct Tally {
    std::size_t count = 0, launches = 0;
    std::int64_t gpu_ns = 0;
    double saving_ns = 0;
  };
  struct Gemm {
    std::string name;
    LaunchShape shape;
    std::size_t launches = 0;
    std::int64_t gpu_ns = 0;
  };
  static Kind kind_of(std::string_view kernel, std::string_view op);
  void close_chain(Stream& s);

  std::map<std::pair<std::uint32_t, std::uint32_t>, Stream> streams_;  // (device, stream)
  std::map<std::string, Tally> chains_;  // by the chain's ops, "a -> b -> c"
  Tally attention_;
  std::map<std::string, OpGroup> ops_;
  std::vector<Gemm> gemms_;
};

}  // namespace ktune::analyze
