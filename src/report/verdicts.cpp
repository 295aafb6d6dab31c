// The counter tier in the reports: the verdict table, opportunities, the comparison with a
// baseline, the profile contract (markdown) and the roofline (SVG).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/text.hpp"
#include "ktune/report/report.hpp"
#include "sections.hpp"
#include "units.hpp"

namespace ktune::report {

using analyze::Analysis;
using analyze::KernelDerivation;
using nlohmann::json;
namespace d = detail;

namespace {

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string pct_cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}", *v) : std::string("-");
}

// "1.23 TB/s", "456 GFLOP/s": three significant figures with an SI prefix.
std::string rate(double v, std::string_view unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 999.5 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

std::string occupancy_cell(const KernelDerivation& k) {
  std::string achieved = k.achieved_occupancy_pct ? fmt::format("{:.1f}", *k.achieved_occupancy_pct)
                                                  : std::string("-");
  if (!k.theoretical) return achieved + " %";
  std::string out = fmt::format("{} of {:.1f} %", achieved, k.theoretical->occupancy_pct);
  if (k.theoretical->limiter != analyze::OccupancyLimiter::none)
    out += fmt::format(" ({})", analyze::to_string(k.theoretical->limiter));
  return out;
}

std::string shape_cell(const analyze::LaunchShape& s) {
  return fmt::format("{} {}", d::dim3(s.grid), d::dim3(s.block));
}

// "long_scoreboard 62%, wait 12%, not_selected 8%"; "-" without the stalls set.
std::string stalls_cell(const KernelDerivation& k) {
  std::string out;
  for (std::size_t i = 0; i < k.stalls.size() && i < analyze::threshold::kTopStalls; ++i)
    out += fmt::format("{}{} {:.0f}%", i ? ", " : "", k.stalls[i].reason, 100 * k.stalls[i].share);
  return out.empty() ? "-" : out;
}

// Which launch the counters were taken on: its grid and block, its duration, and how much of the
// kernel's time launches of that shape own.
std::string profiled_launch_cell(const KernelDerivation& k) {
  return fmt::format(
      "grid {} block {}, {} profiled at {} each; launches of that shape: {}, {} "
      "in all",
      d::dim3(k.shape.grid), d::dim3(k.shape.block), k.launches, d::duration(k.duration_ns),
      k.shape_launches, d::duration(double(k.shape_total_ns)));
}

std::string verdict_cell(const KernelDerivation& k) {
  std::string out = analyze::to_string(k.bottleneck);
  if (k.stall_cause != analyze::StallCause::none)
    out += fmt::format(" ({})", analyze::to_string(k.stall_cause));
  return out;
}

std::string ceilings_line(const analyze::Ceilings& c) {
  if (c.empty()) return "none: the trace carries none and this machine has no calibration";
  if (c.origin == analyze::CeilingsOrigin::none) return c.source;
  return fmt::format("{}; from the {}", c.source, analyze::to_string(c.origin));
}

// The group of the kernel table a derivation belongs to (its share of all GPU time). Grouped by
// name, a kernel's group goes with the shape that owns most of its time only.
double share_of(const Analysis& a, const KernelDerivation& k) {
  if (a.group_by == analyze::GroupBy::name && a.counters.owning(k.name) != &k) return 0;
  for (const auto& g : a.kernels)
    if (g.name == k.name && (a.group_by == analyze::GroupBy::name || g.shape == k.shape))
      return g.share;
  return 0;
}

struct RankedOpportunity {
  const KernelDerivation* kernel;
  const analyze::Opportunity* opportunity;
  double run_gain;  // the kernel's estimated gain x its share of all GPU time
};

// The run's opportunities, largest estimated saving of total GPU time first.
std::vector<RankedOpportunity> ranked_opportunities(const Analysis& a) {
  std::vector<RankedOpportunity> all;
  for (const auto& k : a.counters.kernels)
    for (const auto& o : k.opportunities)
      all.push_back({&k, &o, o.estimated_gain * share_of(a, k)});
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& x, const auto& y) { return x.run_gain > y.run_gain; });
  return all;
}

