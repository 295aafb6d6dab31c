#include "ktune/trace/cublaslt_log.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::trace {
namespace {

using Fields = std::vector<std::pair<std::string_view, std::string_view>>;

// Bounds on what one line may hold: cuBLASLt's matmul lines have about 15 fields, with values of
// 20 characters at most; sizes are below 2^40 elements.
constexpr std::size_t kMaxFields = 64;
constexpr std::size_t kMaxText = 64;
constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;

// "k1=v1 k2=[a=b c=d] k3=v3" as (key, value) pairs; a bracketed value is its inner text. Tokens
// without '=' are passed over, so a field cuBLASLt adds later does not make a line unreadable.
// False for an unclosed bracket or too many fields.
bool split_fields(std::string_view s, Fields& out) {
  out.clear();
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t eq = i;
    while (eq < s.size() && s[eq] != '=' && s[eq] != ' ') ++eq;
    if (eq >= s.size() || s[eq] != '=' || eq == i) {
      i = std::max(eq, i + 1);  // a word without '=', or a '=' with no name before it
      continue;
    }
    const std::string_view key = s.substr(i, eq - i);
    const std::size_t v = eq + 1;
    std::size_t end = v;
    std::string_view value;
    if (v < s.size() && s[v] == '[') {
      std::size_t depth = 0;
      for (; end < s.size(); ++end) {
        if (s[end] == '[') ++depth;
        if (s[end] == ']' && --depth == 0) break;
      }
      if (end >= s.size()) return false;
      value = s.substr(v + 1, end - v - 1);
      ++end;
    } else {
      while (end < s.size() && s[end] != ' ') ++end;
      value = s.substr(v, end - v);
    }
    if (out.size() == kMaxFields) return false;
    out.emplace_back(key, value);
    i = end;
  }
  return true;
}

std::optional<std::string_view> field(const Fields& f, std::string_view key) {
  for (const auto& [k, v] : f)
    if (k == key) return v;
  return std::nullopt;
}

// The parse of one matmul line; `why` says what made it unreadable.
struct LineError {
  std::string why;
};

std::int64_t size_of(const Fields& f, std::string_view where, std::string_view key,
                     std::optional<std::int64_t> fallback, std::int64_t min = 1) {
  const auto v = field(f, key);
  if (!v) {
    if (fallback) return *fallback;
    throw LineError{fmt::format("{} has no {}", where, key)};
  }
  std::int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || ptr != v->data() + v->size() || out < min || out > kMaxSize)
    throw LineError{fmt::format("{} {} is not a size", where, key)};
  return out;
}

std::string text_of(const Fields& f, std::string_view where, std::string_view key,
                    std::optional<std::string_view> fallback) {
  const auto v = field(f, key);
  if (!v) {
    if (fallback) return std::string(*fallback);
    throw LineError{fmt::format("{} has no {}", where, key)};
  }
  // cuBLASLt's names are identifiers like R_16F or MATMUL_TILE_192x192; anything else is damage.
  const bool ok = !v->empty() && v->size() <= kMaxText && [&] {
    for (const char c : *v)
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
        return false;
    return true;
  }();
  if (!ok) throw LineError{fmt::format("{} {} is not a cuBLASLt name", where, key)};
  return std::string(*v);
}

Fields group(const Fields& f, std::string_view key, bool required) {
  Fields out;
  const auto v = field(f, key);
  if (!v) {
    if (required) throw LineError{fmt::format("no {}", key)};
    return out;
  }
  if (!split_fields(*v, out)) throw LineError{fmt::format("{} is cut short", key)};
  return out;
}

struct Matrix {
  std::string type;
  std::int64_t rows = 0, cols = 0, ld = 0, batch = 1, stride = 0;
};

Matrix matrix(const Fields& line, std::string_view key) {
  const Fields f = group(line, key, true);
  Matrix m;
  m.type = text_of(f, key, "type", std::nullopt);
  m.rows = size_of(f, key, "rows", std::nullopt);
  m.cols = size_of(f, key, "cols", std::nullopt);
  m.ld = size_of(f, key, "ld", m.rows);
  m.batch = size_of(f, key, "batchCount", 1);
  m.stride = size_of(f, key, "stridedBatchOffset", 0, 0);
  return m;
}

bool transposed(const std::string& op, std::string_view which) {
  if (op == "OP_N") return false;
  if (op == "OP_T" || op == "OP_C") return true;
  throw LineError{fmt::format("{} {} is not OP_N, OP_T or OP_C", which, op)};
}

