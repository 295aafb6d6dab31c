#include "ktune/route/table.hpp"

#include <algorithm>

#include <cublasLt.h>
#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::route {
namespace {

// The tracer spells a router call's enums by these numbers without cuBLAS's headers
// (trace::gemm_call_record): the headers must agree.
static_assert(CUDA_R_32F == 0 && CUDA_R_16F == 2 && CUDA_R_16BF == 14 && CUDA_R_8F_E4M3 == 28);
static_assert(CUBLAS_COMPUTE_16F == 64 && CUBLAS_COMPUTE_32F == 68 &&
              CUBLAS_COMPUTE_32F_FAST_16F == 74 && CUBLAS_COMPUTE_32F_FAST_16BF == 75 &&
              CUBLAS_COMPUTE_32F_FAST_TF32 == 77);
static_assert(CUBLAS_OP_N == 0 && CUBLAS_OP_T == 1 && CUBLAS_OP_C == 2);
static_assert(CUBLASLT_EPILOGUE_DEFAULT == 1 && CUBLASLT_EPILOGUE_RELU == 2 &&
              CUBLASLT_EPILOGUE_BIAS == 4 && CUBLASLT_EPILOGUE_RELU_BIAS == 6 &&
              CUBLASLT_EPILOGUE_GELU == 32 && CUBLASLT_EPILOGUE_GELU_BIAS == 36);

std::optional<DType> element_type(std::int32_t t) {
  switch (t) {
    case CUDA_R_16F:
      return DType::f16;
    case CUDA_R_16BF:
      return DType::bf16;
    case CUDA_R_32F:
      return DType::f32;
    default:
      return std::nullopt;
  }
}

std::optional<bench::GemmCompute> compute_of(std::int32_t c, DType t) {
  switch (c) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return bench::GemmCompute::f32;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return t == DType::f32 ? bench::GemmCompute::tf32 : bench::GemmCompute::f32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return bench::GemmCompute::fast_f16;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return bench::GemmCompute::fast_bf16;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return bench::GemmCompute::f16;
    default:
      return std::nullopt;
  }
}

std::optional<bench::GemmEpilogue> epilogue_of(std::int32_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return bench::GemmEpilogue::none;
    case CUBLASLT_EPILOGUE_BIAS:
      return bench::GemmEpilogue::bias;
    case CUBLASLT_EPILOGUE_RELU:
      return bench::GemmEpilogue::relu;
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return bench::GemmEpilogue::relu_bias;
    case CUBLASLT_EPILOGUE_GELU:
      return bench::GemmEpilogue::gelu;
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return bench::GemmEpilogue::gelu_bias;
    default:
      return std::nullopt;
  }
}

std::uint64_t size_hash(std::int64_t m, std::int64_t n) {
  return static_cast<std::uint64_t>(m) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(n);
}

}  // namespace

std::optional<bench::GemmProblem> problem_of(const ktune_gemm_call& c, std::string* why) {
  const auto no = [&](std::string reason) -> std::optional<bench::GemmProblem> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (c.order != 0) return no("a matrix is not column-major");
  if (c.pointer_mode != 0) return no("alpha and beta are on the device");
  if (!c.aligned)
    return no(
        "a pointer is not 256-byte aligned (winners are measured on 256-byte aligned buffers)");
  const auto t = element_type(c.a_type);
  if (!t || c.b_type != c.a_type || c.c_type != c.a_type || c.d_type != c.a_type)
    return no("its element types are not one of f16, bf16 and f32 throughout");
  const auto compute = compute_of(c.compute_type, *t);
  if (!compute) return no("its compute type is not one the search runs");
  const auto epilogue = epilogue_of(c.epilogue);
  if (!epilogue) return no("its epilogue is not one the search runs");
  const auto op = [](std::int32_t o) { return o == CUBLAS_OP_N ? 0 : o == CUBLAS_OP_T ? 1 : -1; };
  if (op(c.transa) < 0 || op(c.transb) < 0) return no("a conjugate transpose");
  bench::GemmProblem p;
  p.trans_a = op(c.transa) == 1;
  p.trans_b = op(c.transb) == 1;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.batch = c.batch;
  p.lda = c.lda;
  p.ldb = c.ldb;
  p.ldc = c.ldc;
  p.ldd = c.ldd;
  const bool batched = c.batch > 1;
  p.stride_a = batched ? c.stride_a : -1;
  p.stride_b = batched ? c.stride_b : -1;
  p.stride_c = batched ? c.stride_c : -1;
  p.stride_d = batched ? c.stride_d : -1;
  p.dtype = *t;
  p.compute = *compute;
  p.epilogue = *epilogue;
  try {
    bench::validate(p, "the GEMM call");
    return bench::resolved(p);
  } catch (const Error& e) {
    return no(e.what());
  }
}

