#include "ktune/tune/tunableop.hpp"

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::tune {

std::string tunableop_type(const std::string& dtype) {
  if (dtype == "f16" || dtype == "float16" || dtype == "half") return "Half";
  if (dtype == "bf16" || dtype == "bfloat16") return "BFloat16";
  if (dtype == "f32" || dtype == "float32" || dtype == "float") return "float";
  if (dtype == "f64" || dtype == "float64" || dtype == "double") return "double";
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
    const bool gemm = (e.key.op == "gemm" || e.key.op == "gemm_bias") && e.shape.size() == 3 &&
                      e.config.value("library", "") == "cublaslt" && !e.invalidated_at;
    if (!gemm) {
      ++left_out;
      continue;
    }
    // ktune's GEMM layout is BLAS "TN" (A transposed); TunableOp writes the layout in lower case
    // in the parameters and upper case in the op name.
    out += fmt::format("GemmTunableOp_{}_TN,tn_{}_{}_{},Gemm_Cublaslt_{},{:.6f}\n",
                       tunableop_type(e.key.dtype), e.shape[0], e.shape[1], e.shape[2],
                       e.config.value("algo_id", 0), e.median_ns / 1e6);
  }
  if (skipped) *skipped = left_out;
  return out;
}

}  // namespace ktune::tune
