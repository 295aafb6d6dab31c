#include "ktune/analyze/gemm_calls.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/core/dtype.hpp"
#include "ktune/core/error.hpp"

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

// Storage (leading dimensions, batch strides) splits a problem: a winner is routed only to calls of
// the storage it was measured on, so each storage is tuned on its own.
std::string problem_key(const trace::GemmCallRecord& r) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", r.m, r.n,
                     r.k, r.batch, r.a_type, r.b_type, r.c_type, r.d_type, r.compute_type,
                     r.scale_type, r.transa, r.transb, r.epilogue, r.lda, r.ldb, r.ldc, r.ldd,
                     r.batch > 1 ? r.stride_a : 0, r.batch > 1 ? r.stride_b : 0,
                     r.batch > 1 ? r.stride_c : 0, r.batch > 1 ? r.stride_d : 0);
}

}  // namespace

char gemm_op_letter(const std::string& op) {
  return op == "OP_N" ? 'N' : op == "OP_T" ? 'T' : op == "OP_C" ? 'C' : '?';
}

namespace {

// cuBLASLt's name of a type ("R_16BF") as ktune names it ("bf16"); others as logged.
std::string type_name(const std::string& cublaslt_type) {
  const auto t = find_dtype(cublaslt_type);
  return t ? to_string(*t) : cublaslt_type;
}

std::optional<bench::GemmCompute> compute_of(const std::string& c) {
  if (c == "COMPUTE_32F") return bench::GemmCompute::f32;
  if (c == "COMPUTE_32F_FAST_TF32") return bench::GemmCompute::tf32;
  if (c == "COMPUTE_32F_FAST_16F") return bench::GemmCompute::fast_f16;
  if (c == "COMPUTE_32F_FAST_16BF") return bench::GemmCompute::fast_bf16;
  if (c == "COMPUTE_16F") return bench::GemmCompute::f16;
  return std::nullopt;
}

std::optional<bench::GemmEpilogue> epilogue_of(const std::string& e) {
  if (e == "EPILOGUE_DEFAULT") return bench::GemmEpilogue::none;
  if (e == "EPILOGUE_BIAS") return bench::GemmEpilogue::bias;
  if (e == "EPILOGUE_RELU") return bench::GemmEpilogue::relu;
  if (e == "EPILOGUE_RELU_BIAS") return bench::GemmEpilogue::relu_bias;
  if (e == "EPILOGUE_GELU") return bench::GemmEpilogue::gelu;
  if (e == "EPILOGUE_GELU_BIAS") return bench::GemmEpilogue::gelu_bias;
  return std::nullopt;
}

}  // namespace

std::optional<bench::GemmProblem> gemm_problem_of(const trace::GemmCallRecord& r,
                                                  std::string* why_not) {
  auto no = [&](std::string why) -> std::optional<bench::GemmProblem> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  const auto type = find_dtype(r.d_type);
  const bool same = r.a_type == r.b_type && r.b_type == r.c_type && r.c_type == r.d_type;
  if (!same || !type || (*type != DType::f16 && *type != DType::bf16 && *type != DType::f32))
    return no(fmt::format(
        "types {}*{}->{} (ktune searches f16, bf16 and f32 GEMMs whose A, B, C and D share one "
        "type)",
        type_name(r.a_type), type_name(r.b_type), type_name(r.d_type)));
  const auto compute = compute_of(r.compute_type);
  if (!compute)
    return no(
        fmt::format("compute type {} (ktune searches COMPUTE_32F, its TF32, 16F "
                    "and 16BF forms, and COMPUTE_16F)",
                    r.compute_type));
  const auto epilogue = epilogue_of(r.epilogue);
  if (!epilogue)
    return no(
        fmt::format("epilogue {} (ktune searches none, bias, relu, relu_bias, gelu and gelu_bias)",
                    r.epilogue));
  if (gemm_op_letter(r.transa) == '?' || gemm_op_letter(r.transb) == '?')
    return no(fmt::format("transposes {} {}", r.transa, r.transb));
  bench::GemmProblem p;
  p.trans_a = r.transa != "OP_N";
  p.trans_b = r.transb != "OP_N";
  p.m = r.m;
  p.n = r.n;
  p.k = r.k;
  p.batch = r.batch;
  p.lda = r.lda;
  p.ldb = r.ldb;
  p.ldc = r.ldc;
  p.ldd = r.ldd;
  if (r.batch > 1) {
    p.stride_a = r.stride_a;
    p.stride_b = r.stride_b;
    p.stride_c = r.stride_c;
    p.stride_d = r.stride_d;
  }
  p.dtype = *type;
  p.compute = *compute;
  p.epilogue = *epilogue;
  try {
    bench::validate(p, "the logged GEMM");
  } catch (const Error& e) {
    return no(e.what());
  }
  return p;
}

