#include "ktune/report/report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/text.hpp"
#include "sections.hpp"
#include "units.hpp"

namespace ktune::report {

using analyze::Analysis;
using analyze::GapCause;
using nlohmann::json;
namespace d = detail;

const std::vector<Format>& formats() {
  static const std::vector<Format> all = {
      {"text", "tables for a terminal", render_text},
      {"md", "markdown for a pull request", render_markdown},
      {"json", "JSON for tools (schema_version 7)", render_json},
      {"html", "one self-contained HTML file with SVG charts", render_html},
      {"contract", "the profile contract in markdown (bottleneck, root cause, top 3 fixes)",
       render_contract},
  };
  return all;
}

const Format& find_format(std::string_view name) {
  for (const Format& f : formats())
    if (f.name == name) return f;
  std::vector<std::string_view> names;
  for (const Format& f : formats()) names.push_back(f.name);
  throw Error(fmt::format("--format '{}' is not a report format; use one of {}.", name,
                          fmt::join(names, ", ")));
}

namespace {

json shape_json(const analyze::LaunchShape& s) {
  return {{"grid", {s.grid.x, s.grid.y, s.grid.z}},
          {"block", {s.block.x, s.block.y, s.block.z}},
          {"shared_mem_bytes", s.shared_mem_bytes},
          {"registers_per_thread", s.registers_per_thread}};
}

json causes_json(const std::vector<analyze::GapCauseTotal>& totals, std::int64_t idle_ns) {
  json j = json::object();
  for (const auto& t : totals)
    j[analyze::to_string(t.cause)] = {{"count", t.count},
                                      {"total_ns", t.total_ns},
                                      {"share_of_idle", d::fraction(t.total_ns, idle_ns)}};
  return j;
}

}  // namespace

namespace {

// The distribution fields a kernel group and an NVTX range share.
void add_durations(json& j, const Summary& d) {
  j["count"] = d.count;
  j["mean_ns"] = d.mean;
  j["median_ns"] = d.median;
  j["min_ns"] = d.min;
  j["max_ns"] = d.max;
  j["stddev_ns"] = d.stddev;
}

json trace_json(const Analysis& a) {
  const auto& m = a.metadata;
  return {{"schema_version", m.schema_version},
          {"command_line", m.command_line},
          {"pid", m.pid},
          {"started_at", m.started_at},
          {"finished_at", m.finished_at},
          {"complete", m.complete},
          {"dropped_records", m.dropped_records},
          {"capped_records", m.capped_records},
          {"skipped_records", a.skipped.count},
          {"first_skipped_record", a.skipped.first},
          {"tracer_version", m.tracer_version},
          {"mode", m.mode},
          {"records", m.records},
          {"origin_ns", a.origin_ns}};
}

json totals_json(const Analysis& a) {
  const std::int64_t busy = a.busy_ns(), window = a.window_ns();
  return {{"kernel_count", a.kernel_count},
          {"kernel_time_ns", a.kernel_total_ns},
          {"api_calls", a.api_call_count},
          {"window_ns", window},
          {"busy_ns", busy},
          {"idle_ns", window - busy},
          {"busy_pct", 100 * d::fraction(busy, window)},
          {"idle_pct", 100 * d::fraction(window - busy, window)}};
}

json devices_json(const Analysis& a) {
  json devices = json::array();
  for (const auto& u : a.devices) {
    json idle_bins = json::object();
    for (GapCause c : analyze::kGapCauses)
      idle_bins[analyze::to_string(c)] = u.bin_idle_ns[static_cast<int>(c)];
    devices.push_back(
        {{"device", u.device},
         {"kernels", u.kernels},
         {"window_start_ns", u.window_start_ns},
         {"window_end_ns", u.window_end_ns},
         {"busy_ns", u.busy_ns},
         {"idle_ns", u.idle_ns},
         {"busy_pct", 100 * d::fraction(u.busy_ns, u.window_ns())},
         {"idle_pct", 100 * d::fraction(u.idle_ns, u.window_ns())},
         {"idle_by_cause", causes_json(u.idle_by_cause, u.idle_ns)},
         {"timeline", {{"bin_ns", u.bin_ns}, {"busy_ns", u.bin_busy_ns}, {"idle_ns", idle_bins}}}});
  }
  return devices;
}

json kernels_json(const Analysis& a, const analyze::NameTable& names) {
  json kernels = json::array();
  for (const auto& g : a.kernels) {
    json k = {{"name", g.name},
              {"display_name", names(g.name)},
              {"share", g.share},
              {"total_ns", g.total_ns},
              {"distinct_shapes", g.distinct_shapes},
              {"launch", shape_json(g.shape)},
              {"op", g.op},
              {"op_kernels", g.op_kernels},
              {"ops", g.ops}};
    add_durations(k, g.duration_ns);
    kernels.push_back(std::move(k));
  }
  return kernels;
}

json gap_list_json(const std::vector<analyze::Gap>& gaps) {
  json largest = json::array();
  for (const auto& g : gaps)
    largest.push_back({{"device", g.device},
                       {"start_ns", g.start_ns},
                       {"end_ns", g.end_ns},
                       {"duration_ns", g.duration_ns()},
                       {"cause", analyze::to_string(g.cause)},
                       {"next_kernel", g.next_kernel}});
  return largest;
}

json gaps_json(const Analysis& a) {
  const std::int64_t idle = a.window_ns() - a.busy_ns();
  return {{"count", a.gap_count},
          {"idle_ns", idle},
          {"by_cause", causes_json(a.idle_by_cause, idle)},
          {"largest", gap_list_json(a.largest_gaps)}};
}

// The cut between warm-up and steady state, and the warm-up's own numbers.
json steady_json(const Analysis& a) {
  const analyze::SteadyState& s = a.steady;
  const std::int64_t idle = s.warmup_window_ns - s.warmup_busy_ns;
  return {{"cut", analyze::to_string(s.cut)},
          {"start_ns", s.start_ns},
          {"reason", s.reason},
          {"warmup",
           {{"kernel_count", s.warmup_kernels},
            {"kernel_time_ns", s.warmup_kernel_ns},
            {"window_ns", s.warmup_window_ns},
            {"busy_ns", s.warmup_busy_ns},
            {"idle_ns", idle},
            {"by_cause", causes_json(s.warmup_idle_by_cause, idle)},
            {"largest", gap_list_json(s.warmup_gaps)}}}};
}

json storms_json(const Analysis& a) {
  json storms = json::array();
  for (const auto& s : a.storms)
    storms.push_back({{"device", s.device},
                      {"start_ns", s.start_ns},
                      {"end_ns", s.end_ns},
                      {"kernels", s.kernels},
                      {"kernel_ns", s.kernel_ns},
                      {"launch_overhead_ns", s.launch_overhead_ns},
                      {"top_kernel", s.top_kernel}});
  return {{"count", a.storm_count}, {"longest", storms}};
}

json nvtx_json(const Analysis& a) {
  json nvtx = json::array();
  for (const auto& n : a.nvtx) {
    json r = {{"name", n.name},
              {"total_ns", n.total_ns},
              {"kernels", n.kernels},
              {"kernel_gpu_ns", n.kernel_gpu_ns}};
    add_durations(r, n.duration_ns);
    nvtx.push_back(std::move(r));
  }
  return nvtx;
}

json api_json(const Analysis& a) {
  json api = json::array();
  for (const auto& g : a.api) {
    json r = {{"name", g.name}, {"api", g.api}, {"total_ns", g.total_ns}, {"share", g.share}};
    add_durations(r, g.duration_ns);
    api.push_back(std::move(r));
  }
  return api;
}

json streams_json(const Analysis& a) {
  json streams = json::array();
  for (const auto& s : a.streams)
    streams.push_back({{"device", s.device},
                       {"stream", s.stream},
                       {"kernels", s.kernels},
                       {"kernel_ns", s.kernel_ns},
                       {"busy_ns", s.busy_ns},
                       {"share", s.share},
                       {"copies", s.copies},
                       {"copy_bytes", s.copy_bytes},
                       {"copy_ns", s.copy_ns}});
  return streams;
}

json ops_json(const Analysis& a) {
  json ops = json::array();
  for (const auto& g : a.ops)
    ops.push_back(
        {{"name", g.name}, {"kernels", g.kernels}, {"total_ns", g.total_ns}, {"share", g.share}});
  return ops;
}

json op_advice_json(const Analysis& a) {
  json advice = json::array();
  for (const auto& x : a.op_advice)
    advice.push_back({{"pattern", analyze::to_string(x.pattern)},
                      {"action", x.action},
                      {"evidence", x.evidence},
                      {"launches", x.launches},
                      {"gpu_ns", x.gpu_ns},
                      {"share", x.share},
                      {"saving", x.saving}});
  return advice;
}

json copies_json(const Analysis& a) {
  json copies = json::array();
  for (const auto& c : a.copies)
    copies.push_back(
        {{"kind", c.kind}, {"count", c.count}, {"bytes", c.bytes}, {"total_ns", c.total_ns}});
  return copies;
}

json backlog_json(const Analysis& a) {
  json backlog = json::array();
  double share = 0;
  for (std::size_t i = 0; i < a.backlog_size; ++i) {
    backlog.push_back(a.kernels[i].name);
    share += a.kernels[i].share;
  }
  return {{"target_share", a.backlog_share},
          {"share", share},
          {"kernels", backlog},
          {"cublaslt_kernels", d::backlog_gemm_json(a)},
          {"triton_kernels", d::backlog_triton_json(a)}};
}

json timeline_json(const Analysis& a) {
  json overlap = json::array();
  for (const auto& dv : a.timeline.devices)
    overlap.push_back({{"device", dv.device},
                       {"copy_ns", dv.copy_ns},
                       {"copy_under_kernel_ns", dv.copy_under_kernel_ns},
                       {"collective_ns", dv.collective_ns},
                       {"collective_exposed_ns", dv.collective_exposed_ns},
                       {"idle_next_to_collective_ns", dv.idle_next_to_collective_ns},
                       {"serialized_runs", dv.serialized_runs},
                       {"serialized_saving_ns", dv.serialized_saving_ns}});
  json runs = json::array();
  for (const auto& r : a.timeline.runs)
    runs.push_back({{"device", r.device},
                    {"stream", r.stream},
                    {"start_ns", r.start_ns},
                    {"end_ns", r.end_ns},
                    {"kernels", r.kernels},
                    {"kernel_ns", r.kernel_ns},
                    {"longest_kernel_ns", r.longest_kernel_ns},
                    {"first_kernel", r.first_kernel}});
  return {{"sm_count_known", a.timeline.sm_count_known},
          {"devices", overlap},
          {"serialized_runs", runs}};
}

}  // namespace

json to_json(const Analysis& a) {
  const analyze::NameTable names = d::report_names(a, {});
  return {{"schema_version", kReportSchemaVersion},
          {"kind", "ktune.report"},
          {"trace", trace_json(a)},
          {"group_by", analyze::to_string(a.group_by)},
          {"steady_state", steady_json(a)},
          {"totals", totals_json(a)},
          {"devices", devices_json(a)},
          {"kernels", kernels_json(a, names)},
          {"gaps", gaps_json(a)},
          {"storms", storms_json(a)},
          {"nvtx", nvtx_json(a)},
          {"copies", copies_json(a)},
          {"ops", ops_json(a)},
          {"op_advice", op_advice_json(a)},
          {"api", api_json(a)},
          {"streams", streams_json(a)},
          {"notes", a.notes},
          {"backlog", backlog_json(a)},
          {"counters", d::counters_json(a.counters, names)},
          {"timeline", timeline_json(a)},
          {"gemm_calls", d::gemm_calls_json(a)},
          {"triton_kernels", d::triton_kernels_json(a)},
          {"baseline", nullptr}};
}

std::string render_json(const Analysis& a, const RenderOptions& o) {
  json j = to_json(a);
  if (o.baseline) {
    // Names distinct over both runs, the same in "kernels" and in the comparison.
    RenderOptions middle = o;  // JSON's display_name is the middle form whatever --names says
    middle.names = analyze::NameStyle::middle;
    const analyze::NameTable names = d::report_names(a, middle);
    for (json& k : j["kernels"]) k["display_name"] = names(k["name"].get<std::string>());
    j["baseline"] = d::comparison_json(a, *o.baseline, names);
    j["baseline"]["metrics"] = d::baseline_json(a, *o.baseline)["metrics"];
  }
  // Names come from the traced program (NVTX messages, argv) and need not be UTF-8; JSON must be.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// "aten::mm"; with other ops launching some of the group's kernels, how many this one launched:
// "aten::mm (12 of 16)"; "-" when no launch was inside an op.
std::string op_text(const analyze::KernelGroup& g) {
  if (g.op.empty()) return "-";
  if (g.op_kernels == g.duration_ns.count) return g.op;
  return fmt::format("{} ({} of {})", g.op, g.op_kernels, g.duration_ns.count);
}

// Columns of the kernel table, shared by text and markdown; with ops, the Op column before Name.
std::vector<std::string> kernel_row(const analyze::KernelGroup& g, const analyze::NameTable& names,
                                    bool with_op) {
  const Summary& s = g.duration_ns;
  std::vector<std::string> row = {
      d::percent(g.share),     d::duration(static_cast<double>(g.total_ns)),
      std::to_string(s.count), d::duration(s.mean),
      d::duration(s.median),   d::duration(s.min),
      d::duration(s.max),      d::duration(s.stddev),
      d::shape_text(g)};
  if (with_op) row.push_back(op_text(g));
  row.push_back(names(g.name));
  return row;
}
const std::vector<std::string> kKernelHeader = {"Time", "Total", "Count",  "Mean",       "Median",
                                                "Min",  "Max",   "StdDev", "Grid Block", "Name"};

}  // namespace

namespace detail {

// Left-aligned columns padded to their widest cell; the last column is not padded.
std::string text_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& given_rows) {
  // Cells hold names from the traced program: a control character in one must not reach the
  // terminal, nor a newline forge a row.
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : given_rows) {
    rows.emplace_back();
    for (const auto& cell : r) rows.back().push_back(terminal_safe(cell));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    out += "  ";
    for (std::size_t c = 0; c < cells.size(); ++c)
      out += c + 1 == cells.size() ? cells[c] : fmt::format("{:<{}}  ", cells[c], width[c]);
    out += "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string md_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  std::string out = "|";
  for (const auto& h : header) out += " " + h + " |";
  out += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) out += " --- |";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (const auto& c : r) out += " " + md_cell(c) + " |";
    out += "\n";
  }
  return out;
}

