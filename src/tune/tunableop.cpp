#include "ktune/tune/tunableop.hpp"

#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "ktune/bench/gemm_problem.hpp"
#include "ktune/core/dtype.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"

namespace ktune::tune {

std::string tunableop_type(const std::string& dtype) {
  switch (find_dtype(dtype).value_or(DType::u8)) {
    case DType::f16:
      return "Half";
    case DType::bf16:
      return "BFloat16";
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    default:
      break;
  }
  throw Error(
      fmt::format("dtype '{}' has no PyTorch TunableOp GEMM; only f16, bf16, f32 and f64 "
                  "entries can be exported.",
                  dtype));
}

std::string tunableop_csv(const std::vector<store::CacheEntry>& entries,
                          const std::vector<std::pair<std::string, std::string>>& validators,
                          std::size_t* skipped) {
  std::string out;
  for (const auto& [name, value] : validators) out += fmt::format("Validator,{},{}\n", name, value);
  std::size_t left_out = 0;
  for (const auto& e : entries) {
    // TunableOp's plain GEMM rows: unbatched, no epilogue, a type it names.
    std::optional<bench::GemmProblem> p;
    if (bench::is_gemm_cache_op(e.key.op) && e.config.value("library", "") == "cublaslt" &&
        !e.invalidated_at) {
      try {
        p = bench::gemm_problem_of_key(e.key.op, e.key.dtype, e.shape, "cache entry");
      } catch (const Error&) {
      }
    }
    // cuBLASLt's algorithm id is an int; an entry whose config says otherwise (a string, a
    // fraction, a number past int's range) is left out like any row TunableOp cannot take,
    // never the end of the export nor a wrapped -1.
    std::optional<std::int64_t> algo;
    if (const auto a = e.config.find("algo_id"); a != e.config.end()) try {
        algo = json_integer(*a, "algo_id", 0, std::numeric_limits<std::int32_t>::max());
      } catch (const Error&) {
      }
    if (!p || !algo || p->batch != 1 || p->epilogue != bench::GemmEpilogue::none ||
        p->compute != bench::GemmCompute::f32) {
      ++left_out;
      continue;
    }
    // TunableOp writes the layout in lower case in the parameters and upper case in the op name.
    const std::string layout = bench::gemm_layout(*p);
    std::string lower = layout;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += fmt::format("GemmTunableOp_{}_{},{}_{}_{}_{},Gemm_Cublaslt_{},{:.6f}\n",
                       tunableop_type(e.key.dtype), layout, lower, p->m, p->n, p->k, *algo,
                       e.median_ns / 1e6);
  }
  if (skipped) *skipped = left_out;
  return out;
}

}  // namespace ktune::tune