const KernelDerivation* find_derivation(const analyze::CounterAnalysis& c,
                                        const KernelDerivation& k) {
  for (const auto& b : c.kernels)
    if (b.name == k.name && b.shape == k.shape) return &b;
  for (const auto& b : c.kernels)
    if (b.name == k.name) return &b;
  return nullptr;
}

std::string change_cell(double before, double after) {
  if (before == 0) return after == 0 ? "0 %" : "new";
  return fmt::format("{:+.1f} %", 100 * (after - before) / before);
}

// Metrics compared against a baseline: name, value of a derivation (nullopt: not collected).
struct Compared {
  const char* name;
  std::optional<double> (*value)(const KernelDerivation&);
  std::string (*format)(double);
};
const std::vector<Compared>& compared_metrics() {
  static const std::vector<Compared> all = {
      {"duration", [](const KernelDerivation& k) { return std::optional<double>(k.duration_ns); },
       [](double v) { return d::duration(v); }},
      {"SM %", [](const KernelDerivation& k) { return k.sm_pct; },
       [](double v) { return fmt::format("{:.1f}", v); }},
      {"TC %", [](const KernelDerivation& k) { return k.tensor_pct; },
       [](double v) { return fmt::format("{:.1f}", v); }},
      {"DRAM %", [](const KernelDerivation& k) { return k.dram_pct; },
       [](double v) { return fmt::format("{:.1f}", v); }},
      {"DRAM bytes", [](const KernelDerivation& k) { return k.dram_bytes; },
       [](double v) { return rate(v, "B"); }},
      {"FLOP/s", [](const KernelDerivation& k) { return k.flop_per_s; },
       [](double v) { return rate(v, "FLOP/s"); }},
      {"achieved occupancy %", [](const KernelDerivation& k) { return k.achieved_occupancy_pct; },
       [](double v) { return fmt::format("{:.1f}", v); }},
      {"L2 hit %", [](const KernelDerivation& k) { return k.l2_hit_pct; },
       [](double v) { return fmt::format("{:.1f}", v); }},
  };
  return all;
}

}  // namespace

