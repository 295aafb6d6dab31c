#include "ktune/bench/cublaslt_gemm.hpp"

#include <cstring>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/cuda/cublaslt.hpp"

namespace ktune::bench {
namespace {

cudaDataType_t lt_type(cuda::DType t) {
  switch (t) {
    case cuda::DType::f16:
      return CUDA_R_16F;
    case cuda::DType::bf16:
      return CUDA_R_16BF;
    default:
      throw Error(
          fmt::format("cuBLASLt GEMM tuning takes f16 or bf16, not {}; pass --dtype f16 or "
                      "--dtype bf16.",
                      cuda::to_string(t)));
  }
}

std::string to_hex(const cublasLtMatmulAlgo_t& algo) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(&algo);
  for (std::size_t i = 0; i < sizeof algo; ++i) out += fmt::format("{:02x}", p[i]);
  return out;
}

bool from_hex(const std::string& hex, cublasLtMatmulAlgo_t& algo) {
  if (hex.size() != 2 * sizeof algo) return false;
  auto* p = reinterpret_cast<unsigned char*>(&algo);
  for (std::size_t i = 0; i < sizeof algo; ++i)
    p[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}

// A config attribute's value whatever its width (16 or 32 bits), 0 when the attribute is unknown to
// this cuBLASLt.
std::uint32_t get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t a) {
  const auto& lt = cuda::cublaslt();
  std::size_t size = 0;
  if (lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, a, nullptr, 0, &size) !=
          CUBLAS_STATUS_SUCCESS ||
      size == 0 || size > 4)
    return 0;
  std::uint32_t v = 0;
  lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, size, &size);
  return v;
}

bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t a,
                std::uint32_t v) {
  const auto& lt = cuda::cublaslt();
  std::size_t size = 0;
  if (lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, a, nullptr, 0, &size) !=
          CUBLAS_STATUS_SUCCESS ||
      size == 0 || size > 4)
    return v == 0;  // an attribute this version lacks can only be left at its default
  if (size == 2) {
    const auto v16 = static_cast<std::uint16_t>(v);
    return lt.cublasLtMatmulAlgoConfigSetAttribute(&algo, a, &v16, size) == CUBLAS_STATUS_SUCCESS;
  }
  return lt.cublasLtMatmulAlgoConfigSetAttribute(&algo, a, &v, size) == CUBLAS_STATUS_SUCCESS;
}

std::vector<std::uint32_t> cap_list(const cublasLtMatmulAlgo_t& algo,
                                    cublasLtMatmulAlgoCapAttributes_t a) {
  const auto& lt = cuda::cublaslt();
  std::size_t size = 0;
  if (lt.cublasLtMatmulAlgoCapGetAttribute(&algo, a, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS ||
      size == 0)
    return {};
  std::vector<std::uint32_t> v(size / sizeof(std::uint32_t));
  lt.cublasLtMatmulAlgoCapGetAttribute(&algo, a, v.data(), v.size() * sizeof(std::uint32_t), &size);
  std::vector<std::uint32_t> out;
  for (auto x : v)
    if (x != 0) out.push_back(x);  // 0 is the "undefined" tile / stage id
  return out;
}

template <class T>
T cap_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t a) {
  T v{};
  std::size_t size = 0;
  cuda::cublaslt().cublasLtMatmulAlgoCapGetAttribute(&algo, a, &v, sizeof v, &size);
  return v;
}

}  // namespace

void to_json(nlohmann::json& j, const LtAlgoConfig& c) {
  j = {{"library", "cublaslt"},
       {"algo_id", c.algo_id},
       {"tile", c.tile},
       {"stages", c.stages},
       {"splitk", c.splitk},
       {"reduction", c.reduction},
       {"swizzle", c.swizzle},
       {"custom", c.custom},
       {"inner_shape", c.inner_shape},
       {"cluster_shape", c.cluster_shape},
       {"source", c.source},
       {"heuristic_rank", c.heuristic_rank},
       {"workspace_bytes", c.workspace_bytes},
       {"data", c.data}};
}

