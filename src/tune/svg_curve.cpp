// The best-so-far curve of a session as one self-contained SVG (no scripts, fonts or links), so it
// opens in any browser and can be attached to a report or a pull request as is.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "ktune/core/text.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::tune {

namespace {}  // namespace

std::string best_so_far_svg(const SessionSummary& s) {
  constexpr double kWidth = 720, kHeight = 400;
  constexpr double kLeft = 80, kRight = 20, kTop = 40, kBottom = 50;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;

  // Timed points (microseconds): full measurements and screens; failures have no time.
  double lo_us = std::numeric_limits<double>::infinity(), hi_us = 0;
  for (const auto& r : s.records)
    if (r.result.time_ns() > 0 && has_time(r.result.status)) {
      lo_us = std::min(lo_us, r.result.time_ns() / 1e3);
      hi_us = std::max(hi_us, r.result.time_ns() / 1e3);
    }
  const bool any = hi_us > 0;
  if (!any) lo_us = 0, hi_us = 1;
  if (hi_us - lo_us < 1e-9 * std::max(1.0, hi_us)) {  // one distinct time: give the axis height
    lo_us *= 0.9;
    hi_us = hi_us * 1.1 + 1e-9;
  }
  const double n = std::max<double>(1, static_cast<double>(s.records.size()));
  const auto x_of = [&](double evaluation) {  // 1-based evaluation number
    return kLeft + (n <= 1 ? 0.5 : (evaluation - 1) / (n - 1)) * plot_w;
  };
  const auto y_of = [&](double us) { return kTop + (hi_us - us) / (hi_us - lo_us) * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>{2}: best time so far ({3}, {4} evaluations)</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{5}\" y=\"24\" font-size=\"14\">{2}: best time so far ({3}, {4} "
      "evaluations)</text>\n",
      kWidth, kHeight, xml_escape(s.op), xml_escape(s.strategy), s.records.size(), kLeft);
  // Axes with min/max ticks.
  svg += fmt::format(
      "<path d=\"M{0} {1} V{2} H{3}\" stroke=\"black\" fill=\"none\"/>\n"
      "<text x=\"{4}\" y=\"{1:.1f}\" text-anchor=\"end\">{5:.2f} us</text>\n"
      "<text x=\"{4}\" y=\"{2:.1f}\" text-anchor=\"end\">{6:.2f} us</text>\n"
      "<text x=\"{0}\" y=\"{7}\">1</text>\n"
      "<text x=\"{3}\" y=\"{7}\" text-anchor=\"end\">{8}</text>\n"
      "<text x=\"{9}\" y=\"{10}\" text-anchor=\"middle\">evaluation</text>\n",
      kLeft, kTop, kTop + plot_h, kLeft + plot_w, kLeft - 6, hi_us, lo_us, kTop + plot_h + 16,
      s.records.size(), kLeft + plot_w / 2, kHeight - 10);

  // Every timed evaluation as a dot (screened-out ones lighter), then the best-so-far step line.
  std::string best_path;
  double best_us = 0;
  for (std::size_t i = 0; i < s.records.size(); ++i) {
    const CandidateOutcome& r = s.records[i].result;
    const double x = x_of(static_cast<double>(i + 1));
    if (r.time_ns() > 0 && has_time(r.status))
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", x,
                         y_of(r.time_ns() / 1e3), r.full ? "#7a9cc6" : "#c8c8c8");
    if (r.status == Status::ok && r.full && (best_us == 0 || r.time_ns() / 1e3 < best_us)) {
      const bool first = best_us == 0;
      best_us = r.time_ns() / 1e3;
      best_path += first ? fmt::format("M{:.1f} {:.1f}", x, y_of(best_us))
                         : fmt::format(" H{:.1f} V{:.1f}", x, y_of(best_us));
    }
  }
  if (!best_path.empty()) {
    best_path += fmt::format(" H{:.1f}", x_of(n));
    svg += fmt::format(
        "<path id=\"best-so-far\" d=\"{}\" stroke=\"#d62728\" stroke-width=\"2\" "
        "fill=\"none\"/>\n",
        best_path);
  } else {
    svg += fmt::format("<text x=\"{}\" y=\"{}\">no verified configuration yet</text>\n", kLeft + 10,
                       kTop + 20);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ktune::tune