std::string capture_line(const Analysis& a) {
  const auto& m = a.metadata;
  std::string cmd = m.command_line.empty() ? std::string("(command unknown)")
                                           : fmt::format("{}", fmt::join(m.command_line, " "));
  std::string line = m.mode == "torch.profiler"
                         ? fmt::format("a PyTorch profiler trace, {}", m.tracer_version)
                         : fmt::format("{} (pid {}, started {})", cmd, m.pid,
                                       m.started_at.empty() ? "?" : m.started_at);
  if (!m.mode.empty() && m.mode != "torch.profiler") line += fmt::format("; mode {}", m.mode);
  const auto recorded = [&](std::string_view kind) {
    return std::find(m.records.begin(), m.records.end(), kind) != m.records.end();
  };
  if (!m.records.empty() && recorded("memcpy") && !recorded("memset"))
    line += " (memsets on the GPU not recorded: ktune profile --memsets)";
  if (!m.complete) line += "; trace not closed cleanly, so it may end early";
  if (m.dropped_records > 0) line += fmt::format("; {} records dropped", m.dropped_records);
  if (a.skipped.count > 0)
    line += fmt::format("; warning: {} records left out, their times unusable (first: {})",
                        a.skipped.count, a.skipped.first);
  return line;
}

analyze::NameTable report_names(const Analysis& a, const RenderOptions& o) {
  std::vector<std::string> all;
  for (const auto& g : a.kernels) all.push_back(g.name);
  for (const auto& k : a.counters.kernels) all.push_back(k.name);
  if (o.baseline)
    for (const auto& g : o.baseline->kernels) all.push_back(g.name);
  return analyze::NameTable(all, o.names);
}