namespace detail {

std::vector<Section> counter_sections(const Analysis& a, const RenderOptions& o) {
  const auto& c = a.counters;
  if (c.empty()) return {};
  std::vector<Section> out;
  Section v{"Why it is slow (counter tier)",
            fmt::format("{} profiled launches; ceilings: {}. Launch: the grid and block the "
                        "counters were taken on. Stalls: share of the warps' cycles. "
                        "docs/analysis.md explains the verdicts.",
                        c.profiled_launches, ceilings_line(c.ceilings))};
  v.header = {"Kernel", "Launch",    "Launches",   "Duration",  "TC %",
              "DRAM %", "Occupancy", "Bottleneck", "Key issue", "Top stalls"};
  for (std::size_t i = 0; i < c.kernels.size() && i < o.top_kernels; ++i) {
    const auto& k = c.kernels[i];
    v.rows.push_back({analyze::shown_name(k.name, o.names), shape_cell(k.shape),
                      std::to_string(k.launches), duration(k.duration_ns), pct_cell(k.tensor_pct),
                      pct_cell(k.dram_pct), occupancy_cell(k), verdict_cell(k), k.key_issue,
                      stalls_cell(k)});
  }
  out.push_back(v);

  Section w{"What to change", "Per kernel, largest estimated gain (share of its time) first."};
  w.header = {"Kernel", "Gain", "Change", "Trigger"};
  for (std::size_t i = 0; i < c.kernels.size() && i < o.top_kernels; ++i)
    for (const auto& op : c.kernels[i].opportunities)
      w.rows.push_back({analyze::shown_name(c.kernels[i].name, o.names), percent(op.estimated_gain),
                        op.action, op.trigger});
  if (!w.rows.empty()) out.push_back(w);

  Section u{"Not concluded", "A metric that was not collected leaves its conclusion open."};
  u.header = {"Kernel", "What"};
  for (std::size_t i = 0; i < c.kernels.size() && i < o.top_kernels; ++i)
    for (const auto& line : c.kernels[i].unknown)
      u.rows.push_back({analyze::shown_name(c.kernels[i].name, o.names), line});
  if (!u.rows.empty()) out.push_back(u);
  return out;
}

std::vector<Section> baseline_sections(const Analysis& a, const RenderOptions& o) {
  if (!o.baseline) return {};
  const Analysis& base = *o.baseline;
  Section s{"vs baseline", fmt::format("Baseline: {}. Change is (now - baseline) / baseline.",
                                       capture_line(base))};
  s.header = {"Kernel", "Metric", "Baseline", "Now", "Change"};
  s.rows.push_back({"(all kernels)", "GPU time", duration(double(base.kernel_total_ns)),
                    duration(double(a.kernel_total_ns)),
                    change_cell(double(base.kernel_total_ns), double(a.kernel_total_ns))});
  s.rows.push_back({"(all kernels)", "GPU busy",
                    percent(fraction(base.busy_ns(), base.window_ns())),
                    percent(fraction(a.busy_ns(), a.window_ns())),
                    change_cell(fraction(base.busy_ns(), base.window_ns()),
                                fraction(a.busy_ns(), a.window_ns()))});
  for (std::size_t i = 0; i < a.kernels.size() && i < o.top_kernels; ++i) {
    const auto& g = a.kernels[i];
    const auto old = std::find_if(base.kernels.begin(), base.kernels.end(),
                                  [&](const auto& b) { return b.name == g.name; });
    const std::string name = analyze::shown_name(g.name, o.names);
    if (old == base.kernels.end()) {
      s.rows.push_back({name, "total time", "-", duration(double(g.total_ns)), "new"});
      continue;
    }
    s.rows.push_back({name, "total time", duration(double(old->total_ns)),
                      duration(double(g.total_ns)),
                      change_cell(double(old->total_ns), double(g.total_ns))});
  }
  for (const auto& k : a.counters.kernels) {
    const KernelDerivation* old = find_derivation(base.counters, k);
    if (!old) continue;
    const std::string name = analyze::shown_name(k.name, o.names);
    for (const Compared& m : compared_metrics()) {
      const auto before = m.value(*old), after = m.value(k);
      if (!before || !after) continue;
      s.rows.push_back(
          {name, m.name, m.format(*before), m.format(*after), change_cell(*before, *after)});
    }
    if (old->bottleneck != k.bottleneck)
      s.rows.push_back({name, "bottleneck", analyze::to_string(old->bottleneck),
                        analyze::to_string(k.bottleneck), "changed"});
  }
  return {s};
}

json counters_json(const analyze::CounterAnalysis& c) {
  json kernels = json::array();
  for (const auto& k : c.kernels) {
    json j = {{"name", k.name},
              {"launch",
               {{"grid", {k.shape.grid.x, k.shape.grid.y, k.shape.grid.z}},
                {"block", {k.shape.block.x, k.shape.block.y, k.shape.block.z}},
                {"shared_mem_bytes", k.shape.shared_mem_bytes},
                {"registers_per_thread", k.shape.registers_per_thread}}},
              {"device", k.device_id},
              {"launches", k.launches},
              {"duration_ns", k.duration_ns},
              {"flop", optional_json(k.flop)},
              {"fp32_flop", optional_json(k.fp32_flop)},
              {"fp16_flop", optional_json(k.fp16_flop)},
              {"fp64_flop", optional_json(k.fp64_flop)},
              {"tensor_flop", optional_json(k.tensor_flop)},
              {"flop_per_s", optional_json(k.flop_per_s)},
              {"dram_bytes", optional_json(k.dram_bytes)},
              {"dram_bytes_per_s", optional_json(k.dram_bytes_per_s)},
              {"arithmetic_intensity", optional_json(k.arithmetic_intensity)},
              {"sm_pct", optional_json(k.sm_pct)},
              {"memory_pct", optional_json(k.memory_pct)},
              {"dram_pct", optional_json(k.dram_pct)},
              {"tensor_pct", optional_json(k.tensor_pct)},
              {"l2_hit_pct", optional_json(k.l2_hit_pct)},
              {"achieved_occupancy_pct", optional_json(k.achieved_occupancy_pct)},
              {"waves_per_sm", optional_json(k.waves_per_sm)},
              {"local_memory_per_thread_bytes", k.local_memory_per_thread_bytes},
              {"local_memory_bytes", optional_json(k.local_memory_bytes)},
              {"shape_launches", k.shape_launches},
              {"shape_total_ns", k.shape_total_ns},
              {"bottleneck", analyze::to_string(k.bottleneck)},
              {"stall_cause", analyze::to_string(k.stall_cause)},
              {"warp_cycles_per_issue", optional_json(k.warp_cycles_per_issue)},
              {"library", k.library},
              {"tune_command", k.tune_command},
              {"key_issue", k.key_issue},
              {"root_cause", k.root_cause},
              {"unknown", k.unknown},
              {"metrics", k.metrics}};
    j["theoretical_occupancy"] =
        k.theoretical ? json{{"blocks_per_sm", k.theoretical->blocks_per_sm},
                             {"active_warps_per_sm", k.theoretical->active_warps_per_sm},
                             {"occupancy_pct", k.theoretical->occupancy_pct},
                             {"limiter", analyze::to_string(k.theoretical->limiter)}}
                      : json(nullptr);
    j["roofline"] = k.roofline ? json{{"precision", k.roofline->precision},
                                      {"peak_flop_per_s", k.roofline->peak_flop_per_s},
                                      {"ridge_flop_per_byte", k.roofline->ridge_flop_per_byte},
                                      {"attainable_flop_per_s", k.roofline->attainable_flop_per_s},
                                      {"fraction_of_roof", k.roofline->fraction_of_roof},
                                      {"flop_from_tensor_pipe", k.roofline->flop_from_tensor_pipe}}
                               : json(nullptr);
    json ops = json::array();
    for (const auto& o : k.opportunities)
      ops.push_back(
          {{"action", o.action}, {"trigger", o.trigger}, {"estimated_gain", o.estimated_gain}});
    j["opportunities"] = ops;
    json stalls = json::array();
    for (const auto& st : k.stalls)
      stalls.push_back(
          {{"reason", st.reason}, {"warps_per_issue", st.warps_per_issue}, {"share", st.share}});
    j["stalls"] = stalls;
    kernels.push_back(std::move(j));
  }
  return {{"ceilings",
           {{"dram_bytes_per_s", c.ceilings.dram_bytes_per_s},
            {"fp32_flop_per_s", c.ceilings.fp32_flop_per_s},
            {"bf16_flop_per_s", c.ceilings.bf16_flop_per_s},
            {"fp16_flop_per_s", c.ceilings.fp16_flop_per_s},
            {"kind", c.ceilings.kind},
            {"origin", analyze::to_string(c.ceilings.origin)},
            {"source", c.ceilings.source}}},
          {"profiled_launches", c.profiled_launches},
          {"unmatched_launches", c.unmatched_launches},
          {"kernels", kernels}};
}

json baseline_json(const Analysis& a, const Analysis& base) {
  json kernels = json::array();
  for (const auto& g : a.kernels) {
    const auto old = std::find_if(base.kernels.begin(), base.kernels.end(),
                                  [&](const auto& b) { return b.name == g.name; });
    kernels.push_back(
        {{"name", g.name},
         {"baseline_total_ns", old == base.kernels.end() ? json(nullptr) : json(old->total_ns)},
         {"total_ns", g.total_ns}});
  }
  json metrics = json::array();
  for (const auto& k : a.counters.kernels) {
    const KernelDerivation* old = find_derivation(base.counters, k);
    if (!old) continue;
    for (const Compared& m : compared_metrics()) {
      const auto before = m.value(*old), after = m.value(k);
      if (before && after)
        metrics.push_back(
            {{"name", k.name}, {"metric", m.name}, {"baseline", *before}, {"value", *after}});
    }
  }
  return {{"command_line", base.metadata.command_line},
          {"started_at", base.metadata.started_at},
          {"kernel_time_ns", base.kernel_total_ns},
          {"kernels", kernels},
          {"metrics", metrics}};
}

}  // namespace detail

