// The HTML report's roofline: calibrated roofs, one numbered point per kernel with FLOPs, and a
// legend table that names each number. Every label is placed where it overlaps no other label,
// no point and no edge (the page's text boxes are estimated from the monospace font's advance;
// tests/report/roofline_chromium_test.cpp measures them in a browser). Kernels without FLOPs have
// no place on a FLOP/s axis: they are listed under the chart, not pinned to its edge.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/text.hpp"
#include "ktune/report/report.hpp"
#include "units.hpp"

namespace ktune::report {

using analyze::Analysis;
using analyze::KernelDerivation;

namespace {

// The .lbl class: 12 px monospace. An advance of 0.6 em (7.2 px) per character, rounded up.
constexpr double kCharPx = 7.3, kAscentPx = 11, kDescentPx = 4;
constexpr double kHalfLine = (kAscentPx + kDescentPx) / 2;

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  // Labels keep this gap from each other, so neighbouring numbers do not read as one ("3 6", not
  // "36").
  Box padded() const { return {x0 - 3, y0 - 1, x1 + 3, y1 + 1}; }
  bool inside(const Box& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
};

// The box of `chars` characters of .lbl text with its baseline at y, starting at x.
Box text_box(double x, double y, std::size_t chars) {
  return {x, y - kAscentPx, x + kCharPx * double(chars), y + kDescentPx};
}

struct Roof {
  std::string name;
  double peak;
  const char* color;
};

// Roofs at one height read as one: "BF16 = FP16" (calibrated peaks within 2 % of each other).
std::vector<Roof> roofs_of(const analyze::Ceilings& c) {
  std::vector<Roof> all;
  if (c.bf16_flop_per_s > 0) all.push_back({"BF16", c.bf16_flop_per_s, "#7b4fa0"});
  if (c.fp16_flop_per_s > 0) all.push_back({"FP16", c.fp16_flop_per_s, "#a05f4f"});
  if (c.fp32_flop_per_s > 0) all.push_back({"FP32", c.fp32_flop_per_s, "#2f6db5"});
  std::vector<Roof> out;
  for (const Roof& r : all) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Roof& o) {
      return std::abs(o.peak - r.peak) <= 0.02 * std::max(o.peak, r.peak);
    });
    if (same == out.end())
      out.push_back(r);
    else
      same->name += " = " + r.name;
  }
  std::sort(out.begin(), out.end(), [](const Roof& a, const Roof& b) { return a.peak > b.peak; });
  return out;
}

// Each verdict's colour on the chart and in its legend.
constexpr EnumName<analyze::Bottleneck> kVerdictColors[] = {
    {analyze::Bottleneck::memory, "#d62728"},       {analyze::Bottleneck::compute, "#1f77b4"},
    {analyze::Bottleneck::latency, "#ff7f0e"},      {analyze::Bottleneck::locality, "#9467bd"},
    {analyze::Bottleneck::launch, "#8c564b"},       {analyze::Bottleneck::issue, "#17becf"},
    {analyze::Bottleneck::not_measured, "#7f7f7f"},
};

}  // namespace

const char* verdict_color(analyze::Bottleneck b) {
  return name_of(kVerdictColors, b, "#7f7f7f");
}

namespace {

bool plotted(const KernelDerivation& k) {
  return k.arithmetic_intensity && *k.arithmetic_intensity > 0 && k.flop_per_s && *k.flop_per_s > 0;
}

}  // namespace

