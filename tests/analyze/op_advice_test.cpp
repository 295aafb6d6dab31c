// Program-level advice (analyze/op_advice): each pattern from a hand-built trace whose numbers the
// test states, and all three that the recorded PyTorch block shows.
#include "ktune/analyze/op_advice.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "ktune/analyze/analysis.hpp"
#include "trace_builder.hpp"

namespace ktune::analyze::test {
namespace {

// A launch call, the kernel, and the PyTorch op around the call (a profiler trace's cpu_op).
struct OpTraceBuilder : TraceBuilder {
  std::uint32_t corr = 1;
  double now = 0;  // us
  void op_kernel(const std::string& op, const std::string& kernel, double us) {
    trace::NvtxRangeRecord r;
    r.name = op;
    r.domain = kTorchOpDomain;
    r.start_ns = at(now);
    r.end_ns = at(now + 4);
    r.process_id = 4242;
    r.thread_id = 11;
    t_ranges.push_back(r);
    launched(kernel, now + 1, now + 3, now + 5, now + 5 + us, corr++);
    now += 5 + us + 1;
  }
  std::vector<trace::NvtxRangeRecord> t_ranges;
  Analysis run() {
    t.nvtx_ranges = t_ranges;
    AnalysisOptions o;
    o.from_ns = 0;
    MemorySource source(t);
    return analyze(source, o);
  }
};

const OpAdvice* find(const Analysis& a, ProgramPattern p) {
  for (const OpAdvice& x : a.op_advice)
    if (x.pattern == p) return &x;
  return nullptr;
}

const std::string kAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)";
const std::string kGelu =
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl, "
    "std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl, std::array<char*, 2ul>)";
const std::string kCopy =
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda, "
    "std::array<char*, 2ul> >(int, at::native::direct_copy_kernel_cuda, std::array<char*, 2ul>)";
const std::string kGemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
const std::string kSoftmax = "void softmax_warp_forward<float, float, float, 10, false>(float*)";

TEST(OpAdvice, CastsOwningAShareOfGpuTimeAreNamedWithTheirOps) {
  OpTraceBuilder b;
  b.op_kernel("aten::mm", kGemm, 60);
  b.op_kernel("aten::copy_", kCopy, 40);  // 40 % of GPU time
  const Analysis a = b.run();
  const OpAdvice* casts = find(a, ProgramPattern::casts);
  ASSERT_NE(casts, nullptr);
  EXPECT_NEAR(casts->share, 0.4, 1e-9);
  EXPECT_EQ(casts->evidence, "aten::copy_: 1 kernels, 40.00 us (40.0 % of GPU time)");
  ASSERT_EQ(a.ops.size(), 2u);
  EXPECT_EQ(a.ops[0].name, "aten::mm");  // by GPU time
  EXPECT_NEAR(a.ops[1].share, 0.4, 1e-9);
  // Under the 5 % line: no advice.
  OpTraceBuilder small;
  small.op_kernel("aten::mm", kGemm, 97);
  small.op_kernel("aten::copy_", kCopy, 3);
  EXPECT_EQ(find(small.run(), ProgramPattern::casts), nullptr);
}

// Three elementwise kernels back to back fuse into one: at most 2/3 of their time goes.
TEST(OpAdvice, ElementwiseChainsAreFusionCandidates) {
  OpTraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.op_kernel("aten::mm", kGemm, 40);
    b.op_kernel("aten::add", kAdd, 10);
    b.op_kernel("aten::gelu", kGelu, 10);
    b.op_kernel("aten::add", kAdd, 10);
  }
  const Analysis a = b.run();
  const OpAdvice* chain = find(a, ProgramPattern::elementwise_chain);
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->launches, 12u);
  EXPECT_NEAR(chain->share, 120.0 / 280, 1e-9);
  EXPECT_NEAR(chain->saving, 80.0 / 280, 1e-9);
  EXPECT_NE(chain->evidence.find("aten::add -> aten::gelu -> aten::add (4 times"),
            std::string::npos)
      << chain->evidence;
  EXPECT_NE(chain->action.find("torch.compile"), std::string::npos);
  // Two in a row are no chain.
  OpTraceBuilder two;
  for (int i = 0; i < 4; ++i) {
    two.op_kernel("aten::mm", kGemm, 40);
    two.op_kernel("aten::add", kAdd, 10);
    two.op_kernel("aten::gelu", kGelu, 10);
  }
  EXPECT_EQ(find(two.run(), ProgramPattern::elementwise_chain), nullptr);
}