std::string render_contract(const Analysis& a, const RenderOptions& o) {
  using d::md_cell;
  const auto& m = a.metadata;
  std::string out = "# Profile contract\n\n## Configuration\n\n";
  std::vector<std::vector<std::string>> config;
  config.push_back({"Command", m.command_line.empty()
                                   ? std::string("(unknown)")
                                   : fmt::format("`{}`", fmt::join(m.command_line, " "))});
  if (m.identity)
    for (const auto& dev : m.identity->devices)
      config.push_back({fmt::format("GPU {}", dev.ordinal),
                        fmt::format("{} ({}, {} SMs)", dev.name, dev.arch(), dev.sm_count)});
  config.push_back(
      {"Trace", fmt::format("started {}, tracer {}", m.started_at.empty() ? "?" : m.started_at,
                            m.tracer_version.empty() ? "?" : m.tracer_version)});
  const auto& c = a.counters;
  config.push_back({"Ceilings", c.ceilings.empty()
                                    ? ceilings_line(c.ceilings)
                                    : fmt::format("DRAM {}, FP32 {}, BF16 {}, FP16 {} ({})",
                                                  rate(c.ceilings.dram_bytes_per_s, "B/s"),
                                                  rate(c.ceilings.fp32_flop_per_s, "FLOP/s"),
                                                  rate(c.ceilings.bf16_flop_per_s, "FLOP/s"),
                                                  rate(c.ceilings.fp16_flop_per_s, "FLOP/s"),
                                                  ceilings_line(c.ceilings))});
  config.push_back({"Counters", c.empty()
                                    ? std::string("none: profile with --metrics roofline,stalls")
                                    : fmt::format("{} profiled launches of {} kernels",
                                                  c.profiled_launches, c.kernels.size())});
  config.push_back({"GPU time", fmt::format("{} in {} kernels; busy {}",
                                            d::duration(double(a.kernel_total_ns)), a.kernel_count,
                                            d::percent(d::fraction(a.busy_ns(), a.window_ns())))});
  out += d::md_table({"Item", "Value"}, config);

  out += "\n## Stages\n\n";
  std::vector<std::vector<std::string>> stages;
  const std::size_t top = std::min<std::size_t>(o.top_kernels, 10);
  for (std::size_t i = 0; i < a.kernels.size() && i < top; ++i) {
    const auto& g = a.kernels[i];
    // Grouped by name, the counters of the shape that owns most of the kernel's time.
    const KernelDerivation* k = a.group_by == analyze::GroupBy::name ? c.owning(g.name) : nullptr;
    if (a.group_by != analyze::GroupBy::name)
      for (const auto& x : c.kernels)
        if (x.name == g.name && x.shape == g.shape) {
          k = &x;
          break;
        }
    stages.push_back({std::to_string(i + 1), analyze::shown_name(g.name, o.names),
                      d::percent(g.share), std::to_string(g.duration_ns.count),
                      d::duration(g.duration_ns.median),
                      k && k->flop_per_s ? rate(*k->flop_per_s, "FLOP/s") : "-",
                      k && k->dram_bytes_per_s ? rate(*k->dram_bytes_per_s, "B/s") : "-",
                      k ? pct_cell(k->tensor_pct) : "-", k ? pct_cell(k->dram_pct) : "-",
                      k ? occupancy_cell(*k) : "-", k ? verdict_cell(*k) : "not profiled",
                      k ? stalls_cell(*k) : "-"});
  }
  out += d::md_table({"#", "Kernel", "Time", "Launches", "Median", "FLOP/s", "DRAM B/s", "TC %",
                      "DRAM %", "Occupancy", "Bottleneck", "Top stalls"},
                     stages);

  out += "\n## Bottleneck and root cause\n\n";
  if (c.empty()) {
    out +=
        "No counters in this trace: `ktune profile --metrics roofline,stalls -- CMD` collects "
        "them.\n";
  } else {
    for (std::size_t i = 0; i < c.kernels.size() && i < 3; ++i) {
      const auto& k = c.kernels[i];
      out += fmt::format("- **{}** ({}): {}\n", md_cell(analyze::shown_name(k.name, o.names)),
                         verdict_cell(k), md_cell(k.root_cause));
      out += fmt::format("  - profiled launch: {}\n", md_cell(profiled_launch_cell(k)));
      if (!k.library.empty())
        out += fmt::format("  - library: {}{}\n", md_cell(k.library),
                           k.tune_command.empty() ? "" : " (`" + k.tune_command + "`)");
      for (const auto& u : k.unknown) out += fmt::format("  - not concluded: {}\n", md_cell(u));
    }
  }

  out += "\n## Top 3 opportunities\n\n";
  const auto ranked = ranked_opportunities(a);
  if (ranked.empty()) {
    out += "None found.\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < ranked.size() && i < 3; ++i)
      rows.push_back({std::to_string(i + 1), analyze::shown_name(ranked[i].kernel->name, o.names),
                      ranked[i].opportunity->action, "`" + ranked[i].opportunity->trigger + "`",
                      d::percent(ranked[i].opportunity->estimated_gain),
                      d::percent(ranked[i].run_gain)});
    out += d::md_table({"#", "Kernel", "Change", "Trigger", "Kernel gain", "Run gain"}, rows);
  }

  for (const d::Section& s : d::baseline_sections(a, o)) {
    out += "\n## " + s.title + "\n\n" + s.note + "\n\n" + d::md_table(s.header, s.rows);
  }
  return out;
}