std::string gemm_tune_command(const trace::GemmCallRecord& r, std::string* why_not) {
  const auto p = gemm_problem_of(r, why_not);
  return p ? bench::gemm_tune_command(*p) : std::string();
}

void GemmTimer::add_event(const trace::GemmEventRecord& e) {
  threads_[{e.process_id, e.thread_id}].push_back(events_.size());
  events_.push_back(e);
  launches_.push_back(0);
  timed_.push_back(false);
}

std::int64_t GemmTimer::on_launch(std::uint32_t process_id, std::uint32_t thread_id,
                                  std::uint64_t start_ns) {
  // A cuBLASLt matmul launches its kernel and perhaps a split-K reduction; more launches than
  // this after one call on its thread are the program's own.
  constexpr std::uint8_t kLaunchesPerCall = 4;
  const auto t = threads_.find({process_id, thread_id});
  if (t == threads_.end()) return -1;
  const auto& calls = t->second;
  const auto after = std::upper_bound(
      calls.begin(), calls.end(), start_ns,
      [&](std::uint64_t time, std::size_t e) { return time < events_[e].time_ns; });
  if (after == calls.begin()) return -1;
  const std::size_t e = *std::prev(after);
  if (launches_[e] >= kLaunchesPerCall) return -1;
  ++launches_[e];
  return static_cast<std::int64_t>(e);
}

void GemmTimer::on_kernel(std::int64_t event, const trace::KernelRecord& k,
                          std::int64_t duration_ns) {
  // Kernels replayed from a CUDA graph were launched by the graph, not by a call.
  if (event < 0 || k.graph_id != 0 || !is_cublaslt_kernel(k.display_name())) return;
  const auto e = static_cast<std::size_t>(event);
  const std::size_t call = events_[e].call;
  if (gpu_ns_.size() <= call) gpu_ns_.resize(call + 1, 0);
  gpu_ns_[call] += duration_ns;
  if (kernels_.size() <= call) kernels_.resize(call + 1);
  auto& names = kernels_[call];
  if (std::find(names.begin(), names.end(), k.display_name()) == names.end())
    names.push_back(k.display_name());
  timed_[e] = true;
}

GemmCalls GemmTimer::calls(TraceSource& source) const {
  std::vector<trace::GemmCallRecord> records;
  source.gemm_calls([&](const trace::GemmCallRecord& r) { records.push_back(r); });
  std::vector<GemmTiming> timing(records.size());
  for (std::size_t i = 0; i < records.size() && i < gpu_ns_.size(); ++i)
    timing[i].gpu_ns = gpu_ns_[i];
  for (std::size_t i = 0; i < records.size() && i < kernels_.size(); ++i)
    timing[i].kernels = kernels_[i];
  for (std::size_t e = 0; e < events_.size(); ++e)
    if (timed_[e] && events_[e].call < records.size()) ++timing[events_[e].call].timed_calls;
  const auto& kinds = source.metadata().records;
  return group_gemm_calls(records,
                          std::find(kinds.begin(), kinds.end(), "gemm_call") != kinds.end(),
                          events_.empty() ? nullptr : &timing);
}

GemmCalls read_gemm_calls(TraceSource& source) {
  GemmTimer timer;
  source.gemm_events([&](const trace::GemmEventRecord& e) { timer.add_event(e); });
  std::unordered_map<std::uint32_t, std::int64_t> launch_event;  // by correlation id
  if (!timer.empty()) {
    source.api_calls([&](const trace::ApiRecord& a) {
      if (a.correlation_id == 0 || api_role(a.name) != ApiRole::launch) return;
      const std::int64_t e = timer.on_launch(a.process_id, a.thread_id, a.start_ns);
      if (e >= 0) launch_event[a.correlation_id] = e;
    });
    source.kernels([&](const trace::KernelRecord& k) {
      if (const auto it = launch_event.find(k.correlation_id); it != launch_event.end())
        timer.on_kernel(it->second, k, static_cast<std::int64_t>(k.duration_ns()));
    });
  }
  return timer.calls(source);
}