GemmCallRecord read_call(std::string_view rest) {
  Fields line;
  if (!split_fields(rest, line)) throw LineError{"a bracket is not closed"};
  const Matrix a = matrix(line, "Adesc"), b = matrix(line, "Bdesc"), d = matrix(line, "Ddesc");
  const Fields compute = group(line, "computeDesc", true);
  GemmCallRecord r;
  r.compute_type = text_of(compute, "computeDesc", "computeType", std::nullopt);
  r.scale_type = text_of(compute, "computeDesc", "scaleType", "");
  r.transa = text_of(compute, "computeDesc", "transa", "OP_N");
  r.transb = text_of(compute, "computeDesc", "transb", "OP_N");
  r.epilogue = text_of(compute, "computeDesc", "epilogue", "EPILOGUE_DEFAULT");
  // Column-major: op(A) is m x k, op(B) k x n, D m x n.
  r.m = d.rows;
  r.n = d.cols;
  const bool ta = transposed(r.transa, "transa"), tb = transposed(r.transb, "transb");
  r.k = ta ? a.rows : a.cols;
  if ((ta ? a.cols : a.rows) != r.m) throw LineError{"A's size does not match D's rows"};
  if ((tb ? b.rows : b.cols) != r.n) throw LineError{"B's size does not match D's cols"};
  if ((tb ? b.cols : b.rows) != r.k) throw LineError{"A's and B's k differ"};
  r.batch = d.batch;
  r.a_type = a.type;
  r.b_type = b.type;
  r.d_type = d.type;
  r.lda = a.ld;
  r.ldb = b.ld;
  r.ldd = d.ld;
  r.stride_a = a.stride;
  r.stride_b = b.stride;
  r.stride_d = d.stride;
  if (field(line, "Cdesc")) {
    const Matrix c = matrix(line, "Cdesc");
    r.c_type = c.type;
    r.ldc = c.ld;
    r.stride_c = c.stride;
  } else {
    r.c_type = d.type;
    r.ldc = d.ld;
    r.stride_c = d.stride;
  }
  const Fields algo = group(line, "algo", false);
  if (!algo.empty()) {
    r.algo_id = size_of(algo, "algo", "algoId", -1, 0);
    r.tile = text_of(algo, "algo", "tile", "");
    r.stages = text_of(algo, "algo", "stages", "");
    r.splits = size_of(algo, "algo", "numSplitsK", 1);
    r.reduction = text_of(algo, "algo", "reductionScheme", "");
  }
  return r;
}

std::string key_of(const GemmCallRecord& r) {
  // Names hold no '|' (text_of), so the key is unambiguous.
  return fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", r.m,
      r.n, r.k, r.batch, r.lda, r.ldb, r.ldc, r.ldd, r.stride_a, r.stride_b, r.stride_c, r.stride_d,
      r.a_type, r.b_type, r.c_type, r.d_type, r.compute_type, r.scale_type, r.transa, r.transb,
      r.epilogue, r.algo_id, r.tile, r.stages, r.splits, r.reduction, r.entry, r.route);
}

}  // namespace

void CublasLtLogParser::add_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return;
  // "[date time][cublasLt][pid][Trace][cublasLt...Matmul] fields": five bracketed groups.
  std::array<std::string_view, 5> head;
  std::size_t at = 0;
  for (std::string_view& g : head) {
    const std::size_t close = line.find(']', at);
    if (at >= line.size() || line[at] != '[' || close == std::string_view::npos) {
      ++log_.skipped_lines;
      return;
    }
    g = line.substr(at + 1, close - at - 1);
    at = close + 1;
  }
  if (head[1] != "cublasLt" || head[3] != "Trace") {
    ++log_.skipped_lines;
    return;
  }
  add_call(head[4], line.substr(at));
}

std::optional<std::size_t> CublasLtLogParser::add_call(std::string_view fn,
                                                       std::string_view fields) {
  const bool matmul =
      fn.substr(0, 8) == "cublasLt" && fn.size() >= 6 && fn.substr(fn.size() - 6) == "Matmul";
  if (!matmul) {
    ++log_.skipped_lines;
    return std::nullopt;
  }
  GemmCallRecord r;
  try {
    r = read_call(fields);
  } catch (const LineError& e) {
    ++log_.skipped_lines;
    if (log_.malformed_lines++ == 0) log_.first_malformed = e.why;
    return std::nullopt;
  }
  return add_record(std::move(r));
}

std::optional<std::size_t> CublasLtLogParser::add_record(GemmCallRecord r) {
  const std::string key = key_of(r);
  std::size_t index = 0;
  if (const auto it = index_.find(key); it != index_.end()) {
    index = it->second;
    ++log_.calls[index].calls;
  } else if (log_.calls.size() < kMaxGemmProblems) {
    r.calls = 1;
    index = log_.calls.size();
    index_.emplace(key, index);
    log_.calls.push_back(std::move(r));
  } else {
    ++log_.skipped_lines;
    if (log_.malformed_lines++ == 0)
      log_.first_malformed = fmt::format("more than {} distinct GEMM problems", kMaxGemmProblems);
    return std::nullopt;
  }
  ++log_.matmul_calls;
  return index;
}

namespace {

template <std::size_t N>
std::string name_of(std::int32_t v, const std::pair<std::int32_t, const char*> (&names)[N],
                    std::string_view prefix) {
  for (const auto& [value, name] : names)
    if (value == v) return name;
  return fmt::format("{}{}", prefix, v);
}

}  // namespace

