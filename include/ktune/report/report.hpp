#pragma once
// Renderers of an analysis: a terminal table for people, markdown for PRs, JSON for tools (pinned
// by schema_version), and one self-contained HTML file with inline SVG charts. Registered by name
// so `ktune report --format NAME` needs no if-chain.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/kernel_name.hpp"

namespace ktune::report {

// 3: "counters" (the per-kernel derivation of the counter tier), "baseline" and "timeline".
// 4: "gemm_calls" (ktune profile --gemm-shapes) and the backlog's "cublaslt_kernels".
// 5: GPU time per GEMM problem ("gpu_ns", "timed_calls", "timed"), its "cache_key" and a tune
//    command for every form.
// 6: kernels carry "display_name" (the middle form, distinct within the report); "baseline"
// compares
//    per launch: each kernel's launches before and now, the change of the median, its noise and a
//    verdict (docs/report.md).
// 7: each kernel's PyTorch "op" ("op", "op_kernels", "ops"), the CUDA API time table "api", the
//    per-stream view "streams", and "notes" (what the trace's format cannot hold).
// 8: the counter tier's stalls ("stalls", "stall_cause", "warp_cycles_per_issue"), "library" and
//    "tune_command", the time of the profiled shape ("shape_launches", "shape_total_ns"), the
//    "issue-bound" verdict, and the ceilings' "kind" and "origin".
// 10: a kernel without the throughput pair is "not measured" ("measure_with" names the flag);
//     "near_line"; each opportunity's "bound"; "steady_state" (warm-up cut) and the gap causes
//     "setup", "counter_replay" and "host"; "op_advice".
// 11: "triton_kernels" (Inductor's Triton kernels from the scan beside the trace: name, kind,
//     lookup_hash, source_hash, path, dtype, numels, ops, stack_traces, tunable, why_not,
//     launches, gpu_ns, tune_command) and the backlog's "triton_kernels".
inline constexpr int kReportSchemaVersion = 11;

struct RenderOptions {
  std::size_t top_kernels = 25;  // rows in the people-facing formats; JSON always has them all
  // Names in text, md, html and contract; JSON has the full name and the middle form.
  analyze::NameStyle names = analyze::NameStyle::middle;
  // `ktune report OLD NEW`: the run compared against (not owned); null: no comparison.
  const analyze::Analysis* baseline = nullptr;
};

struct Format {
  std::string_view name;
  std::string_view description;
  std::string (*render)(const analyze::Analysis&, const RenderOptions&);
};

// text, md, json, html, contract.
const std::vector<Format>& formats();
// ktune::Error naming the known formats when `name` is not one of them.
const Format& find_format(std::string_view name);

nlohmann::json to_json(const analyze::Analysis& analysis);
std::string render_text(const analyze::Analysis& analysis, const RenderOptions& options);
std::string render_markdown(const analyze::Analysis& analysis, const RenderOptions& options);
std::string render_json(const analyze::Analysis& analysis, const RenderOptions& options);
std::string render_html(const analyze::Analysis& analysis, const RenderOptions& options);
// The profile contract in markdown: configuration, stages, bottleneck and root cause, the top
// three opportunities of the run, and the change against a baseline when one is given.
std::string render_contract(const analyze::Analysis& analysis, const RenderOptions& options);
// The roofline as HTML: one inline SVG (calibrated roofs, a numbered point per kernel with FLOPs),
// the legend table naming each number, and the kernels left off the chart; empty without counters
// or ceilings.
// Points sized by the time their launch shape owns and coloured by verdict (verdict_color).
std::string roofline_html(const analyze::Analysis& analysis, const analyze::NameTable& names);
const char* verdict_color(analyze::Bottleneck b);

}  // namespace ktune::report
