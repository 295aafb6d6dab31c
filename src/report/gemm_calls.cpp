// The report's view of cuBLASLt's GEMM calls (ktune profile --gemm-shapes): the "GEMM calls
// (cuBLASLt)" section with each problem's GPU time and tune command, the backlog's note naming
// those problems next to its cuBLASLt kernels, and their JSON.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ktune/bench/gemm_problem.hpp"

#include "sections.hpp"
#include "units.hpp"

namespace ktune::report::detail {
namespace {

using analyze::Analysis;
using nlohmann::json;

std::string epilogue_text(const std::string& e) {
  if (e == "EPILOGUE_DEFAULT") return "none";
  std::string out = e.rfind("EPILOGUE_", 0) == 0 ? e.substr(9) : e;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string ops_text(const trace::GemmCallRecord& r) {
  return {analyze::gemm_op_letter(r.transa), analyze::gemm_op_letter(r.transb)};
}

// "m=11008 n=2048 k=4096 f16 bias": how the backlog's note names a shape.
std::string shape_words(const analyze::GemmShape& s) {
  const auto& p = s.problem;
  std::string out = fmt::format("{} m={} n={} k={}", ops_text(p), p.m, p.n, p.k);
  if (p.batch != 1) out += fmt::format(" batch {}", p.batch);
  out += " " + s.dtype;
  if (p.epilogue != "EPILOGUE_DEFAULT") out += " " + epilogue_text(p.epilogue);
  return out;
}

// Backlog rows (1-based) whose kernel is one cuBLASLt runs.
std::vector<std::size_t> cublaslt_backlog_rows(const Analysis& a) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < a.backlog_size; ++i)
    if (analyze::is_cublaslt_kernel(a.kernels[i].name)) rows.push_back(i + 1);
  return rows;
}

}  // namespace

std::vector<Section> gemm_sections(const Analysis& a) {
  const analyze::GemmCalls& g = a.gemm;
  if (!g.recorded) return {};
  Section s{"GEMM calls (cuBLASLt)", ""};
  if (g.shapes.empty()) {
    s.note = "None: the program ran no matmul through cuBLASLt.";
    return {s};
  }
  const std::string layout =
      "BLAS column-major: D is m x n, k the reduction; Op is op(A), op(B) (x @ W is NN, a Linear "
      "TN).";
  if (g.timed)
    s.note = fmt::format(
        "{} calls of {} problems, {} of GPU time ({} of all kernel time) in the cuBLASLt kernels "
        "{} of those calls launched{}. {}",
        g.calls, g.shapes.size(), duration(static_cast<double>(g.gpu_ns)),
        percent(fraction(g.gpu_ns, a.kernel_total_ns)), g.timed_calls,
        g.timed_calls < g.calls
            ? " (the others launched no kernel the trace ties to them, as calls captured into a "
              "CUDA graph do)"
            : "",
        layout);
  else
    s.note = fmt::format(
        "{} calls of {} problems. Counts only: this trace (schema {}) has no time per call; "
        "profile again with this ktune for GPU time per problem. {}",
        g.calls, g.shapes.size(), a.metadata.schema_version, layout);
  s.header = {"GPU time", "%",     "Calls", "m",        "n",         "k",
              "Batch",    "Dtype", "Op",    "Epilogue", "Algorithm", "Tune"};
  // Traces the router recorded (schema 6) say where each problem's calls came in and what the
  // router did with them.
  const bool routed = std::any_of(g.shapes.begin(), g.shapes.end(),
                                  [](const analyze::GemmShape& x) { return !x.entries.empty(); });
  if (routed) s.header.insert(s.header.end() - 1, "Called through (router)");
  for (const analyze::GemmShape& shape : g.shapes) {
    const auto& p = shape.problem;
    std::string algo = shape.algorithms.empty() ? "" : shape.algorithms.front();
    if (shape.algorithms.size() > 1)
      algo += fmt::format(" (+{} more)", shape.algorithms.size() - 1);
    s.rows.push_back({g.timed ? duration(static_cast<double>(shape.gpu_ns)) : "-",
                      g.timed ? percent(fraction(shape.gpu_ns, a.kernel_total_ns)) : "-",
                      std::to_string(p.calls), std::to_string(p.m), std::to_string(p.n),
                      std::to_string(p.k), std::to_string(p.batch), shape.dtype, ops_text(p),
                      epilogue_text(p.epilogue), algo,
                      shape.tune_command.empty() ? fmt::format("not tunable: {}", shape.not_tunable)
                                                 : shape.tune_command});
    if (routed) {
      std::vector<std::string> routes;
      for (const auto& [route, calls] : shape.routes)
        routes.push_back(fmt::format("{} {}", route, calls));
      s.rows.back().insert(
          s.rows.back().end() - 1,
          fmt::format("{} ({})", fmt::join(shape.entries, ", "), fmt::join(routes, ", ")));
    }
  }
  return {s};
}

