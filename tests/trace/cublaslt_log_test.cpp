// cuBLASLt's log as GEMM calls: the lines an H100 wrote for PyTorch (fuzz/corpus/cublaslt_log/,
// verbatim), one per matmul, read into problems and algorithms; anything else skipped and counted.
#include "ktune/trace/cublaslt_log.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "trace_test_util.hpp"

namespace ktune::trace {
namespace {

std::string h100_log() {
  std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) / "fuzz" / "corpus" / "cublaslt_log" /
                   "h100_torch.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CublasLtLog, ReadsTheH100LinesIntoProblemsAndAlgorithms) {
  const CublasLtLog log = parse_cublaslt_log(h100_log());
  EXPECT_EQ(log.matmul_calls, 5u);
  EXPECT_EQ(log.skipped_lines, 0u);
  ASSERT_EQ(log.calls.size(), 5u);  // the two f16 linears differ in epilogue

  // linear(x, w, b): D[11008 x 2048] = W^T... with the bias epilogue.
  const GemmCallRecord& bias = log.calls[0];
  EXPECT_EQ(bias.m, 11008);
  EXPECT_EQ(bias.n, 2048);
  EXPECT_EQ(bias.k, 4096);
  EXPECT_EQ(bias.batch, 1);
  EXPECT_EQ(bias.a_type, "R_16F");
  EXPECT_EQ(bias.b_type, "R_16F");
  EXPECT_EQ(bias.c_type, "R_16F");
  EXPECT_EQ(bias.d_type, "R_16F");
  EXPECT_EQ(bias.compute_type, "COMPUTE_32F");
  EXPECT_EQ(bias.scale_type, "R_32F");
  EXPECT_EQ(bias.transa, "OP_T");
  EXPECT_EQ(bias.transb, "OP_N");  // absent: OP_N
  EXPECT_EQ(bias.epilogue, "EPILOGUE_BIAS");
  EXPECT_EQ(bias.lda, 4096);
  EXPECT_EQ(bias.ldb, 4096);
  EXPECT_EQ(bias.ldc, 11008);
  EXPECT_EQ(bias.ldd, 11008);
  EXPECT_EQ(bias.algo_id, 66);
  EXPECT_EQ(bias.tile, "MATMUL_TILE_192x192");
  EXPECT_EQ(bias.stages, "MATMUL_STAGES_64xAUTO");
  EXPECT_EQ(bias.splits, 1);
  EXPECT_EQ(bias.reduction, "");
  EXPECT_EQ(bias.calls, 1u);

  const GemmCallRecord& plain = log.calls[1];  // linear(x, w)
  EXPECT_EQ(std::tie(plain.m, plain.n, plain.k), std::tie(bias.m, bias.n, bias.k));
  EXPECT_EQ(plain.epilogue, "EPILOGUE_DEFAULT");

  const GemmCallRecord& bmm = log.calls[2];  // batch 2, both operands OP_N
  EXPECT_EQ(bmm.m, 4096);
  EXPECT_EQ(bmm.n, 1024);
  EXPECT_EQ(bmm.k, 4096);
  EXPECT_EQ(bmm.batch, 2);
  EXPECT_EQ(bmm.transa, "OP_N");
  EXPECT_EQ(bmm.tile, "MATMUL_TILE_256x128");

  const GemmCallRecord& f32 = log.calls[3];
  EXPECT_EQ(f32.d_type, "R_32F");
  EXPECT_EQ(f32.algo_id, 55);
  EXPECT_EQ(f32.stages, "MATMUL_STAGES_8x3");

