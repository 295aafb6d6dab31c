// One self-contained HTML file: inline CSS, SVG and one small script (the timeline's zoom), no
// fonts, images or scripts from elsewhere, so it can be attached to a ticket or opened offline.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/text.hpp"
#include "ktune/report/report.hpp"
#include "sections.hpp"
#include "units.hpp"

namespace ktune::report {

using analyze::Analysis;
using analyze::GapCause;
namespace d = detail;

namespace {

constexpr EnumName<GapCause> kCauseColors[] = {
    {GapCause::launch_bound, "#e8a33d"}, {GapCause::synchronization, "#d9534f"},
    {GapCause::copies, "#5b8dd6"},       {GapCause::counter_replay, "#8c6bb1"},
    {GapCause::setup, "#c7a27c"},        {GapCause::allocation, "#6fb7b7"},
    {GapCause::host, "#f2d05e"},         {GapCause::unattributed, "#b0b0b0"},
};

const char* cause_color(GapCause c) {
  return name_of(kCauseColors, c, "#b0b0b0");
}

// Horizontal bars of the top kernels' total GPU time.
std::string kernel_bars(const Analysis& a, std::size_t top, const analyze::NameTable& names) {
  const std::size_t n = std::min(top, a.kernels.size());
  if (n == 0) return {};
  // Labels in the report's name style, as wide as the longest (12 px monospace: 7.3 px a
  // character) up to 100 characters; a longer one is cut, its title has the full name.
  constexpr std::size_t kMaxLabel = 100;
  std::size_t longest = 10;
  for (std::size_t i = 0; i < n; ++i)
    longest = std::max(longest, std::min(kMaxLabel, names(a.kernels[i].name).size()));
  const int bar_h = 18, label_w = static_cast<int>(7.3 * double(longest)) + 12, chart_w = 420,
            width = label_w + chart_w + 90;
  const double max_ns = static_cast<double>(a.kernels.front().total_ns);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"kernels by total GPU time\">\n",
      width, static_cast<int>(n) * (bar_h + 4) + 4);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& g = a.kernels[i];
    const int y = 2 + static_cast<int>(i) * (bar_h + 4);
    const double w = max_ns > 0 ? chart_w * static_cast<double>(g.total_ns) / max_ns : 0;
    std::string label = names(g.name);
    if (label.size() > kMaxLabel) label = label.substr(0, kMaxLabel - 3) + "...";
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"lbl\">{}</text>"
        "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {} ({})"
        "</title></rect><text x=\"{:.1f}\" y=\"{}\" class=\"lbl\">{}</text>\n",
        label_w - 6, y + 13, xml_escape(label), label_w, y, std::max(w, 1.0), bar_h,
        i < a.backlog_size ? "#3c8d5a" : "#8fbf9f", xml_escape(g.name),
        d::duration(static_cast<double>(g.total_ns)), d::percent(g.share), label_w + w + 4, y + 13,
        d::percent(g.share));
  }
  return svg + "</svg>\n";
}

// One strip per device: each bin's busy share in green, its idle time coloured by cause.
std::string timelines(const Analysis& a) {
  std::string svg;
  const int width = 800, strip_h = 40;
  for (const auto& u : a.devices) {
    const std::size_t bins = u.bin_busy_ns.size();
    if (bins == 0 || u.bin_ns <= 0) continue;
    std::size_t used = 0;  // bins that lie inside the window
    // In 128 bits: bins of a window near INT64_MAX overflow int64 (found by fuzz_analysis).
    while (used < bins && static_cast<__int128>(used) * u.bin_ns < u.window_ns()) ++used;
    used = std::max<std::size_t>(used, 1);
    const double bw = static_cast<double>(width) / static_cast<double>(used);
    svg += fmt::format(
        "<p>Device {}: {} window, busy {} (wheel: zoom, drag: pan, double-click: reset)</p>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" viewBox=\"0 0 {} {}\" "
        "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"device {} timeline\">\n",
        u.device, d::duration(static_cast<double>(u.window_ns())), d::percent(u.busy_fraction()),
        width, strip_h + 22, width, strip_h + 22, u.device);
    for (std::size_t i = 0; i < used; ++i) {
      const double full = static_cast<double>(u.bin_ns);
      double y = 0;
      auto stack = [&](std::int64_t v, const char* color) {
        if (v <= 0) return;
        const double h = strip_h * std::min(1.0, static_cast<double>(v) / full);
        svg += fmt::format(
            "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/>",
            i * bw, strip_h - y - h, bw + 0.05, h, color);
        y += h;
      };
      stack(u.bin_busy_ns[i], "#3c8d5a");
      for (GapCause c : analyze::kGapCauses)
        stack(u.bin_idle_ns[static_cast<int>(c)][i], cause_color(c));
    }
    // The time axis: about eight ticks at 1, 2 or 5 times a power of ten, in the times the
    // tables show (from the trace's first record).
    const double span = static_cast<double>(used) * static_cast<double>(u.bin_ns);
    const double raw = span / 8, decade = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / decade < 2 ? decade : raw / decade < 5 ? 2 * decade : 5 * decade;
    const double offset = static_cast<double>(u.window_start_ns - a.origin_ns);
    // Counted, not accumulated: far from the origin t += step would stop advancing.
    const double first = std::ceil(offset / step);
    for (int k = 0; k <= 16 && std::isfinite(first) && step > 0; ++k) {
      const double t = (first + k) * step;
      if (t > offset + span) break;
      const double x = width * (t - offset) / span;
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#555\"/>"
          "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"{5}\" class=\"tick\">{4}</text>",
          x, strip_h, strip_h + 4, strip_h + 16, d::duration(t),
          x < 30           ? "start"
          : x > width - 30 ? "end"
                           : "middle");  // edge labels stay inside
    }
    svg += "\n</svg>\n";
  }
  if (svg.empty()) return svg;
  std::string legend = "<p class=\"legend\"><span style=\"background:#3c8d5a\"></span>busy ";
  for (GapCause c : analyze::kGapCauses)
    legend += fmt::format("<span style=\"background:{}\"></span>idle: {} ", cause_color(c),
                          d::cause_text(c));
  return svg + legend + "</p>\n";
}

