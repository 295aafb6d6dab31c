// The candidate pipeline's decisions, on the CPU: resource limits before and after compiling,
// kernel parameters against the spec's arguments, contenders, contexts that cannot go on.
#include "ktune/bench/pipeline.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "ktune/bench/runner.hpp"
#include "ktune/cuda/driver.hpp"

namespace ktune::bench {
namespace {

KernelLaunch launch(unsigned bx, unsigned by, unsigned smem = 0) {
  KernelLaunch l;
  l.block = {bx, by, 1};
  l.grid = {100, 1, 1};
  l.dynamic_shared_bytes = smem;
  return l;
}

// A hot batch lasts about 200 us. The event timer gives milliseconds; read as microseconds, a
// 0.71 ms copy was batched 277 times and a 87 us GEMV 400 times (200 ms samples, every hot run
// to its timeout).
TEST(HotBatch, LastsAbout200Microseconds) {
  EXPECT_EQ(batch_for(0.713), 1u);  // the 1 GiB copy: one launch is already longer
  EXPECT_EQ(batch_for(0.087), 3u);  // the GEMV: 261 us
  EXPECT_EQ(batch_for(0.002), 100u);
  EXPECT_EQ(batch_for(0.0001), 400u);  // below 0.5 us, counted as 0.5
  EXPECT_EQ(batch_for(0), 400u);
  EXPECT_EQ(batch_for(1e-9), 400u);
}

TEST(PipelineResources, AcceptsWhatFits) {
  const KernelAttributes k{1024, 32, 0};
  EXPECT_EQ(resource_problem(k, DeviceLimits{}, launch(256, 4, 48 * 1024)), std::nullopt);
}

TEST(PipelineResources, RejectsEachLimit) {
  const DeviceLimits d;
  // More threads than the device allows.
  auto why = resource_problem({1024, 32, 0}, d, launch(64, 32));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("2048 threads per block; the device allows at most 1024"), std::string::npos);
  // Register pressure lowered the kernel's own limit.
  why = resource_problem({512, 128, 0}, d, launch(1024, 1));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("128 registers per thread this kernel allows at most 512"),
            std::string::npos);
  // Registers per block over the device's file (a kernel attribute that claims more threads).
  why = resource_problem({1024, 255, 0}, d, launch(512, 1));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("registers per block"), std::string::npos);
  // Static plus dynamic shared memory.
  why = resource_problem({1024, 32, 16 * 1024}, d, launch(128, 1, 220 * 1024));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("bytes of shared memory per block; the device allows 232448"),
            std::string::npos);
  // Grid outside the limits.
  KernelLaunch g = launch(128, 1);
  g.grid = {1, 70000, 1};
  why = resource_problem({1024, 32, 0}, d, g);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("grid"), std::string::npos);
}

// One outcome type for every evaluator: its figures are the measurement's, and a record read back
// (set_time) gives the same figures again.
TEST(CandidateOutcome, FiguresAreTheMeasurementsAndSurviveARecord) {
  CandidateOutcome o;
  const std::vector<double> samples{100, 101, 102, 103, 104, 105, 106, 107, 108, 140};
  o.measurement.time_ns = summarize(samples);
  EXPECT_DOUBLE_EQ(o.time_ns(), o.measurement.time_ns.median);
  EXPECT_DOUBLE_EQ(o.noise_ns(), (o.measurement.time_ns.p95 - o.measurement.time_ns.p5) / 2);
  EXPECT_GT(o.noise_ns(), 0);
  EXPECT_EQ(o.samples(), 10u);
  CandidateOutcome back;
  back.set_time(o.time_ns(), o.noise_ns(), o.samples());
  EXPECT_DOUBLE_EQ(back.time_ns(), o.time_ns());
  EXPECT_DOUBLE_EQ(back.noise_ns(), o.noise_ns());
  EXPECT_EQ(back.samples(), o.samples());
}

// A candidate with planted steps: the one sequence (run_candidate) on the CPU.
class PlantedCandidate final : public Candidate {
 public:
  std::optional<CandidateOutcome> ready_outcome;
  Verification verification;
  double time_ns = 1000;
  int verified = 0, sampled = 0;

  std::optional<CandidateOutcome> ready() override { return ready_outcome; }
  Verification verify() override {
    ++verified;
    return verification;
  }
  Sampler& sampler() override {
    ++sampled;
    return sampler_;
  }

 private:
  class Steady final : public Sampler {
   public:
    explicit Steady(const PlantedCandidate& c) : c_(c) {}
    void warmup() override {}
    Sample sample() override { return {c_.time_ns, 1980, 0, 1}; }

   private:
    const PlantedCandidate& c_;
  };
  Steady sampler_{*this};
};