std::string roofline_svg(const Analysis& a) {
  const auto& c = a.counters;
  if (c.empty() || c.ceilings.dram_bytes_per_s <= 0) return {};
  const double bw = c.ceilings.dram_bytes_per_s;
  struct Roof {
    const char* name;
    double peak;
    const char* color;
  };
  std::vector<Roof> roofs;
  if (c.ceilings.bf16_flop_per_s > 0)
    roofs.push_back({"BF16", c.ceilings.bf16_flop_per_s, "#7b4fa0"});
  if (c.ceilings.fp16_flop_per_s > 0 && c.ceilings.fp16_flop_per_s != c.ceilings.bf16_flop_per_s)
    roofs.push_back({"FP16", c.ceilings.fp16_flop_per_s, "#a05f4f"});
  if (c.ceilings.fp32_flop_per_s > 0)
    roofs.push_back({"FP32", c.ceilings.fp32_flop_per_s, "#2f6db5"});
  double top_peak = bw;
  for (const Roof& r : roofs) top_peak = std::max(top_peak, r.peak);

  // Log axes over whole decades: from 1/100 FLOP per byte to ten times the highest ridge (or the
  // highest point); FLOP/s from 1 G to the decade above the highest roof.
  double x_max = top_peak / bw * 10;
  for (const auto& k : c.kernels)
    if (k.arithmetic_intensity) x_max = std::max(x_max, *k.arithmetic_intensity * 2);
  const double lx0 = -2, lx1 = std::ceil(std::log10(x_max));
  const double ly0 = 9, ly1 = std::ceil(std::log10(top_peak * 1.5));
  const int left = 70, top = 20, plot_w = 520, plot_h = 340, width = left + plot_w + 30,
            height = top + plot_h + 50;
  const auto px = [&](double x) { return left + (std::log10(x) - lx0) / (lx1 - lx0) * plot_w; };
  const auto py = [&](double y) {
    return top + plot_h - (std::log10(y) - ly0) / (ly1 - ly0) * plot_h;
  };
  const double x_lo = std::pow(10, lx0), x_hi = std::pow(10, lx1), y_lo = std::pow(10, ly0);

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"roofline\" class=\"roofline\">\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fbfaf0\" stroke=\"#999\"/>\n",
      width, height, left, top, plot_w, plot_h);
  for (double e = lx0; e <= lx1; ++e)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" class=\"lbl\">{4:g}</text>\n",
        px(std::pow(10, e)), top, top + plot_h, top + plot_h + 16, std::pow(10, e));
  for (double e = ly0; e <= ly1; ++e)
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" class=\"lbl\">{5}</text>\n",
        left, py(std::pow(10, e)), left + plot_w, left - 6, py(std::pow(10, e)) + 4,
        rate(std::pow(10, e), ""));
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">Arithmetic intensity "
      "(FLOP/byte)</text>\n<text x=\"14\" y=\"{}\" text-anchor=\"middle\" class=\"axis\" "
      "transform=\"rotate(-90 14 {})\">Performance (FLOP/s)</text>\n",
      left + plot_w / 2, top + plot_h + 40, top + plot_h / 2, top + plot_h / 2);
  // Each roof: the DRAM slope up to its ridge point, then flat.
  for (const Roof& r : roofs) {
    const double ridge = r.peak / bw;
    const double x_start = std::max(x_lo, y_lo / bw);
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{:.1f},{:.1f} "
        "{:.1f},{:.1f} {:.1f},{:.1f}\"><title>{} {}</title></polyline>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" class=\"lbl\" fill=\"{}\">{} "
        "{}</text>\n",
        r.color, px(x_start), py(bw * x_start), px(ridge), py(r.peak), px(x_hi), py(r.peak), r.name,
        rate(r.peak, "FLOP/s"), left + plot_w - 4, py(r.peak) - 5, r.color, r.name,
        rate(r.peak, "FLOP/s"));
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"lbl\" fill=\"#555\" transform=\"rotate({:.1f} "
      "{:.1f} {:.1f})\">DRAM {}</text>\n",
      px(0.05), py(bw * 0.05) - 6,
      -std::atan2(py(bw * 0.05) - py(bw * 0.5), px(0.5) - px(0.05)) * 180 / 3.14159265358979,
      px(0.05), py(bw * 0.05) - 6, rate(bw, "B/s"));
  // One point per derived kernel. A kernel without FLOPs (a copy) has no place on a log FLOP axis;
  // it sits at the left edge at the height its bandwidth reaches there, i.e. on the slope it runs.
  for (const auto& k : c.kernels) {
    double x = 0, y = 0;
    std::string note;
    if (k.arithmetic_intensity && *k.arithmetic_intensity > 0 && k.flop_per_s) {
      x = *k.arithmetic_intensity;
      y = *k.flop_per_s;
    } else if (k.flop && *k.flop == 0 && k.dram_bytes_per_s && *k.dram_bytes_per_s > 0) {
      x = x_lo;
      y = *k.dram_bytes_per_s * x_lo;
      note = " (no FLOPs: placed by its bandwidth)";
    } else {
      continue;  // FLOPs not collected: no honest place on the chart
    }
    x = std::clamp(x, x_lo, x_hi);
    y = std::clamp(y, y_lo, std::pow(10, ly1));
    // Labels near the right edge go on the point's left, inside the chart.
    const bool right_edge = px(x) > left + plot_w - 160;
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"#d62728\" class=\"kernel\"><title>{}: "
        "{}, {} at {:.3g} FLOP/byte{}</title></circle>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" class=\"lbl\">{}</text>\n",
        px(x), py(y), xml_escape(k.name), analyze::to_string(k.bottleneck), rate(y, "FLOP/s"), x,
        note, right_edge ? px(x) - 9 : px(x) + 9, py(y) + 4, right_edge ? "end" : "start",
        xml_escape(analyze::base_name(k.name)));
  }
  return svg + "</svg>\n";
}

}  // namespace ktune::report