// The timeline's zoom: the wheel narrows or widens the strip's viewBox around the pointer, a drag
// pans it, a double-click restores it. Inline, so the file stays self-contained.
constexpr const char* kZoomScript = R"(<script>
for (const svg of document.querySelectorAll('svg.timeline')) {
  const full = svg.viewBox.baseVal, W = full.width, H = full.height;
  let x0 = 0, w = W, drag = null;
  const set = () => svg.setAttribute('viewBox', x0 + ' 0 ' + w + ' ' + H);
  svg.addEventListener('wheel', e => {
    e.preventDefault();
    const r = svg.getBoundingClientRect(), at = x0 + w * (e.clientX - r.left) / r.width;
    w = Math.min(W, Math.max(W / 1000, w * (e.deltaY < 0 ? 0.8 : 1.25)));
    x0 = Math.min(W - w, Math.max(0, at - w * (e.clientX - r.left) / r.width));
    set();
  });
  svg.addEventListener('mousedown', e => drag = {x: e.clientX, x0});
  window.addEventListener('mouseup', () => drag = null);
  window.addEventListener('mousemove', e => {
    if (!drag) return;
    const r = svg.getBoundingClientRect();
    x0 = Math.min(W - w, Math.max(0, drag.x0 - (e.clientX - drag.x) * w / r.width));
    set();
  });
  svg.addEventListener('dblclick', () => { x0 = 0; w = W; set(); });
}
</script>
)";

// One section as an HTML table.
std::string section_html(const d::Section& s) {
  std::string out = fmt::format("<h2>{}</h2>\n", xml_escape(s.title));
  if (!s.note.empty()) out += fmt::format("<p>{}</p>\n", xml_escape(s.note));
  if (s.rows.empty()) return out;
  out += "<table><tr>";
  for (const auto& h : s.header) out += "<th>" + xml_escape(h) + "</th>";
  out += "</tr>\n";
  for (const auto& r : s.rows) {
    out += "<tr>";
    for (const auto& c : r) out += "<td>" + xml_escape(c) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

// Names as the tables show them (--names); the bars' titles and the legend's hold the full name.
std::string render_html(const Analysis& a, const RenderOptions& o) {
  const analyze::NameTable names = d::report_names(a, o);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>ktune report</title>\n<style>\n"
      "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}"
      "table{border-collapse:collapse;margin:.5em 0 1.5em}"
      "th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top;"
      "overflow-wrap:anywhere}th{background:#f3f3f3;white-space:nowrap}"
      "table{max-width:100%}.tick{font:10px sans-serif}svg.timeline{cursor:grab;"
      "max-width:100%}.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}"
      ".lbl{font:12px monospace}.legend span{display:inline-block;width:12px;height:12px;"
      "margin:0 4px 0 12px;vertical-align:middle}code{background:#f3f3f3}"
      ".row{display:flex;flex-wrap:wrap;gap:2em;align-items:flex-start}.axis{font:13px "
      "sans-serif}\n"
      "</style></head><body>\n";
  out += fmt::format("<h1>ktune report</h1>\n<p><code>{}</code></p>\n<p><b>{}</b></p>\n",
                     xml_escape(d::capture_line(a)), xml_escape(d::headline(a)));
  for (const std::string& note : a.notes) out += fmt::format("<p>{}</p>\n", xml_escape(note));
  // A comparison with a baseline leads: it is what `ktune report OLD NEW` was asked for.
  for (const d::Section& s : d::comparison_sections(a, o, names)) out += section_html(s);
  const std::string roofline = roofline_html(a, names);
  if (roofline.empty()) {
    out += "<h2>Timeline</h2>\n" + timelines(a);
  } else {
    out += "<div class=\"row\"><div><h2>Timeline</h2>\n" + timelines(a) +
           "</div><div><h2>Roofline</h2>\n" + roofline + "</div></div>\n";
  }
  out += "<h2>Top kernels</h2>\n" + kernel_bars(a, std::min<std::size_t>(o.top_kernels, 20), names);
  for (const d::Section& s : d::sections(a, o, false)) out += section_html(s);
  return out + kZoomScript + "</body></html>\n";
}

}  // namespace ktune::report