// q @ k^T, a scale, softmax, @ v: written-out attention; a flash kernel is not.
TEST(OpAdvice, AttentionWrittenOutPointsAtSdpa) {
  OpTraceBuilder b;
  for (int i = 0; i < 2; ++i) {
    b.op_kernel("aten::bmm", kGemm, 20);
    b.op_kernel("aten::div", kAdd, 5);
    b.op_kernel("aten::_softmax", kSoftmax, 10);
    b.op_kernel("aten::bmm", kGemm, 20);
  }
  const Analysis a = b.run();
  const OpAdvice* attention = find(a, ProgramPattern::attention);
  ASSERT_NE(attention, nullptr);
  EXPECT_NE(attention->action.find("scaled_dot_product_attention"), std::string::npos);
  EXPECT_NE(attention->evidence.find("2 times a GEMM, a softmax and a GEMM"), std::string::npos)
      << attention->evidence;
  EXPECT_NEAR(attention->saving, 2 * 15.0 / 110, 1e-9);  // the scale and the softmax
  OpTraceBuilder fused;
  fused.op_kernel("aten::_scaled_dot_product_flash_attention",
                  "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>(Params)", 50);
  EXPECT_EQ(find(fused.run(), ProgramPattern::attention), nullptr);
}

// 64 launches of one 4 us GEMM shape: batchable. Without ops (a plain .ktrace), by kernel name.
TEST(OpAdvice, ManySmallGemmsOfOneShapeBatch) {
  TraceBuilder b;
  for (int i = 0; i < 64; ++i) b.kernel(kGemm, 10.0 * i, 10.0 * i + 4);
  MemorySource source(b.t);
  AnalysisOptions o;
  o.from_ns = 0;
  const Analysis a = analyze(source, o);
  const OpAdvice* gemms = find(a, ProgramPattern::small_gemms);
  ASSERT_NE(gemms, nullptr);
  EXPECT_EQ(gemms->launches, 64u);
  EXPECT_NE(gemms->evidence.find("64 launches of"), std::string::npos) << gemms->evidence;
  EXPECT_NE(gemms->evidence.find("4.00 us each"), std::string::npos) << gemms->evidence;
  EXPECT_EQ(find(a, ProgramPattern::casts), nullptr);  // no ops: casts cannot be told
  EXPECT_TRUE(a.ops.empty());
}

// The recorded block (torch.profiler, H100): its bf16 cast, its written-out attention and its
// add/copy/mul chain, each with its evidence.
TEST(OpAdvice, TheRecordedBlockShowsItsCastsChainsAndAttention) {
  const auto source =
      open_trace(std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/torch/torch_block.json");
  AnalysisOptions o;
  o.from_ns = 0;
  const Analysis a = analyze(*source, o);
  for (ProgramPattern p :
       {ProgramPattern::casts, ProgramPattern::elementwise_chain, ProgramPattern::attention})
    EXPECT_NE(find(a, p), nullptr) << to_string(p);
  EXPECT_EQ(find(a, ProgramPattern::small_gemms), nullptr);
  EXPECT_EQ(find(a, ProgramPattern::attention)->evidence.substr(0, 7), "3 times");
  ASSERT_FALSE(a.ops.empty());
  EXPECT_EQ(a.ops[0].name, "aten::mm");
  for (std::size_t i = 1; i < a.ops.size(); ++i)
    EXPECT_GE(a.ops[i - 1].total_ns, a.ops[i].total_ns);
}

}  // namespace
}  // namespace ktune::analyze::test
