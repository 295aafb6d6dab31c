#pragma once
// The report's sections as titled tables of text cells, so the text, markdown and HTML renderers
// show the same rows.
#include <string>
#include <vector>

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

}  // namespace ktune::report::detail