std::string roofline_html(const Analysis& a, const analyze::NameTable& names) {
  const auto& c = a.counters;
  if (c.empty() || c.ceilings.dram_bytes_per_s <= 0) return {};
  const double bw = c.ceilings.dram_bytes_per_s;
  const std::vector<Roof> roofs = roofs_of(c.ceilings);
  double top_peak = bw;
  for (const Roof& r : roofs) top_peak = std::max(top_peak, r.peak);

  // Log axes over whole decades, wide enough for every roof and every point.
  double x_min = 0.01, x_max = top_peak / bw * 10, y_min = 1e9, y_max = top_peak * 1.5;
  for (const auto& k : c.kernels)
    if (plotted(k)) {
      x_min = std::min(x_min, *k.arithmetic_intensity / 2);
      x_max = std::max(x_max, *k.arithmetic_intensity * 2);
      y_min = std::min(y_min, *k.flop_per_s / 2);
      y_max = std::max(y_max, *k.flop_per_s * 1.5);
    }
  const double lx0 = std::floor(std::log10(x_min)), lx1 = std::ceil(std::log10(x_max));
  const double ly0 = std::floor(std::log10(y_min)), ly1 = std::ceil(std::log10(y_max));
  const int left = 72, top = 16, plot_w = 560, plot_h = 360, width = left + plot_w + 28,
            height = top + plot_h + 50;
  const auto px = [&](double x) { return left + (std::log10(x) - lx0) / (lx1 - lx0) * plot_w; };
  const auto py = [&](double y) {
    return top + plot_h - (std::log10(y) - ly0) / (ly1 - ly0) * plot_h;
  };
  const double x_lo = std::pow(10, lx0), x_hi = std::pow(10, lx1), y_lo = std::pow(10, ly0);
  const Box plot{double(left) + 2, double(top) + 2, double(left + plot_w) - 2,
                 double(top + plot_h) - 2};
  std::vector<Box> taken;  // labels and points placed so far

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"roofline\" class=\"roofline\">\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fbfaf0\" stroke=\"#999\"/>\n",
      width, height, left, top, plot_w, plot_h);
  for (double e = lx0; e <= lx1; ++e)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" class=\"lbl tick\">{4:g}</text>\n",
        px(std::pow(10, e)), top, top + plot_h, top + plot_h + 16, std::pow(10, e));
  for (double e = ly0; e <= ly1; ++e)
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" class=\"lbl tick\">{5}</text>\n",
        left, py(std::pow(10, e)), left + plot_w, left - 6, py(std::pow(10, e)) + 4,
        detail::rate(std::pow(10, e), ""));
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">Arithmetic intensity "
      "(FLOP/byte)</text>\n<text x=\"14\" y=\"{}\" text-anchor=\"middle\" class=\"axis\" "
      "transform=\"rotate(-90 14 {})\">Performance (FLOP/s)</text>\n",
      left + plot_w / 2, top + plot_h + 40, top + plot_h / 2, top + plot_h / 2);

  // Each roof: the DRAM slope up to its ridge point, then flat.
  const double x_start = std::max(x_lo, y_lo / bw);
  for (const Roof& r : roofs)
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{:.1f},{:.1f} "
        "{:.1f},{:.1f} {:.1f},{:.1f}\"><title>{} {}</title></polyline>\n",
        r.color, px(x_start), py(bw * x_start), px(r.peak / bw), py(r.peak), px(x_hi), py(r.peak),
        r.name, detail::rate(r.peak, "FLOP/s"));

  // The points first, so that no label covers one.
  struct Point {
    std::size_t number;
    const KernelDerivation* kernel;
    double x, y;
    double r;  // 4 to 8 px: the square root of the time its launch shape owns, of the largest
  };
  std::vector<Point> points;
  std::vector<const KernelDerivation*> no_flop, flop_unknown;
  std::int64_t most = 1;
  for (const auto& k : c.kernels) most = std::max(most, k.shape_total_ns);
  for (const auto& k : c.kernels) {
    if (plotted(k)) {
      const double r =
          4 + 4 * std::sqrt(double(std::max<std::int64_t>(0, k.shape_total_ns)) / double(most));
      points.push_back({points.size() + 1, &k, px(*k.arithmetic_intensity), py(*k.flop_per_s), r});
      taken.push_back({points.back().x - r - 1, points.back().y - r - 1, points.back().x + r + 1,
                       points.back().y + r + 1});
    } else {
      (k.flop && *k.flop == 0 ? no_flop : flop_unknown).push_back(&k);
    }
  }

  // Roof labels: at the right end above the line, else below it, else further left.
  for (const Roof& r : roofs) {
    const std::string text = r.name + " " + detail::rate(r.peak, "FLOP/s");
    const double w = kCharPx * double(text.size()), y = py(r.peak);
    std::optional<Box> chosen;
    for (double shift = 0; shift < plot_w && !chosen; shift += 40)
      for (double base : {y - 5, y + 14}) {
        const Box b = text_box(plot.x1 - 4 - shift - w, base, text.size());
        if (b.inside(plot) &&
            std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return t.overlaps(b); })) {
          chosen = b;
          break;
        }
      }
    if (!chosen) chosen = text_box(plot.x1 - 4 - w, y - 5, text.size());
    taken.push_back(*chosen);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"lbl roof-label\" fill=\"{}\">{}</text>\n",
        chosen->x0, chosen->y0 + kAscentPx, r.color, xml_escape(text));
  }

  // The DRAM label along the slope, where the slope is inside the plot and the label fits.
  {
    const std::string text = "DRAM " + detail::rate(bw, "B/s");
    const double ridge = roofs.empty() ? x_hi : roofs.back().peak / bw;
    const double x0 = px(x_start), y0 = py(bw * x_start), x1 = px(ridge), y1 = py(bw * ridge);
    const double angle = std::atan2(y1 - y0, x1 - x0);  // negative: the slope rises
    const double w = kCharPx * double(text.size()), h = kAscentPx + kDescentPx;
    for (double t = 0.08; t < 0.9; t += 0.04) {
      const double ax = x0 + t * (x1 - x0), ay = y0 + t * (y1 - y0) - 6;
      // The rotated text's bounding box: from its baseline start (ax, ay) along `angle`.
      const double ex = ax + w * std::cos(angle), ey = ay + w * std::sin(angle);
      const double nx = std::sin(angle) * h, ny = -std::cos(angle) * h;
      const Box b{std::min({ax, ex, ax + nx, ex + nx}), std::min({ay, ey, ay + ny, ey + ny}),
                  std::max({ax, ex, ax + nx, ex + nx}), std::max({ay, ey, ay + ny, ey + ny})};
      if (!b.inside(plot) ||
          std::any_of(taken.begin(), taken.end(), [&](const Box& o) { return o.overlaps(b); }))
        continue;
      taken.push_back(b);
      svg += fmt::format(
          "<text x=\"{0:.1f}\" y=\"{1:.1f}\" class=\"lbl slope-label\" fill=\"#555\" "
          "transform=\"rotate({2:.1f} {0:.1f} {1:.1f})\">{3}</text>\n",
          ax, ay, angle * 180 / 3.14159265358979, xml_escape(text));
      break;
    }
  }

  // Each point's number beside it: the first free spot of eight around it, further out if need
  // be (with a line back to the point).
  for (const Point& p : points) {
    const std::string text = std::to_string(p.number);
    const double w = kCharPx * double(text.size());
    std::optional<Box> chosen;
    for (double radius = 9; radius <= 45 && !chosen; radius += 9)
      for (const auto& [dx, dy] : std::initializer_list<std::pair<double, double>>{{1, 0},
                                                                                   {-1, 0},
                                                                                   {0, -1},
                                                                                   {0, 1},
                                                                                   {0.7, -0.7},
                                                                                   {-0.7, -0.7},
                                                                                   {0.7, 0.7},
                                                                                   {-0.7, 0.7}}) {
        // The box's centre at `radius` from the point in the direction (dx, dy).
        const double cx = p.x + dx * (radius + w / 2), cy = p.y + dy * (radius + kHalfLine);
        const Box b{cx - w / 2, cy - kHalfLine, cx + w / 2, cy + kHalfLine};
        if (b.inside(plot) && std::none_of(taken.begin(), taken.end(),
                                           [&](const Box& t) { return t.overlaps(b.padded()); })) {
          chosen = b;
          break;
        }
      }
    if (!chosen) chosen = Box{p.x + 9, p.y - kHalfLine, p.x + 9 + w, p.y + kHalfLine};
    taken.push_back(*chosen);
    const double cx = (chosen->x0 + chosen->x1) / 2, cy = (chosen->y0 + chosen->y1) / 2;
    if (std::hypot(cx - p.x, cy - p.y) > 16)
      svg += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#888\"/>", p.x,
          p.y, cx, cy);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" class=\"lbl point-label\">{}"
        "</text>\n",
        cx, chosen->y0 + kAscentPx, text);
  }
  for (const Point& p : points)
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" class=\"kernel\"><title>{}: "
        "{}, {} at {:.3g} FLOP/byte</title></circle>\n",
        p.x, p.y, p.r, verdict_color(p.kernel->bottleneck), xml_escape(p.kernel->name),
        analyze::to_string(p.kernel->bottleneck), detail::rate(*p.kernel->flop_per_s, "FLOP/s"),
        *p.kernel->arithmetic_intensity);
  svg += "</svg>\n";

  std::string legend =
      "<table class=\"roofline-legend\"><tr><th>#</th><th>Kernel</th><th>FLOP/byte</th>"
      "<th>FLOP/s</th><th>Of its roof</th><th>Bottleneck</th></tr>\n";
  // A kernel profiled at two launch shapes has two points: the launch tells them apart.
  std::map<std::string, int> shown_times;
  for (const Point& p : points) ++shown_times[names(p.kernel->name)];
  const auto label = [&](const KernelDerivation& k) {
    std::string shown = names(k.name);
    if (shown_times[shown] > 1)
      shown += fmt::format(" (grid {}, block {})",
                           std::int64_t{k.shape.grid.x} * k.shape.grid.y * k.shape.grid.z,
                           std::int64_t{k.shape.block.x} * k.shape.block.y * k.shape.block.z);
    return shown;
  };
  for (const Point& p : points) {
    const KernelDerivation& k = *p.kernel;
    legend += fmt::format(
        "<tr><td>{}</td><td title=\"{}\">{}</td><td>{:.3g}</td><td>{}</td><td>{}</td><td><span "
        "class=\"swatch\" style=\"background:{}\"></span>{}</td></tr>\n",
        p.number, xml_escape(k.name), xml_escape(label(k)), *k.arithmetic_intensity,
        detail::rate(*k.flop_per_s, "FLOP/s"),
        k.roofline ? detail::percent(k.roofline->fraction_of_roof) : std::string("-"),
        verdict_color(k.bottleneck), analyze::to_string(k.bottleneck));
  }
  legend += "</table>\n";
  const auto listed = [&](const std::vector<const KernelDerivation*>& ks) {
    std::string out;
    for (const KernelDerivation* k : ks) out += (out.empty() ? "" : ", ") + names(k->name);
    return xml_escape(out);
  };
  if (!no_flop.empty())
    legend += fmt::format(
        "<p class=\"roofline-note\">Not on the chart, doing no FLOPs (a FLOP/s axis has no place "
        "for them; their DRAM throughput is in the tables): {}.</p>\n",
        listed(no_flop));
  if (!flop_unknown.empty())
    legend += fmt::format(
        "<p class=\"roofline-note\">Not on the chart, FLOPs not collected (ktune profile "
        "--metrics roofline collects them): {}.</p>\n",
        listed(flop_unknown));
  return svg + legend;
}

}  // namespace ktune::report