std::vector<Section> sections(const Analysis& a, const RenderOptions& o, bool with_comparison) {
  std::vector<Section> out;
  const analyze::NameTable names = report_names(a, o);
  if (with_comparison)
    for (Section& s : comparison_sections(a, o, names)) out.push_back(std::move(s));
  const std::int64_t busy = a.busy_ns(), window = a.window_ns();

  if (a.steady.cut != analyze::Cut::none) {
    const analyze::SteadyState& st = a.steady;
    const std::int64_t idle = st.warmup_window_ns - st.warmup_busy_ns;
    Section w{"Warm-up, left out",
              fmt::format("The report reads the steady state, from {} on ({}). --from 0 reads "
                          "the whole trace; --from TIME or --skip N sets your own cut.",
                          d::duration(double(st.start_ns - a.origin_ns)), st.reason)};
    w.header = {"Kernels", "GPU time", "Window", "Busy", "Idle", "Where the idle time went"};
    std::vector<analyze::GapCauseTotal> causes = st.warmup_idle_by_cause;
    std::stable_sort(causes.begin(), causes.end(),
                     [](auto& x, auto& y) { return x.total_ns > y.total_ns; });
    std::string where;
    for (const auto& c : causes)
      if (c.total_ns > 0)
        where += fmt::format("{}{} {}", where.empty() ? "" : ", ", d::cause_text(c.cause),
                             d::duration(double(c.total_ns)));
    w.rows.push_back({std::to_string(st.warmup_kernels), d::duration(double(st.warmup_kernel_ns)),
                      d::duration(double(st.warmup_window_ns)),
                      d::percent(d::fraction(st.warmup_busy_ns, st.warmup_window_ns)),
                      d::percent(d::fraction(idle, st.warmup_window_ns)),
                      where.empty() ? "-" : where});
    out.push_back(w);
    if (!st.warmup_gaps.empty()) {
      Section g{"Warm-up's largest gaps", "Times count from the first record of the trace."};
      g.header = {"Device", "At", "Length", "Cause", "Next kernel"};
      for (const auto& gap : st.warmup_gaps)
        g.rows.push_back({std::to_string(gap.device),
                          d::duration(static_cast<double>(gap.start_ns - a.origin_ns)),
                          d::duration(static_cast<double>(gap.duration_ns())),
                          d::cause_text(gap.cause), names(gap.next_kernel)});
      out.push_back(g);
    }
  }

  Section util{"GPU busy and idle",
               "Busy is the union of kernel intervals on a device; the window "
               "runs from its first kernel start to its last kernel end."};
  util.header = {"Device", "Kernels", "Window", "Busy", "Idle"};
  for (const auto& u : a.devices)
    util.rows.push_back({std::to_string(u.device), std::to_string(u.kernels),
                         d::duration(static_cast<double>(u.window_ns())),
                         d::percent(d::fraction(u.busy_ns, u.window_ns())),
                         d::percent(d::fraction(u.idle_ns, u.window_ns()))});
  out.push_back(util);

  Section k{fmt::format("Kernels by total GPU time (--by {})", analyze::to_string(a.group_by)),
            a.kernels.size() > o.top_kernels
                ? fmt::format("Top {} of {}; --format json lists them all.", o.top_kernels,
                              a.kernels.size())
                : ""};
  const bool with_op = std::any_of(a.kernels.begin(), a.kernels.end(),
                                   [](const analyze::KernelGroup& g) { return !g.op.empty(); });
  k.header = kKernelHeader;
  if (with_op) k.header.insert(k.header.end() - 1, "Op");
  for (std::size_t i = 0; i < a.kernels.size() && i < o.top_kernels; ++i)
    k.rows.push_back(kernel_row(a.kernels[i], names, with_op));
  out.push_back(k);

  if (!a.ops.empty() && a.group_by != analyze::GroupBy::op) {
    Section ops{"GPU time by PyTorch op",
                "The kernels each op launched (the innermost op around the launch call), most GPU "
                "time first; --by op groups the kernel table the same way."};
    ops.header = {"Time", "GPU time", "Kernels", "Op"};
    for (std::size_t i = 0; i < a.ops.size() && i < o.top_kernels; ++i)
      ops.rows.push_back({d::percent(a.ops[i].share), d::duration(double(a.ops[i].total_ns)),
                          std::to_string(a.ops[i].kernels), a.ops[i].name});
    out.push_back(ops);
  }
  if (!a.op_advice.empty()) {
    Section adv{"What to change in the program",
                "Patterns a change of the program removes, largest saving first; at most: the "
                "share of all GPU time the pattern's own model says could go (docs/report.md)."};
    adv.header = {"Pattern", "Time", "At most", "Change", "Evidence"};
    for (const auto& x : a.op_advice)
      adv.rows.push_back({analyze::to_string(x.pattern), d::percent(x.share),
                          x.saving > 0 ? d::percent(x.saving) : "-", x.action, x.evidence});
    out.push_back(adv);
  }
  for (Section& s : counter_sections(a, o)) out.push_back(std::move(s));

  Section gaps{"Idle gaps by cause",
               fmt::format("{} gaps, {} idle.", a.gap_count, d::duration(double(window - busy)))};
  gaps.header = {"Cause", "Gaps", "Idle time", "Share of idle"};
  for (const auto& t : a.idle_by_cause)
    if (t.count > 0)  // every cause, none left out, is in JSON
      gaps.rows.push_back({d::cause_text(t.cause), std::to_string(t.count),
                           d::duration(static_cast<double>(t.total_ns)),
                           d::percent(d::fraction(t.total_ns, window - busy))});
  out.push_back(gaps);

  if (!a.largest_gaps.empty()) {
    Section big{"Largest gaps", "Times count from the first record of the trace."};
    big.header = {"Device", "At", "Length", "Cause", "Next kernel"};
    for (const auto& g : a.largest_gaps)
      big.rows.push_back({std::to_string(g.device),
                          d::duration(static_cast<double>(g.start_ns - a.origin_ns)),
                          d::duration(static_cast<double>(g.duration_ns())), d::cause_text(g.cause),
                          names(g.next_kernel)});
    out.push_back(big);
  }

  Section storms{"Storms of tiny kernels",
                 fmt::format("{} runs of consecutive kernels each shorter than its launch call.",
                             a.storm_count)};
  storms.header = {"Device", "At", "Kernels", "Span", "GPU time", "Launch time", "Mostly"};
  for (const auto& s : a.storms)
    storms.rows.push_back(
        {std::to_string(s.device), d::duration(static_cast<double>(s.start_ns - a.origin_ns)),
         std::to_string(s.kernels), d::duration(static_cast<double>(s.end_ns - s.start_ns)),
         d::duration(static_cast<double>(s.kernel_ns)),
         d::duration(static_cast<double>(s.launch_overhead_ns)), names(s.top_kernel)});
  out.push_back(storms);

  const auto& tl = a.timeline;
  const bool overlap_worth_showing =
      std::any_of(tl.devices.begin(), tl.devices.end(), [](const analyze::DeviceOverlap& d) {
        return d.copy_ns > 0 || d.collective_ns > 0 || d.serialized_runs > 0;
      });
  if (overlap_worth_showing) {
    Section t{"Overlap",
              "Copies hidden under kernels; NCCL collectives with no other kernel beside them "
              "(exposed) and idle time next to them; runs of partial-wave kernels serialized on "
              "one stream while nothing else ran, and what running them side by side could save."};
    t.header = {"Device",          "Copies",    "Hidden",
                "Collectives",     "Exposed",   "Idle next to collectives",
                "Serialized runs", "Could save"};
    for (const auto& dv : tl.devices)
      t.rows.push_back({std::to_string(dv.device), d::duration(double(dv.copy_ns)),
                        d::percent(d::fraction(dv.copy_under_kernel_ns, dv.copy_ns)),
                        d::duration(double(dv.collective_ns)),
                        d::percent(d::fraction(dv.collective_exposed_ns, dv.collective_ns)),
                        d::duration(double(dv.idle_next_to_collective_ns)),
                        tl.sm_count_known ? std::to_string(dv.serialized_runs) : "-",
                        tl.sm_count_known ? d::duration(double(dv.serialized_saving_ns)) : "-"});
    out.push_back(t);
  }
  if (!tl.runs.empty()) {
    Section r{"Serialized kernels", "Partial-wave kernels back to back on one stream."};
    r.header = {"Device", "Stream", "At", "Kernels", "GPU time", "Could save", "First kernel"};
    for (const auto& run : tl.runs)
      r.rows.push_back({std::to_string(run.device), std::to_string(run.stream),
                        d::duration(double(run.start_ns - a.origin_ns)),
                        std::to_string(run.kernels), d::duration(double(run.kernel_ns)),
                        d::duration(double(run.kernel_ns - run.longest_kernel_ns)),
                        names(run.first_kernel)});
    out.push_back(r);
  }

  if (!a.nvtx.empty()) {
    Section n{"NVTX ranges", "Kernels are those launched from inside the range (innermost)."};
    n.header = {"Total", "Count", "Mean", "Median", "Min", "Max", "Kernels", "GPU time", "Range"};
    for (const auto& r : a.nvtx)
      n.rows.push_back({d::duration(static_cast<double>(r.total_ns)),
                        std::to_string(r.duration_ns.count), d::duration(r.duration_ns.mean),
                        d::duration(r.duration_ns.median), d::duration(r.duration_ns.min),
                        d::duration(r.duration_ns.max), std::to_string(r.kernels),
                        d::duration(static_cast<double>(r.kernel_gpu_ns)), r.name});
    out.push_back(n);
  }

  if (a.streams.size() > 1 || (!a.streams.empty() && a.streams.front().copies > 0)) {
    Section st{"Streams",
               "Kernel time, how long the stream was busy with kernels, and its copies."};
    st.header = {"Device", "Stream", "Kernels",    "Kernel time", "Share",
                 "Busy",   "Copies", "Copy bytes", "Copy time"};
    for (const auto& s : a.streams)
      st.rows.push_back({std::to_string(s.device), std::to_string(s.stream),
                         std::to_string(s.kernels), d::duration(static_cast<double>(s.kernel_ns)),
                         d::percent(s.share), d::duration(static_cast<double>(s.busy_ns)),
                         std::to_string(s.copies), d::bytes(s.copy_bytes),
                         d::duration(static_cast<double>(s.copy_ns))});
    out.push_back(st);
  }

  if (!a.api.empty()) {
    Section api{"CUDA API calls",
                fmt::format("{} host calls; time is on the calling CPU thread.", a.api_call_count)};
    api.header = {"Time", "Total", "Calls", "Mean", "Median", "Max", "Function"};
    for (const auto& g : a.api)
      api.rows.push_back({d::percent(g.share), d::duration(static_cast<double>(g.total_ns)),
                          std::to_string(g.duration_ns.count), d::duration(g.duration_ns.mean),
                          d::duration(g.duration_ns.median), d::duration(g.duration_ns.max),
                          g.name});
    out.push_back(api);
  }

  if (!a.copies.empty()) {
    Section c{"Copies and memsets", ""};
    c.header = {"Kind", "Count", "Bytes", "GPU time"};
    for (const auto& g : a.copies)
      c.rows.push_back({g.kind, std::to_string(g.count), d::bytes(g.bytes),
                        d::duration(static_cast<double>(g.total_ns))});
    out.push_back(c);
  }

  double share = 0;
  for (std::size_t i = 0; i < a.backlog_size; ++i) share += a.kernels[i].share;
  Section b{"Tuning backlog",
            fmt::format("{} kernels own {} of GPU time (target {}).{}", a.backlog_size,
                        d::percent(share), d::percent(a.backlog_share),
                        d::backlog_gemm_note(a) + d::backlog_triton_note(a))};
  b.header = {"#", "Time", "Kernel"};
  for (std::size_t i = 0; i < a.backlog_size; ++i)
    b.rows.push_back(
        {std::to_string(i + 1), d::percent(a.kernels[i].share), names(a.kernels[i].name)});
  out.push_back(b);
  for (Section& s : gemm_sections(a)) out.push_back(std::move(s));
  for (Section& s : triton_sections(a)) out.push_back(std::move(s));
  for (Section& s : baseline_sections(a, o)) out.push_back(std::move(s));
  return out;
}

