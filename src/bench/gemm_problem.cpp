#include "ktune/bench/gemm_problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/verify.hpp"
#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"

namespace ktune::bench {
namespace {

constexpr EnumName<GemmEpilogue> kEpilogueNames[] = {
    {GemmEpilogue::none, "none"}, {GemmEpilogue::bias, "bias"},
    {GemmEpilogue::relu, "relu"}, {GemmEpilogue::relu_bias, "relu_bias"},
    {GemmEpilogue::gelu, "gelu"}, {GemmEpilogue::gelu_bias, "gelu_bias"},
};

constexpr EnumName<GemmCompute> kComputeNames[] = {
    {GemmCompute::f32, "f32"},           {GemmCompute::tf32, "tf32"},
    {GemmCompute::fast_f16, "fast_f16"}, {GemmCompute::fast_bf16, "fast_bf16"},
    {GemmCompute::f16, "f16"},
};

std::int64_t packed_or(std::int64_t given, std::int64_t packed) {
  return given > 0 ? given : packed;
}

// a * b, or INT64_MAX where it would not fit: sizes and leading dimensions come from input (a
// cuBLASLt log, a queued job), each below 2^40 once validated, so their product may not fit.
std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}

StoredMatrix stored(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t stride) {
  StoredMatrix s{rows, cols, packed_or(ld, rows), 0};
  s.stride = stride >= 0 ? stride : saturating_mul(s.ld, cols);
  return s;
}

}  // namespace

const char* to_string(GemmEpilogue e) {
  return name_of(kEpilogueNames, e);
}

std::optional<GemmEpilogue> gemm_epilogue_from_string(std::string_view s) {
  return value_of(kEpilogueNames, s);
}

bool has_bias(GemmEpilogue e) {
  return e == GemmEpilogue::bias || e == GemmEpilogue::relu_bias || e == GemmEpilogue::gelu_bias;
}

const char* to_string(GemmCompute c) {
  return name_of(kComputeNames, c);
}

std::optional<GemmCompute> gemm_compute_from_string(std::string_view s) {
  return value_of(kComputeNames, s);
}

