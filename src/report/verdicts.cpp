// The counter tier in the reports: the verdict table, opportunities, the comparison of counters
// with a baseline and the profile contract (markdown). The roofline is in roofline.cpp.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/text.hpp"
#include "ktune/report/report.hpp"
#include "ktune/trace/metrics.hpp"
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

using detail::rate;

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

// "memory-bound (memory latency)"; "latency-bound, near the line (memory 57.0 %: else
// memory-bound)"; "not measured (--metrics roofline)".
std::string verdict_cell(const KernelDerivation& k) {
  std::string out = analyze::to_string(k.bottleneck);
  if (k.bottleneck == analyze::Bottleneck::not_measured)
    return out + fmt::format(" ({})", k.measure_with);
  if (k.stall_cause != analyze::StallCause::none)
    out += fmt::format(" ({})", analyze::to_string(k.stall_cause));
  if (k.near_line)
    out += fmt::format(", near the line ({} {:.1f} %: else {})", k.near_line->side,
                       k.near_line->pct, analyze::to_string(k.near_line->other));
  return out;
}

std::string ceilings_line(const analyze::Ceilings& c) {
  if (c.empty()) return "none: the trace carries none and this machine has no calibration";
  if (c.origin == analyze::CeilingsOrigin::none) return c.source;
  return fmt::format("{}; from the {}", c.source, analyze::to_string(c.origin));
}

// The share of all GPU time that the launches a derivation was measured on own: its launch
// shape's launches, not the kernel's others (a shape owning a third of a kernel's time once
// carried its 50 % estimate over all of it).
double measured_share(const Analysis& a, const KernelDerivation& k) {
  return d::fraction(k.shape_total_ns, a.kernel_total_ns);
}

struct RankedOpportunity {
  const KernelDerivation* kernel;
  const analyze::Opportunity* opportunity;
  double run_gain;  // the estimated gain x the share of GPU time its launch shape owns
};

// The run's opportunities, largest estimated saving of total GPU time first.
std::vector<RankedOpportunity> ranked_opportunities(const Analysis& a) {
  std::vector<RankedOpportunity> all;
  for (const auto& k : a.counters.kernels)
    for (const auto& o : k.opportunities)
      all.push_back({&k, &o, o.estimated_gain * measured_share(a, k)});
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

  Section w{"What to change",
            "Per kernel, largest estimated gain (share of its time) first; at most: what the "
            "measured SM and memory throughput leave for a change of its kind."};
  w.header = {"Kernel", "Gain", "At most", "Change", "Trigger"};
  for (std::size_t i = 0; i < c.kernels.size() && i < o.top_kernels; ++i)
    for (const auto& op : c.kernels[i].opportunities)
      w.rows.push_back({analyze::shown_name(c.kernels[i].name, o.names), percent(op.estimated_gain),
                        percent(op.bound), op.action, op.trigger});
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
  Section s{"Counters vs baseline",
            "Each profiled kernel's counters before and now; change is (now - baseline) / "
            "baseline."};
  s.header = {"Kernel", "Metric", "Baseline", "Now", "Change"};
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
  if (s.rows.empty()) return {};
  return {s};
}

json counters_json(const analyze::CounterAnalysis& c, const analyze::NameTable& names) {
  json kernels = json::array();
  for (const auto& k : c.kernels) {
    json j = {{"name", k.name},
              {"display_name", names(k.name)},
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
              {"sm_pct_metric", !k.sm_pct ? std::string()
                                : k.sm_pct_is_speed_of_light
                                    ? std::string(trace::metric::kSmThroughputPct)
                                    : std::string(trace::metric::kIssueActivePct)},
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
              {"measure_with", k.measure_with},
              {"near_line", k.near_line ? json{{"side", k.near_line->side},
                                               {"pct", k.near_line->pct},
                                               {"other", analyze::to_string(k.near_line->other)}}
                                        : json(nullptr)},
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
      ops.push_back({{"action", o.action},
                     {"trigger", o.trigger},
                     {"estimated_gain", o.estimated_gain},
                     {"bound", o.bound}});
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
    stages.push_back(
        {std::to_string(i + 1), analyze::shown_name(g.name, o.names), d::percent(g.share),
         std::to_string(g.duration_ns.count), d::duration(g.duration_ns.median),
         k && k->flop_per_s ? rate(*k->flop_per_s, "FLOP/s") : "-",
         k && k->dram_bytes_per_s ? rate(*k->dram_bytes_per_s, "B/s") : "-",
         k ? pct_cell(k->tensor_pct) : "-", k ? pct_cell(k->dram_pct) : "-",
         k ? occupancy_cell(*k) : "-",
         k ? verdict_cell(*k) : fmt::format("not measured ({})", analyze::verdict_metrics_flag()),
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
                      d::percent(measured_share(a, *ranked[i].kernel)),
                      d::percent(ranked[i].run_gain)});
    out += "Run gain = kernel gain x the share of GPU time of the launches it was measured on.\n\n";
    out += d::md_table(
        {"#", "Kernel", "Change", "Trigger", "Kernel gain", "Measured on", "Run gain"}, rows);
  }

  std::vector<d::Section> compared = d::comparison_sections(a, o, d::report_names(a, o));
  for (d::Section& s : d::baseline_sections(a, o)) compared.push_back(std::move(s));
  for (const d::Section& s : compared) {
    out += "\n## " + s.title + "\n\n" + s.note + "\n\n" + d::md_table(s.header, s.rows);
  }
  return out;
}

}  // namespace ktune::report