  const GemmCallRecord& split = log.calls[4];
  EXPECT_EQ(std::tie(split.m, split.n, split.k), std::make_tuple(256, 16, 4096));
  EXPECT_EQ(split.splits, 3);
  EXPECT_EQ(split.reduction, "REDUCTION_SCHEME_COMPUTE_TYPE");
}

TEST(CublasLtLog, RepeatedCallsAggregateIntoOneProblem) {
  std::string log;
  const std::string lines = h100_log();
  for (int i = 0; i < 100; ++i) log += lines;
  const CublasLtLog out = parse_cublaslt_log(log);
  EXPECT_EQ(out.matmul_calls, 500u);
  ASSERT_EQ(out.calls.size(), 5u);
  for (const GemmCallRecord& r : out.calls) EXPECT_EQ(r.calls, 100u);
}

TEST(CublasLtLog, OtherLinesAreSkippedAndMalformedOnesCounted) {
  const std::string first = h100_log().substr(0, h100_log().find('\n'));
  std::string log =
      "\n"
      "garbage\n"
      "[2026-11-25 11:21:45][cublasLt][455][Info][cublasLtMatmulAlgoGetHeuristic] ok\n"
      "[2026-11-25 11:21:45][cublasLt][455][Trace][cublasLtCreate] handle=0x1\n"
      "[][][][][]\n"
      "[[[[[\n"
      "]]]]]\n";
  const std::string malformed[] = {
      first.substr(0, first.find("Ddesc=[") + 12),  // cut short inside a bracket
      // D's rows do not match A
      "[t][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16F rows=8 cols=4] "
      "Bdesc=[type=R_16F rows=8 cols=2] Ddesc=[type=R_16F rows=5 cols=2] "
      "computeDesc=[computeType=COMPUTE_32F transa=OP_T]",
      // no Ddesc
      "[t][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16F rows=8 cols=4] "
      "Bdesc=[type=R_16F rows=8 cols=2] computeDesc=[computeType=COMPUTE_32F]",
      // a size that is not one
      "[t][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16F rows=-8 cols=4] "
      "Bdesc=[type=R_16F rows=8 cols=2] Ddesc=[type=R_16F rows=4 cols=2] "
      "computeDesc=[computeType=COMPUTE_32F transa=OP_T]",
      // a name with bytes cuBLASLt does not write
      "[t][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16F\xff rows=8 cols=4] "
      "Bdesc=[type=R_16F rows=8 cols=2] Ddesc=[type=R_16F rows=4 cols=2] "
      "computeDesc=[computeType=COMPUTE_32F transa=OP_T]",
      // an operation cuBLASLt does not have
      "[t][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16F rows=8 cols=4] "
      "Bdesc=[type=R_16F rows=8 cols=2] Ddesc=[type=R_16F rows=4 cols=2] "
      "computeDesc=[computeType=COMPUTE_32F transa=OP_X]",
  };
  for (const std::string& m : malformed) log += m + "\n";
  log += first + "\r\n";  // the one good line, with a Windows line end
  const CublasLtLog out = parse_cublaslt_log(log);
  EXPECT_EQ(out.matmul_calls, 1u);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].m, 11008);
  EXPECT_EQ(out.malformed_lines, 6u);
  EXPECT_EQ(out.skipped_lines, 12u);
  EXPECT_EQ(out.first_malformed, "a bracket is not closed");
}

// Found by the fuzzer (fuzz/corpus/cublaslt_log/equals_without_name): a '=' with no name before
// it, inside or outside a bracket, made the field splitter loop for ever.
TEST(CublasLtLog, AnEqualsSignWithoutANameIsSkipped) {
  const std::string first = h100_log().substr(0, h100_log().find('\n'));
  std::string line = first;
  line.insert(line.find("Adesc=[") + 7, "=x ");  // inside A's descriptor
  line.insert(line.find(" Bdesc="), " =");       // between two fields
  const CublasLtLog out =
      parse_cublaslt_log(line + "\n" + "[t][cublasLt][1][Trace][cublasLtMatmul] =\n");
  EXPECT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].m, 11008);
}

TEST(CublasLtLog, DistinctProblemsAreBounded) {
  CublasLtLogParser parser;
  for (std::size_t i = 1; i <= kMaxGemmProblems + 10; ++i)
    parser.add_line(
        "[t][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16F rows=8 cols=" +
        std::to_string(i) + "] Bdesc=[type=R_16F rows=8 cols=2] Ddesc=[type=R_16F rows=" +
        std::to_string(i) + " cols=2] computeDesc=[computeType=COMPUTE_32F transa=OP_T]");
  EXPECT_EQ(parser.log().calls.size(), kMaxGemmProblems);
  EXPECT_EQ(parser.log().malformed_lines, 10u);
  EXPECT_NE(parser.log().first_malformed.find("distinct GEMM problems"), std::string::npos);
}

TEST(CublasLtLog, UnreadableFileIsOneSentence) {
  try {
    read_cublaslt_log("/nonexistent/cublaslt.1.log");
    FAIL() << "expected ktune::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read cuBLASLt's log /nonexistent/cublaslt.1.log"),
              std::string::npos)
        << e.what();
  }
  test::TempDir dir;
  std::ofstream(dir.path / "l.log") << h100_log();
  EXPECT_EQ(read_cublaslt_log(dir.path / "l.log").matmul_calls, 5u);
}

}  // namespace
}  // namespace ktune::trace