TEST(RunCandidate, EndsAtTheFirstFailedStepThenScreensAndMeasures) {
  PipelineSettings settings;
  settings.full = PipelineSettings::tuning_full();
  Measurement header;
  header.kernel = "k";

  PlantedCandidate not_ready;  // did not compile: its outcome, nothing run
  not_ready.ready_outcome = CandidateOutcome::failed(Status::compile_failed, "no such symbol");
  CandidateOutcome o = run_candidate(not_ready, settings, std::nullopt, header);
  EXPECT_EQ(o.status, Status::compile_failed);
  EXPECT_EQ(o.detail, "no such symbol");
  EXPECT_EQ(not_ready.verified + not_ready.sampled, 0);

  PlantedCandidate wrong;  // a wrong result is never timed
  wrong.verification = {true, false, "element 3 is 7 where 8 is expected"};
  o = run_candidate(wrong, settings, std::nullopt, header);
  EXPECT_EQ(o.status, Status::wrong_result);
  EXPECT_EQ(o.detail, "element 3 is 7 where 8 is expected");
  EXPECT_EQ(wrong.sampled, 0);

  PlantedCandidate right;
  right.verification = {true, true, "agrees (64 elements)"};
  o = run_candidate(right, settings, std::nullopt, header);
  EXPECT_EQ(o.status, Status::ok);
  EXPECT_TRUE(o.full);
  EXPECT_EQ(o.detail, "verified: agrees (64 elements)");
  EXPECT_EQ(o.measurement.kernel, "k");
  EXPECT_TRUE(o.measurement.verification.passed);
  EXPECT_DOUBLE_EQ(o.time_ns(), 1000);
  EXPECT_GE(o.samples(), settings.full.min_samples);

  // Against a best of 500 ns it is screened out, with the screen's figures.
  o = run_candidate(right, settings, 500.0, header);
  EXPECT_EQ(o.status, Status::slower);
  EXPECT_FALSE(o.full);
  EXPECT_DOUBLE_EQ(o.time_ns(), 1000);
  EXPECT_NE(o.detail.find("slower: screen median 1.00 us"), std::string::npos) << o.detail;

  PlantedCandidate unchecked;  // no reference: measured, and its detail says so
  unchecked.verification.detail = "not verified: the spec declares no reference";
  o = run_candidate(unchecked, settings, std::nullopt, header);
  EXPECT_EQ(o.status, Status::ok);
  EXPECT_EQ(o.detail, "not verified: the spec declares no reference");
  EXPECT_FALSE(o.measurement.verification.checked);
}

TEST(PipelineScreen, ContendersAreWithinTheMarginOfTheBest) {
  EXPECT_TRUE(is_contender(5000, std::nullopt, 0.03));  // nothing measured yet
  EXPECT_TRUE(is_contender(1020, 1000.0, 0.03));
  EXPECT_TRUE(is_contender(1030, 1000.0, 0.03));
  EXPECT_FALSE(is_contender(1031, 1000.0, 0.03));
  EXPECT_TRUE(is_contender(900, 1000.0, 0.03));  // faster than the best
  EXPECT_FALSE(is_contender(1001, 1000.0, 0.0));
}

TEST(PipelineScreen, TuningRulesAreShorterThanTheHarnessDefault) {
  PipelineSettings s;
  s.full = PipelineSettings::tuning_full();
  EXPECT_GT(s.screen.screen_margin, 0);
  EXPECT_LT(s.screen.timeout_s, s.full.timeout_s);
  EXPECT_LT(s.full.min_gpu_time_s, StopSettings::full().min_gpu_time_s);
  EXPECT_EQ(s.full.screen_margin, 0);  // a contender is never cut short
}

