// ktune tune --library and ktune export --tunableop as a user runs them: usage errors come as one
// sentence before any GPU is needed, and the export reads the cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../cli/run_ktune.hpp"

namespace ktune {
namespace {

struct Case {
  const char* args;
  const char* says;
};

class LibraryTuneUsage : public ::testing::TestWithParam<Case> {};

TEST_P(LibraryTuneUsage, IsOneSentenceAndNonZero) {
  const auto r = test::run_ktune(GetParam().args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(GetParam().says), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cli, LibraryTuneUsage,
    ::testing::Values(
        Case{"tune --library cublas --op gemm_tn --shape m=8,n=8,k=8", "use --library cublaslt"},
        Case{"tune --library cublaslt --op conv --shape m=8,n=8,k=8", "is not a GEMM op"},
        Case{"tune --library cublaslt --op gemm --shape m=8,n=8,k=8", "gemm_<layout>"},
        Case{"tune --library cublaslt --op gemm_tx --shape m=8,n=8,k=8", "layout nn, nt, tn or tt"},
        Case{"tune --library cublaslt --op gemm_tn_silu --shape m=8,n=8,k=8", "epilogue bias"},
        Case{"tune --library cublaslt --op gemm_tn --shape m=8,n=8", "--shape lacks k"},
        Case{"tune --library cublaslt --op gemm_tn --shape m=8,n=8,k=8,b=2", "m, n, k and batch"},
        Case{"tune --library cublaslt --op gemm_nn --shape m=8,n=8,k=8,batch=0", "batch=0"},
        Case{"tune --library cublaslt --op gemm_tn --shape m=8,n=8,k=8 --dtype i8",
             "cannot be multiplied"},
        Case{"tune --library cublaslt --op gemm_tn --shape m=8,n=8,k=8 --dtype q7", "q7"},
        Case{"tune spec.json --library cublaslt --op gemm_tn --shape m=8,n=8,k=8", "drop the SPEC"},
        Case{"tune --op gemm_tn --shape m=8,n=8,k=8", "go with --library"},
        Case{"export", "--tunableop"}, Case{"export --tunableop -o out.csv", "--torch-version"},
        Case{"export t.ktrace --tunableop -o out.csv --torch-version 2.11.0", "not a trace"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::to_string(info.index); });

TEST(ExportTunableOp, WritesTheCachedCublasLtWinners) {
  const auto dir = std::filesystem::temp_directory_path() / "ktune-tunableop-cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "store.db").string(), csv = (dir / "results.csv").string();
  {
    std::ofstream(dir / "entry.json") << R"({"op": "gemm_tn", "dtype": "f16", "bucket": "",
      "arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3", "toolkit": "13.0",
      "driver_major": 580, "shape": [4096, 2048, 4096, 1],
      "config": {"library": "cublaslt", "algo_id": 66, "layout": "TN"},
      "median_ns": 150000, "noise_ns": 100, "samples": 20, "throughput": 0,
      "throughput_unit": "flop/s", "verification": "passed",
      "provenance": {"ktune_version": "0.1.0", "ktune_commit": "x", "host": "h",
                     "created_at": "2026-11-23T00:00:00Z", "strategy": "cublaslt-search"}})";
  }
  auto r = test::run_ktune("--db " + db + " cache put " + (dir / "entry.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_ktune("--db " + db + " export --tunableop -o " + csv + " --torch-version 2.11.0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(csv);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text,
            "Validator,PT_VERSION,2.11.0\n"
            "GemmTunableOp_Half_TN,tn_4096_2048_4096,Gemm_Cublaslt_66,0.150000\n");
  // The store itself is never the output.
  r = test::run_ktune("--db " + db + " export --tunableop -o " + db + " --torch-version 2.11.0");
  EXPECT_NE(r.exit_code, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ktune
