#pragma once
// The report's sections as titled tables of text cells, so the text, markdown and HTML renderers
// show the same rows.
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

std::vector<Section> sections(const analyze::Analysis& a, const RenderOptions& o);
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
// The JSON of the counter tier's derivation, and of the comparison with a baseline.
nlohmann::json counters_json(const analyze::CounterAnalysis& c);
nlohmann::json baseline_json(const analyze::Analysis& a, const analyze::Analysis& baseline);
// Tables as text, shared by the renderers.
std::string text_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);
std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows);
std::string md_cell(std::string s);

}  // namespace ktune::report::detail