void from_json(const nlohmann::json& j, LtAlgoConfig& c) {
  auto field = [&](const char* name, auto& out) {
    if (!j.contains(name)) return;
    try {
      j.at(name).get_to(out);
    } catch (const nlohmann::json::exception&) {
      throw Error(fmt::format("cuBLASLt config field \"{}\" is {}; it must be a number.", name,
                              j.at(name).dump()));
    }
  };
  if (!j.is_object() || !j.contains("algo_id"))
    throw Error(
        "a cuBLASLt config needs \"algo_id\"; tune one with ktune tune --library cublaslt.");
  field("algo_id", c.algo_id);
  field("tile", c.tile);
  field("stages", c.stages);
  field("splitk", c.splitk);
  field("reduction", c.reduction);
  field("swizzle", c.swizzle);
  field("custom", c.custom);
  field("inner_shape", c.inner_shape);
  field("cluster_shape", c.cluster_shape);
  field("heuristic_rank", c.heuristic_rank);
  field("workspace_bytes", c.workspace_bytes);
  if (j.contains("source")) c.source = j.value("source", "");
  if (j.contains("data")) c.data = j.value("data", "");
}

LtGemm::LtGemm(const LtGemmShape& shape) : shape_(shape), type_(lt_type(shape.dtype)) {
  if (shape_.m <= 0 || shape_.n <= 0 || shape_.k <= 0)
    throw Error(
        fmt::format("GEMM shape m={},n={},k={} has a non-positive size; give positive m, n "
                    "and k.",
                    shape_.m, shape_.n, shape_.k));
  if (shape_.lda == 0) shape_.lda = shape_.k;
  if (shape_.ldb == 0) shape_.ldb = shape_.k;
  if (shape_.ldd == 0) shape_.ldd = shape_.m;
  const auto& lt = cuda::cublaslt();
  KTUNE_CUBLAS(lt.cublasLtCreate(&handle_));
  try {
    KTUNE_CUBLAS(lt.cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (shape_.bias) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      KTUNE_CUBLAS(
          lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
      KTUNE_CUBLAS(lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                     &type_, sizeof type_));
    }
    KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&a_, type_, shape_.k, shape_.m, shape_.lda));
    KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&b_, type_, shape_.k, shape_.n, shape_.ldb));
    KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&d_, type_, shape_.m, shape_.n, shape_.ldd));
  } catch (...) {
    release();
    throw;
  }
}

LtGemm::~LtGemm() {
  release();
}

void LtGemm::release() noexcept {
  const auto& lt = cuda::cublaslt();
  if (d_) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(d_));
  if (b_) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(b_));
  if (a_) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(a_));
  if (op_) KTUNE_CUBLAS_WARN(lt.cublasLtMatmulDescDestroy(op_));
  if (handle_) KTUNE_CUBLAS_WARN(lt.cublasLtDestroy(handle_));
  d_ = b_ = a_ = nullptr;
  op_ = nullptr;
  handle_ = nullptr;
}