std::string backlog_gemm_note(const Analysis& a) {
  const std::vector<std::size_t> rows = cublaslt_backlog_rows(a);
  if (rows.empty()) return "";
  const std::string which =
      fmt::format("cuBLASLt kernel{} #{}", rows.size() == 1 ? "" : "s", fmt::join(rows, ", #"));
  if (!a.gemm.recorded)
    return fmt::format(" {}: ktune profile --gemm-shapes records the GEMM shapes to tune.", which);
  if (a.gemm.shapes.empty()) return "";
  std::vector<std::string> shapes;
  for (const analyze::GemmShape& s : a.gemm.shapes)
    shapes.push_back(a.gemm.timed
                         ? fmt::format("{} ({}, {} calls)", shape_words(s),
                                       duration(static_cast<double>(s.gpu_ns)), s.problem.calls)
                         : fmt::format("{} ({} calls)", shape_words(s), s.problem.calls));
  return fmt::format(
      " {} ran the program's cuBLASLt GEMMs: {}. The tune commands are under GEMM calls "
      "(cuBLASLt).",
      which, fmt::join(shapes, "; "));
}

json gemm_calls_json(const Analysis& a) {
  json shapes = json::array();
  for (const analyze::GemmShape& s : a.gemm.shapes) {
    const auto& p = s.problem;
    shapes.push_back(
        {{"m", p.m},
         {"n", p.n},
         {"k", p.k},
         {"batch", p.batch},
         {"lda", p.lda},
         {"ldb", p.ldb},
         {"ldc", p.ldc},
         {"ldd", p.ldd},
         {"a_type", p.a_type},
         {"b_type", p.b_type},
         {"c_type", p.c_type},
         {"d_type", p.d_type},
         {"dtype", s.dtype},
         {"compute_type", p.compute_type},
         {"scale_type", p.scale_type},
         {"transa", p.transa},
         {"transb", p.transb},
         {"epilogue", p.epilogue},
         {"stride_a", p.stride_a},
         {"stride_b", p.stride_b},
         {"stride_c", p.stride_c},
         {"stride_d", p.stride_d},
         {"calls", p.calls},
         {"gpu_ns", s.gpu_ns},
         {"timed_calls", s.timed_calls},
         {"algorithms", s.algorithms},
         {"problem", s.tunable ? json(*s.tunable) : json(nullptr)},
         {"cache_key", s.tunable ? json{{"op", bench::gemm_cache_op(*s.tunable)},
                                        {"dtype", bench::gemm_cache_dtype(*s.tunable)},
                                        {"shape", bench::gemm_cache_shape(*s.tunable)}}
                                 : json(nullptr)},
         {"tune_command", s.tune_command.empty() ? json(nullptr) : json(s.tune_command)},
         {"not_tunable", s.not_tunable},
         {"entries", s.entries},
         {"routes", s.routes}});
  }
  return {{"recorded", a.gemm.recorded},
          {"timed", a.gemm.timed},
          {"calls", a.gemm.calls},
          {"gpu_ns", a.gemm.gpu_ns},
          {"timed_calls", a.gemm.timed_calls},
          {"shapes", shapes}};
}

json backlog_gemm_json(const Analysis& a) {
  json kernels = json::array();
  for (std::size_t row : cublaslt_backlog_rows(a)) kernels.push_back(a.kernels[row - 1].name);
  return kernels;
}

}  // namespace ktune::report::detail
