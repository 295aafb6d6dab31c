#include "ktune/bench/cublaslt_gemm.hpp"

#include <cstring>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/half.hpp"
#include "ktune/cuda/cublaslt.hpp"

namespace ktune::bench {
namespace {

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f32:
      return CUDA_R_32F;
    default:
      throw Error(
          fmt::format("cuBLASLt GEMMs are searched in f16, bf16 and f32, not {}; pass --dtype f16, "
                      "bf16, f32 or tf32.",
                      to_string(t)));
  }
}

cublasComputeType_t lt_compute(GemmCompute c) {
  switch (c) {
    case GemmCompute::f32:
      return CUBLAS_COMPUTE_32F;
    case GemmCompute::tf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::fast_f16:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case GemmCompute::fast_bf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GemmCompute::f16:
      return CUBLAS_COMPUTE_16F;
  }
  return CUBLAS_COMPUTE_32F;
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::relu:
      return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::relu_bias:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::gelu:
      return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::gelu_bias:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
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

LtGemm::LtGemm(const GemmProblem& problem)
    : problem_(resolved(problem)),
      type_(lt_type(problem.dtype)),
      scale_type_(problem.compute == GemmCompute::f16 ? CUDA_R_16F : CUDA_R_32F),
      compute_(lt_compute(problem.compute)) {
  validate(problem_, "cuBLASLt GEMM");
  const GemmProblem& p = problem_;
  const auto& lt = cuda::cublaslt();
  KTUNE_CUBLAS(lt.cublasLtCreate(&handle_));
  try {
    KTUNE_CUBLAS(lt.cublasLtMatmulDescCreate(&op_, compute_, scale_type_));
    const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                            tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const cublasLtEpilogue_t epi = lt_epilogue(p.epilogue);
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (has_bias(p.epilogue))
      KTUNE_CUBLAS(lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                     &type_, sizeof type_));
    const auto layout = [&](cublasLtMatrixLayout_t& out, const StoredMatrix& s) {
      KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&out, type_, static_cast<std::uint64_t>(s.rows),
                                                 static_cast<std::uint64_t>(s.cols), s.ld));
      if (p.batch > 1) {
        const std::int32_t count = static_cast<std::int32_t>(p.batch);
        const std::int64_t stride = s.stride;
        KTUNE_CUBLAS(lt.cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                         &count, sizeof count));
        KTUNE_CUBLAS(lt.cublasLtMatrixLayoutSetAttribute(
            out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
      }
    };
    if (p.batch > INT32_MAX)
      throw Error(fmt::format("cuBLASLt takes at most {} batches, not {}.", INT32_MAX, p.batch));
    layout(a_, stored_a(p));
    layout(b_, stored_b(p));
    layout(c_, stored_c(p));
    layout(d_, stored_d(p));
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
  if (c_) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(c_));
  if (b_) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(b_));
  if (a_) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(a_));
  if (op_) KTUNE_CUBLAS_WARN(lt.cublasLtMatmulDescDestroy(op_));
  if (handle_) KTUNE_CUBLAS_WARN(lt.cublasLtDestroy(handle_));
  d_ = c_ = b_ = a_ = nullptr;
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
    return lt.cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, c_, d_, pref, count,
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
  KTUNE_CUBLAS(lt.cublasLtMatmulAlgoGetIds(handle_, compute_, scale_type_, type_, type_, type_,
                                           type_, static_cast<int>(ids.size()), ids.data(),
                                           &returned));
  std::vector<LtAlgoCaps> out;
  for (int i = 0; i < returned; ++i) {
    cublasLtMatmulAlgo_t algo{};
    if (lt.cublasLtMatmulAlgoInit(handle_, compute_, scale_type_, type_, type_, type_, type_,
                                  ids[i], &algo) != CUBLAS_STATUS_SUCCESS)
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
  KTUNE_CUBLAS(cuda::cublaslt().cublasLtMatmulAlgoInit(handle_, compute_, scale_type_, type_, type_,
                                                       type_, type_, c.algo_id, &algo));
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
  if (cuda::cublaslt().cublasLtMatmulAlgoCheck(handle_, op_, a_, b_, c_, d_, &algo, &result) !=
      CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  LtAlgoConfig c = describe(algo);
  c.source = config.source;
  c.heuristic_rank = config.heuristic_rank;
  c.workspace_bytes = result.workspaceSize;
  return c;
}

void LtGemm::run(const cublasLtMatmulAlgo_t& algo, const GemmBuffers& buf, void* workspace,
                 std::size_t workspace_bytes, CUstream stream, float alpha, float beta) const {
  const auto& lt = cuda::cublaslt();
  if (has_bias(problem_.epilogue))
    KTUNE_CUBLAS(lt.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &buf.bias, sizeof buf.bias));
  const void* c = buf.c ? buf.c : buf.d;
  // The scale type is fp32 except for fp16 accumulation, whose alpha and beta are fp16.
  const std::uint16_t alpha16 = float_to_half(alpha), beta16 = float_to_half(beta);
  const void* pa = scale_type_ == CUDA_R_16F ? static_cast<const void*>(&alpha16) : &alpha;
  const void* pb = scale_type_ == CUDA_R_16F ? static_cast<const void*>(&beta16) : &beta;
  KTUNE_CUBLAS(lt.cublasLtMatmul(handle_, op_, pa, buf.a, a_, buf.b, b_, pb, c, c_, buf.d, d_,
                                 &algo, workspace, workspace_bytes,
                                 reinterpret_cast<cudaStream_t>(stream)));
}

std::string cublaslt_version() {
  const std::size_t v = cuda::cublaslt().cublasLtGetVersion();  // major*10000 + minor*100 + patch
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

}  // namespace ktune::bench