LtAlgoConfig LtGemm::describe(const cublasLtMatmulAlgo_t& algo) const {
  LtAlgoConfig c;
  c.algo_id = static_cast<int>(get_config(algo, CUBLASLT_ALGO_CONFIG_ID));
  c.tile = get_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  c.stages = get_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  c.splitk = get_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  c.reduction = get_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  c.swizzle = get_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  c.custom = get_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  c.inner_shape = get_config(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  c.cluster_shape = get_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  c.data = to_hex(algo);
  return c;
}

std::vector<LtAlgoConfig> LtGemm::heuristics(int count, std::size_t max_workspace_bytes) const {
  const auto& lt = cuda::cublaslt();
  cublasLtMatmulPreference_t pref = nullptr;
  KTUNE_CUBLAS(lt.cublasLtMatmulPreferenceCreate(&pref));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
  int returned = 0;
  const cublasStatus_t s = [&] {
    const cublasStatus_t w =
        lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &max_workspace_bytes, sizeof max_workspace_bytes);
    if (w != CUBLAS_STATUS_SUCCESS) return w;
    return lt.cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, d_, d_, pref, count,
                                             results.data(), &returned);
  }();
  KTUNE_CUBLAS_WARN(lt.cublasLtMatmulPreferenceDestroy(pref));
  KTUNE_CUBLAS(s);
  std::vector<LtAlgoConfig> out;
  for (int i = 0; i < returned; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    LtAlgoConfig c = describe(results[i].algo);
    c.source = "heuristic";
    c.heuristic_rank = i + 1;
    c.workspace_bytes = results[i].workspaceSize;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LtAlgoCaps> LtGemm::algo_caps() const {
  const auto& lt = cuda::cublaslt();
  std::vector<int> ids(512);
  int returned = 0;
  KTUNE_CUBLAS(lt.cublasLtMatmulAlgoGetIds(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type_, type_,
                                           type_, type_, static_cast<int>(ids.size()), ids.data(),
                                           &returned));
  std::vector<LtAlgoCaps> out;
  for (int i = 0; i < returned; ++i) {
    cublasLtMatmulAlgo_t algo{};
    if (lt.cublasLtMatmulAlgoInit(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type_, type_, type_,
                                  type_, ids[i], &algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    LtAlgoCaps caps;
    caps.algo_id = ids[i];
    caps.tiles = cap_list(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
    caps.stages = cap_list(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
    caps.splitk = cap_value<std::int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
    caps.reduction_mask = cap_value<std::uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    caps.swizzle = cap_value<std::uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) != 0;
    caps.custom_max = cap_value<std::int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
    out.push_back(std::move(caps));
  }
  return out;
}

cublasLtMatmulAlgo_t LtGemm::prepare(const LtAlgoConfig& c) const {
  cublasLtMatmulAlgo_t algo{};
  if (!c.data.empty() && from_hex(c.data, algo)) return algo;
  KTUNE_CUBLAS(cuda::cublaslt().cublasLtMatmulAlgoInit(
      handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type_, type_, type_, type_, c.algo_id, &algo));
  const bool ok = set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, c.tile) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, c.stages) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.splitk) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c.reduction) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c.swizzle) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c.custom) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c.inner_shape) &&
                  set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c.cluster_shape);
  if (!ok)
    throw Error(
        fmt::format("cuBLASLt rejects algorithm {} with tile {}, stages {}, split-K {}; "
                    "tune this shape again with ktune tune --library cublaslt.",
                    c.algo_id, c.tile, c.stages, c.splitk));
  return algo;
}

std::optional<LtAlgoConfig> LtGemm::check(const LtAlgoConfig& config) const {
  cublasLtMatmulAlgo_t algo{};
  try {
    algo = prepare(config);
  } catch (const Error&) {
    return std::nullopt;
  }
  cublasLtMatmulHeuristicResult_t result{};
  if (cuda::cublaslt().cublasLtMatmulAlgoCheck(handle_, op_, a_, b_, d_, d_, &algo, &result) !=
      CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  LtAlgoConfig c = describe(algo);
  c.source = config.source;
  c.heuristic_rank = config.heuristic_rank;
  c.workspace_bytes = result.workspaceSize;
  return c;
}

void LtGemm::run(const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d,
                 const void* bias, void* workspace, std::size_t workspace_bytes,
                 CUstream stream) const {
  const auto& lt = cuda::cublaslt();
  if (shape_.bias)
    KTUNE_CUBLAS(lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                   sizeof bias));
  const float alpha = 1.0f, beta = 0.0f;
  KTUNE_CUBLAS(lt.cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo,
                                 workspace, workspace_bytes,
                                 reinterpret_cast<cudaStream_t>(stream)));
}

void LtGemm::run(const LtAlgoConfig& config, const void* a, const void* b, void* d,
                 const void* bias, void* workspace, std::size_t workspace_bytes,
                 CUstream stream) const {
  run(prepare(config), a, b, d, bias, workspace, workspace_bytes, stream);
}

std::string cublaslt_version() {
  const std::size_t v = cuda::cublaslt().cublasLtGetVersion();  // major*10000 + minor*100 + patch
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

}  // namespace ktune::bench