TEST(PipelineContext, FaultsThatPoisonTheContextAreFatal) {
  EXPECT_TRUE(cuda::context_is_lost(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_TRUE(cuda::context_is_lost(CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_TRUE(cuda::context_is_lost(CUDA_ERROR_MISALIGNED_ADDRESS));
  EXPECT_FALSE(cuda::context_is_lost(CUDA_SUCCESS));
  EXPECT_FALSE(cuda::context_is_lost(CUDA_ERROR_INVALID_VALUE));
  EXPECT_FALSE(cuda::context_is_lost(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
}

TEST(PipelineResources, LaunchProblemsNeedNoCompilation) {
  const DeviceLimits d;
  EXPECT_EQ(launch_problem(d, launch(256, 4)), std::nullopt);
  EXPECT_NE(launch_problem(d, launch(64, 32)), std::nullopt);              // 2048 threads
  EXPECT_NE(launch_problem(d, launch(128, 1, 300 * 1024)), std::nullopt);  // shared memory
}

TEST(PipelineResources, PtxasLimitMessagesAreResourceFailures) {
  EXPECT_TRUE(log_shows_resource_limit(
      "ptxas error   : Entry function 'k' uses too much shared data (0x10000 bytes, 0xc000 max)"));
  EXPECT_FALSE(log_shows_resource_limit("error: identifier \"x\" is undefined"));
}

KernelArg arg(const char* name, KernelArg::Kind kind, cuda::DType t = cuda::DType::f32) {
  KernelArg a;
  a.name = name;
  a.kind = kind;
  a.dtype = t;
  return a;
}

TEST(PipelineParameters, ConstantMemoryArgumentsArePassedWhenTheKernelDeclaresThem) {
  const std::vector<KernelArg> args = {arg("out", KernelArg::Kind::buffer),
                                       arg("in", KernelArg::Kind::buffer),
                                       arg("filter", KernelArg::Kind::constant_memory)};
  bool passed = false;
  EXPECT_EQ(parameter_problem({8, 8, 8}, args, passed), std::nullopt);
  EXPECT_TRUE(passed);  // the kernel takes three pointers: the constant one too
  EXPECT_EQ(parameter_problem({8, 8}, args, passed), std::nullopt);
  EXPECT_FALSE(passed);  // it reads the filter through its __constant__ symbol only
}

TEST(PipelineParameters, AMismatchNamesTheArgument) {
  const std::vector<KernelArg> args = {arg("out", KernelArg::Kind::buffer),
                                       arg("n", KernelArg::Kind::scalar, cuda::DType::i32)};
  bool passed = false;
  auto why = parameter_problem({8, 16}, args, passed);  // no integer is 16 bytes
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("argument 'n'"), std::string::npos) << *why;
  why = parameter_problem({4, 4}, args, passed);  // a value where the spec gives a buffer
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("argument 'out'"), std::string::npos) << *why;
  why = parameter_problem({8, 4, 4}, args, passed);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("takes 3 parameters but the spec lists 2 arguments"), std::string::npos)
      << *why;
}

// BAT's TRIAD gives its scalar as a double while the kernel (PRECISION 32) takes a float: the value
// is passed as the parameter takes it, as a C++ call converts it, keeping the spec's kind.
TEST(PipelineParameters, AScalarTakesTheWidthOfItsParameter) {
  using cuda::DType;
  EXPECT_EQ(scalar_type_for(DType::f64, 4), DType::f32);
  EXPECT_EQ(scalar_type_for(DType::f32, 8), DType::f64);
  EXPECT_EQ(scalar_type_for(DType::f32, 2), DType::f16);
  EXPECT_EQ(scalar_type_for(DType::bf16, 2), DType::bf16);  // same width: as the spec says
  EXPECT_EQ(scalar_type_for(DType::i32, 8), DType::i64);
  EXPECT_EQ(scalar_type_for(DType::u64, 4), DType::u32);
  EXPECT_EQ(scalar_type_for(DType::f64, 1), std::nullopt);  // no 1-byte floating type
  EXPECT_EQ(scalar_type_for(DType::i32, 16), std::nullopt);

  const std::vector<KernelArg> args = {arg("a", KernelArg::Kind::buffer, DType::f64),
                                       arg("s", KernelArg::Kind::scalar, DType::f64),
                                       arg("n", KernelArg::Kind::scalar, DType::i32)};
  bool passed = false;
  EXPECT_EQ(parameter_problem({8, 4, 4}, args, passed), std::nullopt);  // triad(float*, float, int)
  const auto why = parameter_problem({8, 16, 4}, args, passed);         // a 16-byte struct
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("argument 's' (f64 scalar) is 8 bytes but the kernel's parameter 1 is 16"),
            std::string::npos)
      << *why;
}

// The bytes a kernel gets: a workspace of scalars alone needs no GPU.
TEST(PipelineParameters, AScalarIsEncodedAtTheWidthTheKernelTakes) {
  using cuda::DType;
  KernelArg s = arg("s", KernelArg::Kind::scalar, DType::f64);
  s.value = 1.75;
  KernelArg h = arg("h", KernelArg::Kind::scalar, DType::bf16);
  h.value = 2;
  KernelArg n = arg("n", KernelArg::Kind::scalar, DType::i32);
  n.value = 4096;
  Workspace ws({s, h, n});
  ws.pass_scalars_as({4, 4, 8}, false);  // (float, float, long long)
  void** p = ws.params(false);
  EXPECT_EQ(*static_cast<float*>(p[0]), 1.75f);
  EXPECT_EQ(*static_cast<float*>(p[1]), 2.0f);
  EXPECT_EQ(*static_cast<std::int64_t*>(p[2]), 4096);
  ws.pass_scalars_as({8, 2, 4}, false);  // back: the spec's own types, bf16 included
  p = ws.params(false);
  EXPECT_EQ(*static_cast<double*>(p[0]), 1.75);
  EXPECT_EQ(ws.args()[1].dtype, DType::bf16);
  EXPECT_EQ(*static_cast<std::int32_t*>(p[2]), 4096);
}

}  // namespace
}  // namespace ktune::bench