std::string problem_key(const bench::GemmProblem& problem) {
  const bench::GemmProblem p = bench::resolved(problem);
  return fmt::format("{}{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", p.trans_a ? 'T' : 'N',
                     p.trans_b ? 'T' : 'N', p.m, p.n, p.k, p.batch, p.lda, p.ldb, p.ldc, p.ldd,
                     p.batch > 1 ? p.stride_a : 0, p.batch > 1 ? p.stride_b : 0,
                     p.batch > 1 ? p.stride_c : 0, p.batch > 1 ? p.stride_d : 0, to_string(p.dtype),
                     bench::to_string(p.compute), bench::to_string(p.epilogue));
}

void RouteTable::add(Winner w) {
  w.problem = bench::resolved(w.problem);
  const std::string key = problem_key(w.problem);
  if (index_.contains(key)) return;  // the first (newest, as the store lists them) wins
  index_.emplace(key, winners_.size());
  const std::uint64_t h = size_hash(w.problem.m, w.problem.n);
  sizes_.insert(std::upper_bound(sizes_.begin(), sizes_.end(), h), h);
  if (!w.kept)
    routable_sizes_.insert(std::upper_bound(routable_sizes_.begin(), routable_sizes_.end(), h), h);
  winners_.push_back(std::move(w));
}

const Winner* RouteTable::find(const bench::GemmProblem& p) const {
  const auto it = index_.find(problem_key(p));
  return it == index_.end() ? nullptr : &winners_[it->second];
}

bool RouteTable::may_hold(std::int64_t m, std::int64_t n, bool routable) const {
  const auto& sizes = routable ? routable_sizes_ : sizes_;
  return std::binary_search(sizes.begin(), sizes.end(), size_hash(m, n));
}

RouteTable RouteTable::from_entries(const std::vector<store::CacheEntry>& entries) {
  RouteTable t;
  for (const auto& e : entries) {
    if (e.invalidated_at || e.verification != "passed" || !bench::is_gemm_cache_op(e.key.op) ||
        e.config.value("library", "") != "cublaslt")
      continue;
    try {
      Winner w;
      w.problem = e.config.contains("problem")
                      ? e.config.at("problem").get<bench::GemmProblem>()
                      : bench::gemm_problem_of_key(e.key.op, e.key.dtype, e.shape, "cache entry");
      w.config = e.config.get<bench::LtAlgoConfig>();
      const std::string field = e.config.value("field_verdict", "");
      w.kept = w.config.heuristic_rank == 1 || field == "demoted";
      w.confirmed = field == "routed";
      w.median_ns = e.median_ns;
      w.noise_ns = e.noise_ns;
      w.default_median_ns = e.provenance.budget.value("default_median_ns", 0.0);
      w.op = e.key.op;
      w.dtype = e.key.dtype;
      w.shape = e.shape;
      w.cublaslt_version = e.config.value("cublaslt_version", "");
      t.add(std::move(w));
    } catch (const std::exception&) {
      // An entry written by a ktune that stored less: it is not served, never misread.
    }
  }
  return t;
}

nlohmann::json RouteTable::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& w : winners_)
    list.push_back({{"problem", w.problem},
                    {"config", w.config},
                    {"kept", w.kept},
                    {"confirmed", w.confirmed},
                    {"median_ns", w.median_ns},
                    {"noise_ns", w.noise_ns},
                    {"default_median_ns", w.default_median_ns},
                    {"op", w.op},
                    {"dtype", w.dtype},
                    {"shape", w.shape},
                    {"cublaslt_version", w.cublaslt_version}});
  return {{"schema_version", kTableSchemaVersion}, {"winners", std::move(list)}};
}

RouteTable RouteTable::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("schema_version", 0) != kTableSchemaVersion ||
      !j.contains("winners") || !j.at("winners").is_array())
    throw Error(
        fmt::format("{} is not a ktune route table of schema_version {}; write it again "
                    "with `ktune run --write-table FILE`.",
                    where, kTableSchemaVersion));
  RouteTable t;
  std::size_t i = 0;
  for (const auto& w : j.at("winners")) {
    try {
      Winner x;
      x.problem = w.at("problem").get<bench::GemmProblem>();
      x.config = w.at("config").get<bench::LtAlgoConfig>();
      x.kept = w.at("kept").get<bool>();
      x.confirmed = w.value("confirmed", false);
      x.median_ns = w.value("median_ns", 0.0);
      x.noise_ns = w.value("noise_ns", 0.0);
      x.default_median_ns = w.value("default_median_ns", 0.0);
      x.op = w.value("op", "");
      x.dtype = w.value("dtype", "");
      x.shape = w.value("shape", std::vector<std::int64_t>{});
      x.cublaslt_version = w.value("cublaslt_version", "");
      t.add(std::move(x));
    } catch (const std::exception& e) {
      throw Error(
          fmt::format("{}: winners[{}] cannot be read ({}); write the table again with "
                      "`ktune run --write-table FILE`.",
                      where, i, e.what()));
    }
    ++i;
  }
  return t;
}

}  // namespace ktune::route
