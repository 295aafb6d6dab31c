#include "ktune/analyze/gemm_calls.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace ktune::analyze {
namespace {

std::string without_prefix(const std::string& s, std::string_view prefix) {
  return s.rfind(prefix, 0) == 0 ? s.substr(prefix.size()) : s;
}

std::string algorithm_text(const trace::GemmCallRecord& r) {
  if (r.algo_id < 0) return "algorithm not logged";
  std::string out = fmt::format("algo {}", r.algo_id);
  if (!r.tile.empty()) out += " tile " + without_prefix(r.tile, "MATMUL_TILE_");
  if (!r.stages.empty()) out += " stages " + without_prefix(r.stages, "MATMUL_STAGES_");
  if (r.splits > 1) out += fmt::format(" split-K {}", r.splits);
  return out;
}

std::string problem_key(const trace::GemmCallRecord& r) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", r.m, r.n, r.k, r.batch, r.a_type,
                     r.b_type, r.c_type, r.d_type, r.compute_type, r.scale_type, r.transa, r.transb,
                     r.epilogue);
}

}  // namespace

char gemm_op_letter(const std::string& op) {
  return op == "OP_N" ? 'N' : op == "OP_T" ? 'T' : op == "OP_C" ? 'C' : '?';
}

std::string gemm_dtype_name(std::string_view t) {
  static const std::pair<std::string_view, std::string_view> kNames[] = {
      {"R_16F", "f16"}, {"R_16BF", "bf16"}, {"R_32F", "f32"},        {"R_64F", "f64"},
      {"R_8I", "i8"},   {"R_32I", "i32"},   {"R_8F_E4M3", "f8e4m3"}, {"R_8F_E5M2", "f8e5m2"}};
  for (const auto& [lt, name] : kNames)
    if (lt == t) return std::string(name);
  return std::string(t);
}

std::string gemm_tune_command(const trace::GemmCallRecord& r, std::string* why_not) {
  auto no = [&](std::string why) {
    if (why_not) *why_not = std::move(why);
    return std::string();
  };
  if (r.batch != 1) return no(fmt::format("batched (batch {})", r.batch));
  if (r.transa != "OP_T" || r.transb != "OP_N")
    return no(fmt::format("transposes {}{} (ktune tunes TN)", gemm_op_letter(r.transa),
                          gemm_op_letter(r.transb)));
  const bool same = r.a_type == r.b_type && r.b_type == r.c_type && r.c_type == r.d_type;
  if (!same || (r.d_type != "R_16F" && r.d_type != "R_16BF"))
    return no(fmt::format("types {}*{}->{} (ktune tunes f16 and bf16)", gemm_dtype_name(r.a_type),
                          gemm_dtype_name(r.b_type), gemm_dtype_name(r.d_type)));
  if (r.compute_type != "COMPUTE_32F" || (!r.scale_type.empty() && r.scale_type != "R_32F"))
    return no(fmt::format("compute type {} (ktune tunes COMPUTE_32F)", r.compute_type));
  if (r.epilogue != "EPILOGUE_DEFAULT" && r.epilogue != "EPILOGUE_BIAS")
    return no(fmt::format("epilogue {} (ktune tunes none and bias)", r.epilogue));
  return fmt::format("ktune tune --library cublaslt --op {} --shape m={},n={},k={} --dtype {}",
                     r.epilogue == "EPILOGUE_BIAS" ? "gemm_bias" : "gemm", r.m, r.n, r.k,
                     gemm_dtype_name(r.d_type));
}

GemmCalls group_gemm_calls(const std::vector<trace::GemmCallRecord>& records, bool recorded) {
  GemmCalls out;
  out.recorded = recorded || !records.empty();
  // Per problem: its records' indices, most calls first once sorted.
  std::unordered_map<std::string, std::size_t> index;
  std::vector<std::vector<const trace::GemmCallRecord*>> members;
  for (const trace::GemmCallRecord& r : records) {
    out.calls += r.calls;
    const auto [it, added] = index.emplace(problem_key(r), members.size());
    if (added) members.emplace_back();
    members[it->second].push_back(&r);
  }
  for (auto& m : members) {
    std::stable_sort(m.begin(), m.end(), [](auto* a, auto* b) { return a->calls > b->calls; });
    GemmShape s;
    s.problem = *m.front();
    s.problem.calls = 0;
    // Algorithms merged by their text: records that differ only in leading dimensions share one.
    std::vector<std::pair<std::string, std::uint64_t>> algos;
    for (const auto* r : m) {
      s.problem.calls += r->calls;
      const std::string text = algorithm_text(*r);
      auto a = std::find_if(algos.begin(), algos.end(), [&](auto& p) { return p.first == text; });
      if (a == algos.end())
        algos.emplace_back(text, r->calls);
      else
        a->second += r->calls;
    }
    std::stable_sort(algos.begin(), algos.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (auto& [text, calls] : algos) s.algorithms.push_back(std::move(text));
    const trace::GemmCallRecord& p = s.problem;
    s.dtype = p.a_type == p.b_type && p.b_type == p.d_type
                  ? gemm_dtype_name(p.d_type)
                  : fmt::format("{}*{}->{}", gemm_dtype_name(p.a_type), gemm_dtype_name(p.b_type),
                                gemm_dtype_name(p.d_type));
    s.tune_command = gemm_tune_command(p, &s.not_tunable);
    out.shapes.push_back(std::move(s));
  }
  // Most calls first; among equals the larger GEMM (more FLOP per call), then first seen.
  std::stable_sort(out.shapes.begin(), out.shapes.end(), [](const auto& a, const auto& b) {
    auto work = [](const trace::GemmCallRecord& p) {
      return static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
             static_cast<double>(p.batch);
    };
    return std::make_tuple(b.problem.calls, work(b.problem)) <
           std::make_tuple(a.problem.calls, work(a.problem));
  });
  return out;
}

bool is_cublaslt_kernel(std::string_view name) {
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  const auto contains = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  // Hopper's nvjet kernels, CUTLASS's, and the library's own (cublasLt::splitKreduce_kernel).
  if (name.rfind("nvjet", 0) == 0 || contains("cutlass") || name.rfind("cublas", 0) == 0)
    return true;
  // sm80_xmma_gemm_..., sm90_xmma_...: an architecture number, then xmma.
  if (name.rfind("sm", 0) == 0) {
    std::size_t i = 2;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    if (i > 2 && name.substr(i, 5) == "_xmma") return true;
  }
  // Earlier GPUs' cuBLAS GEMMs are named by architecture: ampere_fp16_s16816gemm_...,
  // volta_h884gemm_..., turing_fp16_s1688gemm_..., maxwell_sgemm_...
  for (std::string_view arch : {"maxwell_", "pascal_", "volta_", "turing_", "ampere_", "ada_"})
    if (name.rfind(arch, 0) == 0 && contains("gemm")) return true;
  return false;
}

}  // namespace ktune::analyze