GemmCalls group_gemm_calls(const std::vector<trace::GemmCallRecord>& records, bool recorded,
                           const std::vector<GemmTiming>* timing) {
  GemmCalls out;
  out.recorded = recorded || !records.empty();
  out.timed = timing != nullptr;
  // Per problem: its records' indices, most calls first once sorted.
  std::unordered_map<std::string, std::size_t> index;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const trace::GemmCallRecord& r = records[i];
    if (r.calls == 0) continue;  // seen in another capture window of the process
    out.calls += r.calls;
    const auto [it, added] = index.emplace(problem_key(r), members.size());
    if (added) members.emplace_back();
    members[it->second].push_back(i);
  }
  for (auto& m : members) {
    std::stable_sort(m.begin(), m.end(), [&](std::size_t a, std::size_t b) {
      return records[a].calls > records[b].calls;
    });
    GemmShape s;
    s.problem = records[m.front()];
    s.problem.calls = 0;
    // Algorithms merged by their text: records that differ only in leading dimensions share one.
    std::vector<std::pair<std::string, std::uint64_t>> algos;
    for (std::size_t i : m) {
      const trace::GemmCallRecord& r = records[i];
      s.problem.calls += r.calls;
      if (timing && i < timing->size()) {
        s.gpu_ns += (*timing)[i].gpu_ns;
        s.timed_calls += (*timing)[i].timed_calls;
        for (const std::string& name : (*timing)[i].kernels)
          if (std::find(s.kernels.begin(), s.kernels.end(), name) == s.kernels.end())
            s.kernels.push_back(name);
      }
      if (!r.entry.empty()) {
        s.routes[r.route.empty() ? "passed" : r.route] += r.calls;
        if (std::find(s.entries.begin(), s.entries.end(), r.entry) == s.entries.end())
          s.entries.push_back(r.entry);
      }
      const std::string text = algorithm_text(r);
      auto a = std::find_if(algos.begin(), algos.end(), [&](auto& p) { return p.first == text; });
      if (a == algos.end())
        algos.emplace_back(text, r.calls);
      else
        a->second += r.calls;
    }
    out.gpu_ns += s.gpu_ns;
    out.timed_calls += s.timed_calls;
    std::stable_sort(algos.begin(), algos.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (auto& [text, calls] : algos) s.algorithms.push_back(std::move(text));
    const trace::GemmCallRecord& p = s.problem;
    s.tunable = gemm_problem_of(p, &s.not_tunable);
    if (s.tunable) {
      s.dtype = bench::gemm_cache_dtype(*s.tunable);
      s.tune_command = bench::gemm_tune_command(*s.tunable);
    } else {
      s.dtype = p.a_type == p.b_type && p.b_type == p.d_type
                    ? type_name(p.d_type)
                    : fmt::format("{}*{}->{}", type_name(p.a_type), type_name(p.b_type),
                                  type_name(p.d_type));
    }
    out.shapes.push_back(std::move(s));
  }
  // Most GPU time first (what a tuned winner can save), else most calls; among equals the larger
  // GEMM (more FLOP per call), then first seen.
  std::stable_sort(out.shapes.begin(), out.shapes.end(), [](const auto& a, const auto& b) {
    auto work = [](const trace::GemmCallRecord& p) {
      return static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
             static_cast<double>(p.batch);
    };
    return std::make_tuple(b.gpu_ns, b.problem.calls, work(b.problem)) <
           std::make_tuple(a.gpu_ns, a.problem.calls, work(a.problem));
  });
  return out;
}

bool is_cublaslt_kernel(std::string_view name) {
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  const auto contains = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  // Hopper's nvjet kernels, CUTLASS's, and the library's own: cublasLt::splitKreduce_kernel,
  // cuBLAS's GEMV (internal::gemvx::kernel<..., cublasGemvParamsEx<...>>), the xmma kernels'
  // "_cublas" suffix; every one names cuBLAS somewhere.
  if (name.rfind("nvjet", 0) == 0 || contains("cutlass") || contains("cublas")) return true;
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
