// The report's view of cuBLASLt's GEMM calls (ktune profile --gemm-shapes): the "GEMM calls
// (cuBLASLt)" section with a tune command per shape, the backlog's note naming those shapes next to
// its cuBLASLt kernels, and their JSON.
#include <fmt/format.h>

#include "sections.hpp"
#include "units.hpp"

namespace ktune::report::detail {
namespace {

using analyze::Analysis;
using nlohmann::json;

std::string epilogue_text(const std::string& e) {
  if (e == "EPILOGUE_DEFAULT") return "none";
  if (e == "EPILOGUE_BIAS") return "bias";
  return e.rfind("EPILOGUE_", 0) == 0 ? e.substr(9) : e;
}

std::string ops_text(const trace::GemmCallRecord& r) {
  return {analyze::gemm_op_letter(r.transa), analyze::gemm_op_letter(r.transb)};
}

// "m=11008 n=2048 k=4096 f16 bias": how the backlog's note names a shape.
std::string shape_words(const analyze::GemmShape& s) {
  const auto& p = s.problem;
  std::string out = fmt::format("m={} n={} k={}", p.m, p.n, p.k);
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
  s.note = fmt::format(
      "{} calls of {} shapes, from cuBLASLt's own log. Counts only: the log ties no call to a "
      "kernel, so GPU time per shape is not known. BLAS column-major: D is m x n, k the "
      "reduction; Op is transa, transb.",
      g.calls, g.shapes.size());
  s.header = {"Calls", "m", "n", "k", "Batch", "Dtype", "Op", "Epilogue", "Algorithm", "Tune"};
  for (const analyze::GemmShape& shape : g.shapes) {
    const auto& p = shape.problem;
    std::string algo = shape.algorithms.empty() ? "" : shape.algorithms.front();
    if (shape.algorithms.size() > 1)
      algo += fmt::format(" (+{} more)", shape.algorithms.size() - 1);
    s.rows.push_back(
        {std::to_string(p.calls), std::to_string(p.m), std::to_string(p.n), std::to_string(p.k),
         std::to_string(p.batch), shape.dtype, ops_text(p), epilogue_text(p.epilogue), algo,
         shape.tune_command.empty() ? fmt::format("not tunable by ktune yet: {}", shape.not_tunable)
                                    : shape.tune_command});
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
    shapes.push_back(fmt::format("{} ({} calls)", shape_words(s), s.problem.calls));
  return fmt::format(
      " {} ran the program's cuBLASLt GEMMs: {}. Which kernel ran which shape is not in the "
      "trace; the tune commands are under GEMM calls (cuBLASLt).",
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
         {"calls", p.calls},
         {"algorithms", s.algorithms},
         {"tune_command", s.tune_command.empty() ? json(nullptr) : json(s.tune_command)},
         {"not_tunable", s.not_tunable}});
  }
  return {{"recorded", a.gemm.recorded}, {"calls", a.gemm.calls}, {"shapes", shapes}};
}

json backlog_gemm_json(const Analysis& a) {
  json kernels = json::array();
  for (std::size_t row : cublaslt_backlog_rows(a)) kernels.push_back(a.kernels[row - 1].name);
  return kernels;
}

}  // namespace ktune::report::detail
