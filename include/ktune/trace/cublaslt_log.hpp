#pragma once
// cuBLASLt's own log as GEMM calls. With CUBLASLT_LOG_LEVEL=2 ("Trace") cuBLASLt writes one line
// per matmul it runs, PyTorch's linear, mm and bmm included (on Hopper PyTorch routes them all
// through cuBLASLt):
//   [date time][cublasLt][pid][Trace][cublasLtHSHMatmul] A=0X.. Adesc=[type=R_16F rows=4096
//   cols=11008 ld=4096] B=.. Bdesc=[..] C=.. Cdesc=[..] D=.. Ddesc=[..] computeDesc=[computeType=
//   COMPUTE_32F scaleType=R_32F transa=OP_T epilogue=EPILOGUE_BIAS ..] algo=[algoId=66
//   tile=MATMUL_TILE_192x192 stages=MATMUL_STAGES_64xAUTO numSplitsK=3 ..] ..
// The parser reads those lines into GemmCallRecords, one per distinct problem and algorithm with
// its call count. Every other line (other levels and functions, garbage, a line cut short) is
// skipped and counted; nothing in a line can make it throw, and its memory is bounded by
// kMaxGemmProblems however long the log is. Plain host code: the tracer (trace/gemm_capture) hands
// it each message of cuBLASLt's logger callback as the call is made; tests read recorded logs.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ktune/trace/gemm_call.h"
#include "ktune/trace/ktrace.hpp"

namespace ktune::trace {

// Distinct (problem, algorithm) pairs kept per log; calls of further ones are counted as skipped.
inline constexpr std::size_t kMaxGemmProblems = 4096;

struct CublasLtLog {
  std::vector<GemmCallRecord> calls;  // first seen first
  std::uint64_t matmul_calls = 0;     // lines read as calls (the sum of calls[].calls)
  std::uint64_t skipped_lines = 0;    // every other non-empty line
  std::uint64_t malformed_lines = 0;  // of those, matmul lines that could not be read
  std::string first_malformed;        // why the first of them was not read
};

class CublasLtLogParser {
 public:
  // One line, without its newline (a trailing '\r' is ignored).
  void add_line(std::string_view line);
  // One message as cuBLASLt hands it to a logger callback: the function ("cublasLtMatmul") and
  // the fields that follow a line's five bracketed groups. The index in log().calls of the record
  // the call was counted on; nullopt when it is no matmul or could not be read (then counted as
  // skipped).
  std::optional<std::size_t> add_call(std::string_view function, std::string_view fields);
  // One call already read (the router's, trace/gemm_call.h): counted on the record of the same
  // problem, algorithm, entry and route; nullopt past kMaxGemmProblems.
  std::optional<std::size_t> add_record(GemmCallRecord r);
  const CublasLtLog& log() const { return log_; }

 private:
  CublasLtLog log_;
  std::unordered_map<std::string, std::size_t> index_;  // problem and algorithm -> calls[i]
};

CublasLtLog parse_cublaslt_log(std::string_view text);
// A call the router read (its enum values) as a record spelled the way cuBLASLt's log spells it
// (R_16BF, COMPUTE_32F_FAST_TF32, OP_T, EPILOGUE_BIAS), so every reader treats both alike; an
// unknown value keeps its number ("R_99"); algorithm ids as numbers ("tile 18").
GemmCallRecord gemm_call_record(const ktune_gemm_call& call);
// Reads a recorded log file (the fixtures); ktune::Error naming the file when it cannot be read.
CublasLtLog read_cublaslt_log(const std::filesystem::path& path);

}  // namespace ktune::trace
