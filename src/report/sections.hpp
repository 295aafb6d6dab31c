#pragma once
// The report's sections as titled tables of text cells, so the text, markdown and HTML renderers
// show the same rows.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/report/report.hpp"

namespace ktune::report::detail {

struct Section {
  std::string title;
  std::string note;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Every section; `with_comparison`: the comparison with o.baseline first (HTML puts it above its
// charts and asks for the rest without it).
std::vector<Section> sections(const analyze::Analysis& a, const RenderOptions& o,
                              bool with_comparison = true);
// The names this report shows (o.names), made distinct over the kernels of the run, its counter
// tier and the baseline's.
analyze::NameTable report_names(const analyze::Analysis& a, const RenderOptions& o);

// ktune report OLD NEW, per launch. A kernel's change is that of its median launch; it is within
// noise when inside the ~95 % interval of the difference of the medians (each median's box-plot
// notch, 1.57 IQR / sqrt(n), combined in quadrature).
enum class Change { slower, faster, within_noise, few_launches, added, gone };
const char* to_string(Change c);
inline constexpr std::size_t kMinComparedLaunches = 3;  // fewer in either run: no verdict
struct KernelComparison {
  const analyze::KernelGroup* baseline = nullptr;  // null: new in this run
  const analyze::KernelGroup* now = nullptr;       // null: gone
  std::optional<double> median_change, noise;      // fractions of the baseline's median
  Change change = Change::within_noise;
};
// This run's kernels in its order, then those only the baseline has.
std::vector<KernelComparison> compare_kernels(const analyze::Analysis& now,
                                              const analyze::Analysis& baseline);
std::vector<Section> comparison_sections(const analyze::Analysis& a, const RenderOptions& o,
                                         const analyze::NameTable& names);
nlohmann::json comparison_json(const analyze::Analysis& a, const analyze::Analysis& baseline,
                               const analyze::NameTable& names);
// The traced command, pid, start time and any warning about the capture.
std::string capture_line(const analyze::Analysis& a);
// One sentence: kernels, GPU time, busy and idle.
std::string headline(const analyze::Analysis& a);

// The counter tier's sections (verdicts, opportunities, what could not be concluded); none when
// the trace has no counters. And the "vs baseline" section when o.baseline is set.
std::vector<Section> counter_sections(const analyze::Analysis& a, const RenderOptions& o);
std::vector<Section> baseline_sections(const analyze::Analysis& a, const RenderOptions& o);
// cuBLASLt's GEMM calls (ktune profile --gemm-shapes): their section, none when the trace was
// taken without them; the sentence the backlog adds about its cuBLASLt kernels ("" when it lists
// none); their JSON, and the backlog's cuBLASLt kernels by name.
std::vector<Section> gemm_sections(const analyze::Analysis& a);
std::string backlog_gemm_note(const analyze::Analysis& a);
nlohmann::json gemm_calls_json(const analyze::Analysis& a);
nlohmann::json backlog_gemm_json(const analyze::Analysis& a);
// Inductor's Triton kernels (a scan beside the trace): their section, none without a scan; the
// backlog's sentence naming its tunable Triton kernels with their GPU time ("" when none); their
// JSON, and the backlog's tunable Triton kernels.
std::vector<Section> triton_sections(const analyze::Analysis& a);
std::string backlog_triton_note(const analyze::Analysis& a);
nlohmann::json triton_kernels_json(const analyze::Analysis& a);
nlohmann::json backlog_triton_json(const analyze::Analysis& a);
// The JSON of the counter tier's derivation, and of the comparison with a baseline.
nlohmann::json counters_json(const analyze::CounterAnalysis& c, const analyze::NameTable& names);
nlohmann::json baseline_json(const analyze::Analysis& a, const analyze::Analysis& baseline);
// Tables as text, shared by the renderers.
std::string text_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);
std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows);
std::string md_cell(std::string s);

}  // namespace ktune::report::detail
