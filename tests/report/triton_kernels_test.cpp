// Inductor's Triton kernels in the report: a scan (tests/fixtures/inductor/scan.json, in the shape
// `python3 -m ktune.inductor scan` writes) tied by name to a trace's kernels, named with their ops,
// kind, launch shape, source hash and module, and the tunable ones in the backlog beside the GEMMs.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ktune/analyze/triton_kernels.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/report.hpp"
#include "run_ktune.hpp"
#include "trace_builder.hpp"

namespace ktune::report {
namespace {

namespace fs = std::filesystem;
using analyze::test::TraceBuilder;
using nlohmann::json;

const fs::path kScan = fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/inductor/scan.json";
const std::string kPointwise = "triton_poi_fused__unsafe_view_clone_permute_select_view_1";
const std::string kSoftmax = "triton_per_fused__softmax__to_copy_amax_mul_sub_view_3";
const std::string kGemm = "nvjet_hsh_192x192_64x4_2x1_v_bz_coopA_TNN";

trace::Trace compiled_step() {
  TraceBuilder b;
  b.launched(kGemm, 0, 5, 10, 360, 1);         // 350 us
  b.launched(kPointwise, 6, 8, 370, 570, 2);   // 200 us
  b.launched(kPointwise, 9, 11, 570, 670, 3);  // 100 us
  b.launched(kSoftmax, 12, 14, 680, 930, 4);   // 250 us: the backlog's 80 % needs it
  b.launched("elementwise_kernel", 15, 16, 940, 945, 5);
  return b.t;
}

analyze::Analysis with_scan() {
  const trace::Trace t = compiled_step();
  analyze::MemorySource source(t);
  analyze::Analysis a = analyze::analyze(source);
  analyze::attach_triton_kernels(
      a, analyze::parse_inductor_scan(json::parse(read_file(kScan)), kScan.string()));
  return a;
}

TEST(TritonKernels, EachScannedKernelGetsItsGpuTimeByName) {
  const analyze::Analysis a = with_scan();
  ASSERT_TRUE(a.triton.recorded);
  EXPECT_EQ(a.triton.torch, "2.11.0+cu130");
  ASSERT_EQ(a.triton.kernels.size(), 4u);
  EXPECT_EQ(a.triton.kernels[0].name, kPointwise);  // most GPU time first
  EXPECT_EQ(a.triton.kernels[0].gpu_ns, 300'000);
  EXPECT_EQ(a.triton.kernels[0].launches, 2u);
  EXPECT_EQ(a.triton.kernels[1].name, kSoftmax);
  EXPECT_EQ(analyze::numels_text(a.triton.kernels[1]), "xnumel=4096 r0_numel=128");
  EXPECT_FALSE(a.triton.kernels[2].kernel_row);  // the training kernel: not in this trace
  EXPECT_EQ(a.triton.kernels[2].gpu_ns, 0);
}

TEST(TritonKernels, TheReportNamesThemAndTheBacklogListsTheTunableOnesBesideTheGemms) {
  const analyze::Analysis a = with_scan();
  const std::string text = render_text(a, {});
  EXPECT_NE(text.find("Triton kernels (Inductor)"), std::string::npos) << text;
  EXPECT_NE(text.find("4 kernels torch.compile generated (PyTorch 2.11.0+cu130, Triton 3.6.0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("persistent_reduction"), std::string::npos);
  EXPECT_NE(text.find("aten.amax"), std::string::npos);
  EXPECT_NE(
      text.find("/root/out/x/ind-infer/n5/cn5fth3umqvibexy3jppehgtim4snld2t7tvvdo2nzk3yu2pga4v.py"),
      std::string::npos);
  EXPECT_NE(text.find("template (not tunable: a max-autotune GEMM template"), std::string::npos)
      << text;
  // The backlog: the GEMM (#1) and the two Triton kernels (#2, #3) with their GPU time.
  EXPECT_NE(text.find("Inductor's Triton kernels in it, tunable: #2 pointwise (300"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#3 persistent_reduction (250"), std::string::npos) << text;

  const json j = json::parse(render_json(a, {}));
  const json& t = j.at("triton_kernels");
  EXPECT_EQ(t.at("recorded"), true);
  ASSERT_EQ(t.at("kernels").size(), 4u);
  const json& k = t.at("kernels")[1];
  std::vector<std::string> keys;
  for (auto it = k.begin(); it != k.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"dtype", "gpu_ns", "kind", "launches", "lookup_hash",
                                            "name", "numels", "ops", "path", "source_hash",
                                            "stack_traces", "tunable", "tune_command", "why_not"}));
  EXPECT_EQ(k.at("numels"), json::parse(R"({"xnumel": 4096, "r0_numel": 128})"));
  EXPECT_EQ(k.at("tune_command"),
            "ktune tune --inductor-kernel " + k.at("path").get<std::string>());
  EXPECT_TRUE(t.at("kernels")[3].at("tune_command").is_null());  // the template
  const json& backlog = j.at("backlog").at("triton_kernels");
  ASSERT_EQ(backlog.size(), 2u);
  EXPECT_EQ(backlog[0].at("name"), kPointwise);
  EXPECT_EQ(backlog[0].at("gpu_ns"), 300'000);
  EXPECT_EQ(backlog[1].at("name"), kSoftmax);
  EXPECT_EQ(j.at("backlog").at("cublaslt_kernels"), json::array({kGemm}));
}

TEST(TritonKernels, AScanThatIsNotTheScansShapeIsOneSentence) {
  json scan = json::parse(read_file(kScan));
  scan["kernels"][1].erase("numels");
  try {
    analyze::parse_inductor_scan(scan, "run.inductor.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run.inductor.json: kernels[1] is not what `python3 -m "
                                         "ktune.inductor scan` writes"),
              std::string::npos)
        << e.what();
  }
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ktune-triton-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST(TritonKernels, TheScanBesideATraceIsFoundForItsChildrenAndWindowsToo) {
  TempDir d;
  std::ofstream(d.path / "run.inductor.json") << "{}";
  EXPECT_EQ(analyze::inductor_scan_for(d.path / "run.ktrace"), d.path / "run.inductor.json");
  EXPECT_EQ(analyze::inductor_scan_for(d.path / "run.4242.ktrace"), d.path / "run.inductor.json");
  EXPECT_EQ(analyze::inductor_scan_for(d.path / "run.4242.w3.ktrace"),
            d.path / "run.inductor.json");
  EXPECT_EQ(analyze::inductor_scan_for(d.path / "other.ktrace"), std::nullopt);
  EXPECT_EQ(analyze::inductor_scan_for(d.path / "run.final.ktrace"), std::nullopt);
}

TEST(TritonKernels, KtuneReportReadsTheScanBesideTheTrace) {
  TempDir d;
  trace::write_ktrace(d.path / "step.ktrace", compiled_step());
  fs::copy_file(kScan, d.path / "step.inductor.json");
  const auto r = test::run_ktune("report " + (d.path / "step.ktrace").string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("triton_kernels").at("kernels")[0].at("name"), kPointwise);
  EXPECT_EQ(j.at("backlog").at("triton_kernels").size(), 2u);
  // A damaged scan stops the report with a sentence naming it.
  std::ofstream(d.path / "step.inductor.json") << "{\"schema_version\": 1}";
  const auto bad = test::run_ktune("report " + (d.path / "step.ktrace").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("step.inductor.json: torch is not what"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ktune::report