std::string headline(const Analysis& a) {
  const std::int64_t busy = a.busy_ns(), window = a.window_ns();
  std::string line = fmt::format(
      "{} kernels ({} names), {} of GPU time; GPU busy {}, idle {}.", a.kernel_count,
      a.kernels.size(), d::duration(static_cast<double>(a.kernel_total_ns)),
      d::percent(d::fraction(busy, window)), d::percent(d::fraction(window - busy, window)));
  if (a.steady.cut != analyze::Cut::none)
    line = fmt::format("Steady state from {} on (warm-up of {} kernels left out): {}",
                       d::duration(double(a.steady.start_ns - a.origin_ns)),
                       a.steady.warmup_kernels, line);
  return line;
}

}  // namespace detail

using detail::capture_line;
using detail::headline;
using detail::md_cell;
using detail::md_table;
using detail::Section;
using detail::sections;
using detail::text_table;

std::string render_text(const Analysis& a, const RenderOptions& o) {
  std::string out = fmt::format("ktune report: {}\n{}\n", capture_line(a), headline(a));
  for (const std::string& note : a.notes) out += note + "\n";
  for (const Section& s : sections(a, o)) {
    out += "\n" + s.title + "\n";
    if (!s.note.empty()) out += "  " + s.note + "\n";
    if (!s.rows.empty()) out += text_table(s.header, s.rows);
  }
  // The command line, notes and section notes quote names too; the page's own newlines stay.
  return terminal_safe(out, /*keep_newlines=*/true);
}

std::string render_markdown(const Analysis& a, const RenderOptions& o) {
  std::string out =
      fmt::format("## ktune report\n\n`{}`\n\n**{}**\n", md_cell(capture_line(a)), headline(a));
  for (const std::string& note : a.notes) out += "\n" + md_cell(note) + "\n";
  for (const Section& s : sections(a, o)) {
    out += "\n### " + s.title + "\n\n";
    if (!s.note.empty()) out += s.note + "\n\n";
    if (!s.rows.empty()) out += md_table(s.header, s.rows);
  }
  return out;
}

}  // namespace ktune::report
