#pragma once
// One cuBLASLt GEMM problem (bench/gemm_problem.hpp: any layout, strided batch, epilogue, element
// and compute type) and the algorithm configurations it can run with: the candidates a library
// search measures (tune/gemm_library.hpp) and the plan an application replays the winner with
// (the Python package routes PyTorch's matmuls through it).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/gemm_problem.hpp"
#include "ktune/cuda/device_utils.hpp"

namespace ktune::bench {

// One algorithm configuration, as cuBLASLt's config attributes name it. `data` is the opaque
// algorithm blob itself (hex), which reproduces the configuration exactly under the same cuBLASLt
// version; the named fields say what it is and rebuild it when the blob is absent.
struct LtAlgoConfig {
  int algo_id = 0;
  std::uint32_t tile = 0, stages = 0, splitk = 1, reduction = 0, swizzle = 0, custom = 0;
  std::uint32_t inner_shape = 0, cluster_shape = 0;
  std::string source;               // "heuristic" (cuBLASLt's rank 1 first) or "enumerated"
  int heuristic_rank = 0;           // 1-based for heuristic candidates, 0 otherwise
  std::size_t workspace_bytes = 0;  // what cublasLtMatmulAlgoCheck asked for
  std::string data;                 // 128 hex digits of cublasLtMatmulAlgo_t, or ""
};

void to_json(nlohmann::json& j, const LtAlgoConfig& c);
// ktune::Error naming the missing or mistyped field.
void from_json(const nlohmann::json& j, LtAlgoConfig& c);

// What an algorithm id offers (cublasLtMatmulAlgoCapGetAttribute), for enumerating its configs.
struct LtAlgoCaps {
  int algo_id = 0;
  std::vector<std::uint32_t> tiles, stages;  // without the "undefined" 0 entries
  bool splitk = false;
  std::uint32_t reduction_mask = 0;  // CUBLASLT_REDUCTION_SCHEME_* bits
  bool swizzle = false;
  int custom_max = 0;
};

// The device buffers of one call; c may equal d (in place, beta != 0), bias is m elements.
struct GemmBuffers {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // nullptr: d (read only when beta != 0)
  void* d = nullptr;
  const void* bias = nullptr;  // with a bias epilogue
};

// Descriptors for one problem on one cuBLASLt handle, reusable across calls; needs a current CUDA
// context. Buffers belong to the caller.
class LtGemm {
 public:
  // ktune::Error when the problem is invalid (validate()) or cuBLASLt cannot describe it.
  explicit LtGemm(const GemmProblem& problem);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  const GemmProblem& problem() const { return problem_; }  // resolved: every ld and stride set
  // cuBLASLt's heuristic candidates, best first, within `max_workspace_bytes`.
  std::vector<LtAlgoConfig> heuristics(int count, std::size_t max_workspace_bytes) const;
  // Every algorithm id for this problem's types and what each offers.
  std::vector<LtAlgoCaps> algo_caps() const;
  // nullopt when cuBLASLt refuses the configuration for this problem (cublasLtMatmulAlgoCheck);
  // else the configuration with workspace_bytes and data filled in.
  std::optional<LtAlgoConfig> check(const LtAlgoConfig& config) const;
  // The algorithm of `config` (from its blob when it has one), built once for many run()s.
  cublasLtMatmulAlgo_t prepare(const LtAlgoConfig& config) const;
  // D = act(alpha op(A) op(B) + beta C + bias) on `stream`.
  void run(const cublasLtMatmulAlgo_t& algo, const GemmBuffers& buffers, void* workspace,
           std::size_t workspace_bytes, CUstream stream, float alpha = 1, float beta = 0) const;

 private:
  LtAlgoConfig describe(const cublasLtMatmulAlgo_t& algo) const;
  void release() noexcept;
  GemmProblem problem_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cudaDataType_t type_, scale_type_;
  cublasComputeType_t compute_;
};

// "13.0.2" style version of the loaded cuBLASLt (cublasLtGetVersion).
std::string cublaslt_version();

}  // namespace ktune::bench