GemmCallRecord gemm_call_record(const ktune_gemm_call& c) {
  // cudaDataType_t, cublasComputeType_t, cublasOperation_t and cublasLtEpilogue_t values.
  static constexpr std::pair<std::int32_t, const char*> kTypes[] = {
      {0, "R_32F"},   {1, "R_64F"},      {2, "R_16F"},      {3, "R_8I"},  {10, "R_32I"},
      {14, "R_16BF"}, {28, "R_8F_E4M3"}, {29, "R_8F_E5M2"}, {4, "C_32F"}, {5, "C_64F"}};
  static constexpr std::pair<std::int32_t, const char*> kComputes[] = {
      {64, "COMPUTE_16F"},           {65, "COMPUTE_16F_PEDANTIC"}, {68, "COMPUTE_32F"},
      {69, "COMPUTE_32F_PEDANTIC"},  {74, "COMPUTE_32F_FAST_16F"}, {75, "COMPUTE_32F_FAST_16BF"},
      {77, "COMPUTE_32F_FAST_TF32"}, {70, "COMPUTE_64F"},          {72, "COMPUTE_32I"}};
  static constexpr std::pair<std::int32_t, const char*> kOps[] = {
      {0, "OP_N"}, {1, "OP_T"}, {2, "OP_C"}};
  static constexpr std::pair<std::int32_t, const char*> kEpilogues[] = {
      {1, "EPILOGUE_DEFAULT"},   {2, "EPILOGUE_RELU"},  {4, "EPILOGUE_BIAS"},
      {6, "EPILOGUE_RELU_BIAS"}, {32, "EPILOGUE_GELU"}, {36, "EPILOGUE_GELU_BIAS"}};
  static constexpr std::pair<std::int32_t, const char*> kRoutes[] = {{KTUNE_ROUTE_PASSED, "passed"},
                                                                     {KTUNE_ROUTE_ROUTED, "routed"},
                                                                     {KTUNE_ROUTE_KEPT, "kept"},
                                                                     {KTUNE_ROUTE_TRIAL, "trial"}};
  static constexpr std::pair<std::int32_t, const char*> kEntries[] = {
      {KTUNE_GEMM_LT_MATMUL, "cublasLtMatmul"},
      {KTUNE_GEMM_GEMM_EX, "cublasGemmEx"},
      {KTUNE_GEMM_GEMM_STRIDED_EX, "cublasGemmStridedBatchedEx"},
      {KTUNE_GEMM_SGEMM, "cublasSgemm_v2"},
      {KTUNE_GEMM_SGEMM_STRIDED, "cublasSgemmStridedBatched"},
      {KTUNE_GEMM_HGEMM, "cublasHgemm"},
      {KTUNE_GEMM_HGEMM_STRIDED, "cublasHgemmStridedBatched"},
      {KTUNE_GEMM_GEMM_BATCHED_EX, "cublasGemmBatchedEx"}};
  GemmCallRecord r;
  r.m = c.m;
  r.n = c.n;
  r.k = c.k;
  r.batch = c.batch;
  r.lda = c.lda;
  r.ldb = c.ldb;
  r.ldc = c.ldc;
  r.ldd = c.ldd;
  r.stride_a = c.stride_a;
  r.stride_b = c.stride_b;
  r.stride_c = c.stride_c;
  r.stride_d = c.stride_d;
  r.a_type = name_of(c.a_type, kTypes, "R_");
  r.b_type = name_of(c.b_type, kTypes, "R_");
  r.c_type = name_of(c.c_type, kTypes, "R_");
  r.d_type = name_of(c.d_type, kTypes, "R_");
  r.compute_type = name_of(c.compute_type, kComputes, "COMPUTE_");
  r.scale_type = name_of(c.scale_type, kTypes, "R_");
  r.transa = name_of(c.transa, kOps, "OP_");
  r.transb = name_of(c.transb, kOps, "OP_");
  r.epilogue = name_of(c.epilogue, kEpilogues, "EPILOGUE_");
  r.algo_id = c.algo_id;
  r.tile = c.tile >= 0 ? fmt::format("{}", c.tile) : "";
  r.stages = c.stages >= 0 ? fmt::format("{}", c.stages) : "";
  r.splits = c.splits > 0 ? c.splits : 1;
  r.reduction = c.reduction > 0 ? fmt::format("{}", c.reduction) : "";
  r.entry = name_of(c.entry, kEntries, "entry ");
  r.route = name_of(c.route, kRoutes, "route ");
  return r;
}

CublasLtLog parse_cublaslt_log(std::string_view text) {
  CublasLtLogParser parser;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    parser.add_line(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return parser.log();
}

CublasLtLog read_cublaslt_log(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(fmt::format("cannot read cuBLASLt's log {}; check that the directory is readable.",
                            path.string()));
  CublasLtLogParser parser;
  std::string line;
  while (std::getline(in, line)) parser.add_line(line);
  return parser.log();
}

}  // namespace ktune::trace
