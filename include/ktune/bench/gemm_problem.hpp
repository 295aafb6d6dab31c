#pragma once
// One GEMM problem as cuBLASLt runs it, in every form PyTorch uses: D = act(alpha op(A) op(B) +
// beta C + bias), BLAS column-major as cuBLASLt's descriptors are (D is m x n, k the reduction),
// op() N or T per operand, strided-batched, an element type for A, B, C, D and bias, a compute
// type and an epilogue. Plain C++: the profile's GEMM calls (analyze), the library search (tune),
// the queue's library jobs (fleet) and the Python router all describe problems with this, and its
// cache key is made here alone, so every producer and reader of a GEMM winner spells it the same.
//
// A row-major torch matmul x[r, k] @ W[k, c] is column-major D^T = W^T x^T: m = c, n = r, with A =
// W and B = x. A torch.nn.Linear y = x W^T (W[c, k]) is layout TN; x @ W is NN.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/core/dtype.hpp"

namespace ktune::bench {

// What cuBLASLt applies to the product before writing D (CUBLASLT_EPILOGUE_*); the bias is a
// vector of m elements added to every column.
enum class GemmEpilogue { none, bias, relu, relu_bias, gelu, gelu_bias };
const char* to_string(GemmEpilogue e);  // "none", "bias", "relu", "relu_bias", "gelu", "gelu_bias"
std::optional<GemmEpilogue> gemm_epilogue_from_string(std::string_view s);
bool has_bias(GemmEpilogue e);

// The arithmetic cuBLASLt multiplies in (cublasComputeType_t): fp32 (what PyTorch uses for f16,
// bf16 and f32), fp32 with TF32 tensor cores (f32 data with allow_tf32), fp32 taking f16 or bf16
// shortcuts, and fp16 accumulation.
enum class GemmCompute { f32, tf32, fast_f16, fast_bf16, f16 };
const char* to_string(GemmCompute c);  // "f32", "tf32", "fast_f16", "fast_bf16", "f16"
std::optional<GemmCompute> gemm_compute_from_string(std::string_view s);

struct GemmProblem {
  bool trans_a = false, trans_b = false;  // op(A) = A^T, op(B) = B^T
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  // Leading dimensions as stored (elements); 0: packed (the stored matrix's row count).
  std::int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  // Elements from one batch's matrix to the next; -1: packed (ld times columns). 0 repeats one A or
  // B for every batch (a broadcast operand, as torch's expand gives).
  std::int64_t stride_a = -1, stride_b = -1, stride_c = -1, stride_d = -1;
  DType dtype = DType::f16;  // A, B, C, D and the bias
  GemmCompute compute = GemmCompute::f32;
  GemmEpilogue epilogue = GemmEpilogue::none;
};

// "TN": op(A), op(B).
std::string gemm_layout(const GemmProblem& p);
// The stored rows and columns of each operand (A is k x m when transposed, else m x k; C and D
// m x n).
struct StoredMatrix {
  std::int64_t rows = 0, cols = 0, ld = 0, stride = 0;
  // Elements a buffer needs to hold every batch's matrix.
  std::int64_t elements(std::int64_t batch) const;
};
StoredMatrix stored_a(const GemmProblem& p);
StoredMatrix stored_b(const GemmProblem& p);
StoredMatrix stored_c(const GemmProblem& p);
StoredMatrix stored_d(const GemmProblem& p);
// The problem with every packed ld and stride spelled out.
GemmProblem resolved(const GemmProblem& p);

// Throws ktune::Error naming `where`, the field and the fix when the problem is not one cuBLASLt
// can run: a size not positive, a leading dimension below its rows, outputs of two batches that
// overlap, a compute type the element type does not allow.
void validate(const GemmProblem& p, const std::string& where);

double gemm_flop(const GemmProblem& p);  // 2 m n k batch

// --- the cache key: op "gemm_<layout>[_<epilogue>]", dtype, shape [m, n, k, batch] ---
std::string gemm_cache_op(const GemmProblem& p);  // "gemm_tn", "gemm_nn_bias", "gemm_tn_gelu_bias"
// The element type's name, "tf32" for f32 data in TF32, else "<dtype>,<compute>" for the rarer
// compute types ("f16,f16" for fp16 accumulation).
std::string gemm_cache_dtype(const GemmProblem& p);
std::vector<std::int64_t> gemm_cache_shape(const GemmProblem& p);
// Whether `op` is a GEMM op of the library search (gemm_cache_op's form).
bool is_gemm_cache_op(std::string_view op);
// The problem a cache key names (packed layouts); ktune::Error naming `where` and the form
// expected when op, dtype or shape is not one gemm_cache_* makes.
GemmProblem gemm_problem_of_key(std::string_view op, std::string_view dtype,
                                std::span<const std::int64_t> shape, const std::string& where);

// The command that tunes `p`: "ktune tune --library cublaslt --op gemm_nn --shape
// m=..,n=..,k=..[,batch=..] --dtype bf16". Packed layouts: leading dimensions do not enter a
// cache key.
std::string gemm_tune_command(const GemmProblem& p);

// {"layout": "TN", "m", "n", "k", "batch", "lda", "ldb", "ldc", "ldd", "stride_a", "stride_b",
//  "stride_c", "stride_d", "dtype": "bf16", "compute": "f32", "epilogue": "bias"}
void to_json(nlohmann::json& j, const GemmProblem& p);
// ktune::Error naming the field when one is missing, mistyped or unknown; validate()d.
void from_json(const nlohmann::json& j, GemmProblem& p);

// How far a correct result of `p` may be from another correct one (a float64 reference, or another
// algorithm): `per_sqrt_k` for what the compute type rounds away in a k-long sum of products of
// inputs in [-1, 1) (TF32 and the fast modes round every input; fp32 accumulation adds next to
// nothing), which grows with sqrt(k); `abs` and `rel` for rounding the result to the element type.
// A split-K sum reduced in a 16-bit output type rounds every partial sum and exceeds it: such an
// algorithm is less accurate than cuBLASLt's own choice, and is refused as a wrong result.
struct GemmTolerance {
  double per_sqrt_k = 0, abs = 0, rel = 0;
  double bound(double k, double reference) const;  // per_sqrt_k*sqrt(k) + abs + rel*|reference|
};
GemmTolerance gemm_tolerance(const GemmProblem& p);

// Host float64 values of one output element from the stored inputs (as downloaded, `dtype`
// elements): the plain sum alpha * op(A) op(B) + beta C + bias before the epilogue's activation,
// and the value after it with each of GELU's two forms (erf and tanh; cuBLASLt documents neither).
struct GemmElement {
  double linear = 0;
  double relu = 0, gelu_erf = 0, gelu_tanh = 0;
};
struct GemmHostInputs {
  std::span<const std::byte> a, b, c, bias;  // c and bias may be empty when unused
  double alpha = 1, beta = 0;
};
GemmElement gemm_host_element(const GemmProblem& p, const GemmHostInputs& in, std::int64_t batch,
                              std::int64_t i, std::int64_t j);
// Whether `got` agrees with the host element for `p`'s epilogue within gemm_tolerance.
bool gemm_element_agrees(const GemmProblem& p, const GemmElement& want, double got);

}  // namespace ktune::bench
