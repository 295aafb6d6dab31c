// cuBLASLt's log, as ktune profile --gemm-shapes reads it after the program exits: the bytes go
// through the line parser, and the calls it keeps through grouping and the tune commands. Nothing
// in a log may throw or crash; every kept call must be a well-formed GEMM.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ktune/analyze/gemm_calls.hpp"
#include "ktune/trace/cublaslt_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ktune::trace::CublasLtLog log = ktune::trace::parse_cublaslt_log(text);
  std::uint64_t calls = 0;
  for (const auto& r : log.calls) {
    if (r.m <= 0 || r.n <= 0 || r.k <= 0 || r.batch <= 0 || r.calls == 0) std::abort();
    calls += r.calls;
  }
  if (calls != log.matmul_calls || log.calls.size() > ktune::trace::kMaxGemmProblems) std::abort();
  (void)ktune::analyze::group_gemm_calls(log.calls, true);
  return 0;
}