std::string gemm_layout(const GemmProblem& p) {
  return fmt::format("{}{}", p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N');
}

std::int64_t StoredMatrix::elements(std::int64_t batch) const {
  return (batch - 1) * stride + ld * (cols - 1) + rows;
}

StoredMatrix stored_a(const GemmProblem& p) {
  return p.trans_a ? stored(p.k, p.m, p.lda, p.stride_a) : stored(p.m, p.k, p.lda, p.stride_a);
}
StoredMatrix stored_b(const GemmProblem& p) {
  return p.trans_b ? stored(p.n, p.k, p.ldb, p.stride_b) : stored(p.k, p.n, p.ldb, p.stride_b);
}
StoredMatrix stored_c(const GemmProblem& p) {
  return stored(p.m, p.n, p.ldc, p.stride_c);
}
StoredMatrix stored_d(const GemmProblem& p) {
  return stored(p.m, p.n, p.ldd, p.stride_d);
}

GemmProblem resolved(const GemmProblem& p) {
  GemmProblem r = p;
  const StoredMatrix a = stored_a(p), b = stored_b(p), c = stored_c(p), d = stored_d(p);
  r.lda = a.ld;
  r.ldb = b.ld;
  r.ldc = c.ld;
  r.ldd = d.ld;
  r.stride_a = a.stride;
  r.stride_b = b.stride;
  r.stride_c = c.stride;
  r.stride_d = d.stride;
  return r;
}

void validate(const GemmProblem& p, const std::string& where) {
  constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;
  for (const auto& [name, v] : {std::pair{"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch}})
    if (v <= 0 || v > kMaxSize)
      throw Error(
          fmt::format("{}: GEMM {} is {}; give a positive size below 2^40.", where, name, v));
  const std::pair<const char*, StoredMatrix> mats[] = {
      {"a", stored_a(p)}, {"b", stored_b(p)}, {"c", stored_c(p)}, {"d", stored_d(p)}};
  for (const auto& [name, s] : mats) {
    if (s.ld < s.rows)
      throw Error(fmt::format(
          "{}: ld{} is {}, below the {} rows {} stores (column-major); give ld{} >= {} or 0 for "
          "packed.",
          where, name, s.ld, s.rows, name, name, s.rows));
    if (s.ld > kMaxSize || s.stride > kMaxSize || s.stride < 0)
      throw Error(fmt::format("{}: stride_{} is {}; give 0 or more elements, below 2^40.", where,
                              name, s.stride));
  }
  // Outputs of different batches must not share elements: each batch's D is written.
  if (p.batch > 1 && stored_d(p).stride < saturating_mul(stored_d(p).ld, p.n))
    throw Error(fmt::format(
        "{}: stride_d {} makes the {} batches' outputs overlap; give at least ldd * n = {}.", where,
        stored_d(p).stride, p.batch, saturating_mul(stored_d(p).ld, p.n)));
  const bool ok = [&] {
    switch (p.compute) {
      case GemmCompute::f32:
        return p.dtype == DType::f32 || p.dtype == DType::f16 || p.dtype == DType::bf16;
      case GemmCompute::tf32:
      case GemmCompute::fast_f16:
      case GemmCompute::fast_bf16:
        return p.dtype == DType::f32;
      case GemmCompute::f16:
        return p.dtype == DType::f16;
    }
    return false;
  }();
  if (!ok)
    throw Error(fmt::format(
        "{}: {} data cannot be multiplied in compute type {}; ktune searches f16, bf16 and f32 "
        "in f32, f32 in tf32, fast_f16 or fast_bf16, and f16 in f16.",
        where, to_string(p.dtype), to_string(p.compute)));
}

double gemm_flop(const GemmProblem& p) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
         static_cast<double>(p.batch);
}

std::string gemm_cache_op(const GemmProblem& p) {
  std::string op = "gemm_" + gemm_layout(p);
  std::transform(op.begin(), op.end(), op.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (p.epilogue != GemmEpilogue::none) op += std::string("_") + to_string(p.epilogue);
  return op;
}

std::string gemm_cache_dtype(const GemmProblem& p) {
  if (p.compute == GemmCompute::f32) return to_string(p.dtype);
  if (p.compute == GemmCompute::tf32) return "tf32";
  return fmt::format("{},{}", to_string(p.dtype), to_string(p.compute));
}

namespace {

// The problem's storage fields (ld*, batch strides) and those of the packed problem of its sizes.
struct Storage {
  std::array<std::int64_t, 8> fields;
};
Storage storage_of(const GemmProblem& p) {
  const GemmProblem r = resolved(p);
  const bool batched = r.batch > 1;  // strides of one matrix mean nothing
  return {{r.lda, r.ldb, r.ldc, r.ldd, batched ? r.stride_a : 0, batched ? r.stride_b : 0,
           batched ? r.stride_c : 0, batched ? r.stride_d : 0}};
}
Storage packed_storage_of(const GemmProblem& p) {
  GemmProblem q = p;
  q.lda = q.ldb = q.ldc = q.ldd = 0;
  q.stride_a = q.stride_b = q.stride_c = q.stride_d = -1;
  return storage_of(q);
}
constexpr const char* kStorageNames[8] = {"lda",      "ldb",      "ldc",      "ldd",
                                          "stride_a", "stride_b", "stride_c", "stride_d"};

}  // namespace

std::vector<std::int64_t> gemm_cache_shape(const GemmProblem& p) {
  std::vector<std::int64_t> shape = {p.m, p.n, p.k, p.batch};
  const Storage s = storage_of(p);
  if (s.fields != packed_storage_of(p).fields)
    shape.insert(shape.end(), s.fields.begin(), s.fields.end());
  return shape;
}

namespace {

struct OpParts {
  bool trans_a = false, trans_b = false;
  GemmEpilogue epilogue = GemmEpilogue::none;
};

std::optional<OpParts> parse_gemm_op(std::string_view op) {
  if (op.size() < 7 || op.substr(0, 5) != "gemm_") return std::nullopt;
  const char a = op[5], b = op[6];
  if ((a != 'n' && a != 't') || (b != 'n' && b != 't')) return std::nullopt;
  OpParts parts{a == 't', b == 't', GemmEpilogue::none};
  if (op.size() == 7) return parts;
  if (op[7] != '_') return std::nullopt;
  const auto e = gemm_epilogue_from_string(op.substr(8));
  if (!e || *e == GemmEpilogue::none) return std::nullopt;
  parts.epilogue = *e;
  return parts;
}

}  // namespace

bool is_gemm_cache_op(std::string_view op) {
  return parse_gemm_op(op).has_value();
}

GemmProblem gemm_problem_of_key(std::string_view op, std::string_view dtype,
                                std::span<const std::int64_t> shape, const std::string& where) {
  const auto parts = parse_gemm_op(op);
  if (!parts)
    throw Error(fmt::format(
        "{}: '{}' is not a GEMM op; name one as gemm_<layout>[_<epilogue>]: layout nn, nt, tn or "
        "tt (op(A), op(B)), epilogue bias, relu, relu_bias, gelu or gelu_bias (e.g. gemm_tn_bias).",
        where, op));
  GemmProblem p;
  p.trans_a = parts->trans_a;
  p.trans_b = parts->trans_b;
  p.epilogue = parts->epilogue;
  const std::string key = canonical_dtype_key(dtype);
  const auto comma = key.find(',');
  const std::string element = key.substr(0, comma);
  if (element == "tf32" && comma == std::string::npos) {
    p.dtype = DType::f32;
    p.compute = GemmCompute::tf32;
  } else {
    const auto t = find_dtype(element);
    const auto c = comma == std::string::npos ? std::optional(GemmCompute::f32)
                                              : gemm_compute_from_string(key.substr(comma + 1));
    if (!t || !c)
      throw Error(fmt::format(
          "{}: GEMM dtype '{}' is not one ktune searches; use f16, bf16, f32 or tf32 (f32 data "
          "multiplied in TF32).",
          where, dtype));
    p.dtype = *t;
    p.compute = *c;
  }
  if (shape.size() != 4 && shape.size() != 3 && shape.size() != 12)
    throw Error(fmt::format(
        "{}: a GEMM shape is [m, n, k, batch] (and, for storage that is not packed, lda, ldb, ldc, "
        "ldd and the four batch strides), not {} numbers.",
        where, shape.size()));
  p.m = shape[0];
  p.n = shape[1];
  p.k = shape[2];
  p.batch = shape.size() >= 4 ? shape[3] : 1;
  if (shape.size() == 12) {
    p.lda = shape[4];
    p.ldb = shape[5];
    p.ldc = shape[6];
    p.ldd = shape[7];
    if (p.batch > 1) {
      p.stride_a = shape[8];
      p.stride_b = shape[9];
      p.stride_c = shape[10];
      p.stride_d = shape[11];
    }
  }
  validate(p, where);
  return p;
}

std::string gemm_tune_command(const GemmProblem& p) {
  // The storage fields that differ from the packed problem's: the search measures what runs.
  std::string storage;
  const Storage s = storage_of(p), packed = packed_storage_of(p);
  for (std::size_t i = 0; i < s.fields.size(); ++i)
    if (s.fields[i] != packed.fields[i])
      storage += fmt::format(",{}={}", kStorageNames[i], s.fields[i]);
  return fmt::format("ktune tune --library cublaslt --op {} --shape m={},n={},k={}{}{} --dtype {}",
                     gemm_cache_op(p), p.m, p.n, p.k,
                     p.batch > 1 ? fmt::format(",batch={}", p.batch) : "", storage,
                     gemm_cache_dtype(p));
}

void to_json(nlohmann::json& j, const GemmProblem& p) {
  j = {{"layout", gemm_layout(p)},
       {"m", p.m},
       {"n", p.n},
       {"k", p.k},
       {"batch", p.batch},
       {"lda", p.lda},
       {"ldb", p.ldb},
       {"ldc", p.ldc},
       {"ldd", p.ldd},
       {"stride_a", p.stride_a},
       {"stride_b", p.stride_b},
       {"stride_c", p.stride_c},
       {"stride_d", p.stride_d},
       {"dtype", to_string(p.dtype)},
       {"compute", to_string(p.compute)},
       {"epilogue", to_string(p.epilogue)}};
}

void from_json(const nlohmann::json& j, GemmProblem& p) {
  const std::string where = "GEMM problem";
  if (!j.is_object())
    throw Error(fmt::format("{}: expected a JSON object, not {}.", where, j.type_name()));
  static const char* const kFields[] = {
      "layout", "m",        "n",        "k",        "batch",    "lda",   "ldb",     "ldc",
      "ldd",    "stride_a", "stride_b", "stride_c", "stride_d", "dtype", "compute", "epilogue"};
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (std::find_if(std::begin(kFields), std::end(kFields),
                     [&](const char* f) { return key == f; }) == std::end(kFields))
      throw Error(fmt::format("{}: unknown field \"{}\".", where, key));
  }
  const auto text = [&](const char* name, const char* fallback) -> std::string {
    if (!j.contains(name)) return fallback;
    if (!j.at(name).is_string())
      throw Error(
          fmt::format("{}: \"{}\" must be a string, not {}.", where, name, j.at(name).dump()));
    return j.at(name).get<std::string>();
  };
  const auto number = [&](const char* name, std::int64_t fallback) -> std::int64_t {
    if (!j.contains(name)) return fallback;
    if (!j.at(name).is_number_integer())
      throw Error(
          fmt::format("{}: \"{}\" must be an integer, not {}.", where, name, j.at(name).dump()));
    return j.at(name).get<std::int64_t>();
  };
  GemmProblem r;
  const std::string layout = text("layout", "TN");
  if (layout.size() != 2 || (layout[0] != 'N' && layout[0] != 'T') ||
      (layout[1] != 'N' && layout[1] != 'T'))
    throw Error(fmt::format("{}: \"layout\" is \"{}\"; use NN, NT, TN or TT.", where, layout));
  r.trans_a = layout[0] == 'T';
  r.trans_b = layout[1] == 'T';
  r.m = number("m", 0);
  r.n = number("n", 0);
  r.k = number("k", 0);
  r.batch = number("batch", 1);
  r.lda = number("lda", 0);
  r.ldb = number("ldb", 0);
  r.ldc = number("ldc", 0);
  r.ldd = number("ldd", 0);
  r.stride_a = number("stride_a", -1);
  r.stride_b = number("stride_b", -1);
  r.stride_c = number("stride_c", -1);
  r.stride_d = number("stride_d", -1);
  const std::string dtype = text("dtype", "f16");
  const auto t = find_dtype(dtype);
  if (!t) throw Error(fmt::format("{}: \"dtype\" '{}' is not a data type.", where, dtype));
  r.dtype = *t;
  const std::string compute = text("compute", "f32");
  const auto c = gemm_compute_from_string(compute);
  if (!c)
    throw Error(fmt::format(
        "{}: \"compute\" '{}' is not one of f32, tf32, fast_f16, fast_bf16, f16.", where, compute));
  r.compute = *c;
  const std::string epilogue = text("epilogue", "none");
  const auto e = gemm_epilogue_from_string(epilogue);
  if (!e)
    throw Error(fmt::format(
        "{}: \"epilogue\" '{}' is not one of none, bias, relu, relu_bias, gelu, gelu_bias.", where,
        epilogue));
  r.epilogue = *e;
  validate(r, where);
  p = r;
}

double GemmTolerance::bound(double k, double reference) const {
  return per_sqrt_k * std::sqrt(k) + abs + rel * std::abs(reference);
}

GemmTolerance gemm_tolerance(const GemmProblem& p) {
  const Tolerance out = default_tolerance(p.dtype);
  GemmTolerance t{0, out.abs, out.rel};
  // Inputs in [-1, 1): products average 1/4 in size; a rounding of relative size e in each input
  // leaves about e/2 per product, and k of them add up like a random walk. Four times that.
  const auto inputs_rounded_to = [&](double e) { t.per_sqrt_k = 4 * 0.25 * e; };
  switch (p.compute) {
    case GemmCompute::f32:
      inputs_rounded_to(1e-6);  // fp32 accumulation order alone
      break;
    case GemmCompute::tf32:
      inputs_rounded_to(std::ldexp(1.0, -10));  // 10-bit mantissas
      break;
    case GemmCompute::fast_f16:
      inputs_rounded_to(std::ldexp(1.0, -10));
      break;
    case GemmCompute::fast_bf16:
      inputs_rounded_to(std::ldexp(1.0, -7));
      break;
    case GemmCompute::f16:  // the sum itself rounds to fp16 at every step
      inputs_rounded_to(std::ldexp(1.0, -8));
      t.rel = std::max(t.rel, 2e-2);
      break;
  }
  return t;
}

GemmElement gemm_host_element(const GemmProblem& given, const GemmHostInputs& in,
                              std::int64_t batch, std::int64_t i, std::int64_t j) {
  const GemmProblem p = resolved(given);
  const std::size_t elem = dtype_bytes(p.dtype);
  const auto at = [&](std::span<const std::byte> buf, std::int64_t index) {
    return decode_element(buf.data() + static_cast<std::size_t>(index) * elem, p.dtype);
  };
  double sum = 0;
  for (std::int64_t q = 0; q < p.k; ++q) {
    // op(A)[i, q] and op(B)[q, j] in column-major storage.
    const std::int64_t ia = batch * p.stride_a + (p.trans_a ? q + i * p.lda : i + q * p.lda);
    const std::int64_t ib = batch * p.stride_b + (p.trans_b ? j + q * p.ldb : q + j * p.ldb);
    sum += at(in.a, ia) * at(in.b, ib);
  }
  double x = in.alpha * sum;
  if (in.beta != 0 && !in.c.empty()) x += in.beta * at(in.c, batch * p.stride_c + i + j * p.ldc);
  if (has_bias(p.epilogue) && !in.bias.empty()) x += at(in.bias, i);
  GemmElement e;
  e.linear = x;
  e.relu = std::max(x, 0.0);
  e.gelu_erf = 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2));
  const double c = std::sqrt(2 / std::numbers::pi);
  e.gelu_tanh = 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
  return e;
}

bool gemm_element_agrees(const GemmProblem& p, const GemmElement& want, double got) {
  const GemmTolerance tol = gemm_tolerance(p);
  const auto near = [&](double w) {
    return std::abs(got - w) <= tol.bound(static_cast<double>(p.k), w);
  };
  switch (p.epilogue) {
    case GemmEpilogue::none:
    case GemmEpilogue::bias:
      return near(want.linear);
    case GemmEpilogue::relu:
    case GemmEpilogue::relu_bias:
      return near(want.relu);
    case GemmEpilogue::gelu:
    case GemmEpilogue::gelu_bias:
      return near(want.gelu_erf) || near(want.gelu_tanh);
  }
  return false;
}

}  // namespace ktune::bench
