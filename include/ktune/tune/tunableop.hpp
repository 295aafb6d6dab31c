#pragma once
// PyTorch TunableOp's results file (CSV) for cached GEMM winners: "Validator,NAME,VALUE" lines,
// then one "GemmTunableOp_<type>_<layout>,<layout>_<m>_<n>_<k>,<solution>,<ms>" row per winner.
// PyTorch's CUDA build registers only the "Default" solution for its GEMM TunableOps (the
// rocBLAS/hipBLASLt solutions exist on ROCm only), so a CUDA build cannot take a cuBLASLt
// algorithm from this file; ktune writes the cuBLASLt solution as "Gemm_Cublaslt_<algo_id>" for
// the record, and the Python package routes the tuned shapes itself (docs/python.md).
#include <string>
#include <utility>
#include <vector>

#include "ktune/store/cache_entry.hpp"

namespace ktune::tune {

// PyTorch's type name in the op name ("Half", "BFloat16", "float") for a cache dtype ("f16", ...);
// ktune::Error for one TunableOp has no GEMM for.
std::string tunableop_type(const std::string& dtype);

// The file's text. `validators` are written first, in order (e.g. {"PT_VERSION", "2.11.0"}).
// Entries that are not cuBLASLt GEMM winners (op gemm / gemm_bias, config.library cublaslt) are
// skipped; `skipped` (if given) counts them.
std::string tunableop_csv(const std::vector<store::CacheEntry>& entries,
                          const std::vector<std::pair<std::string, std::string>>& validators,
                          std::size_t* skipped = nullptr);

}  // namespace ktune::tune
