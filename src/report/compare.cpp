// ktune report OLD NEW: each kernel's launches in NEW against its launches in OLD. Per launch,
// not in total, so runs of different lengths (300 iterations against 20) compare what each launch
// costs; the change of the median launch is judged against the noise both runs' spreads allow.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/enum_names.hpp"
#include "sections.hpp"
#include "units.hpp"

namespace ktune::report::detail {

using analyze::Analysis;
using analyze::KernelGroup;
using nlohmann::json;

namespace {

constexpr EnumName<Change> kChangeNames[] = {
    {Change::slower, "slower"},
    {Change::faster, "faster"},
    {Change::within_noise, "within_noise"},
    {Change::few_launches, "too_few_launches"},
    {Change::added, "new"},
    {Change::gone, "gone"},
};

// Half-width of the ~95 % interval of a median: the notch of a box plot, 1.57 IQR / sqrt(n).
double median_half_width(const KernelGroup& g) {
  const double n = static_cast<double>(g.duration_ns.count);
  return n > 0 ? 1.57 * (g.q3_ns - g.q1_ns) / std::sqrt(n) : 0.0;
}

bool same_kernel(const Analysis& a, const KernelGroup& x, const KernelGroup& y) {
  return x.name == y.name &&
         (a.group_by != analyze::GroupBy::name_and_launch || x.shape == y.shape);
}

}  // namespace

const char* to_string(Change c) {
  return name_of(kChangeNames, c);
}

std::vector<KernelComparison> compare_kernels(const Analysis& now, const Analysis& base) {
  std::vector<KernelComparison> out;
  for (const KernelGroup& g : now.kernels) {
    KernelComparison c;
    c.now = &g;
    for (const KernelGroup& b : base.kernels)
      if (same_kernel(now, g, b)) {
        c.baseline = &b;
        break;
      }
    out.push_back(c);
  }
  for (const KernelGroup& b : base.kernels)
    if (std::none_of(now.kernels.begin(), now.kernels.end(),
                     [&](const KernelGroup& g) { return same_kernel(now, g, b); }))
      out.push_back({&b, nullptr});
  for (KernelComparison& c : out) {
    if (!c.baseline) {
      c.change = Change::added;
      continue;
    }
    if (!c.now) {
      c.change = Change::gone;
      continue;
    }
    const double before = c.baseline->duration_ns.median, after = c.now->duration_ns.median;
    if (before > 0) c.median_change = (after - before) / before;
    const double noise_ns = std::hypot(median_half_width(*c.baseline), median_half_width(*c.now));
    if (before > 0) c.noise = noise_ns / before;
    if (std::min(c.baseline->duration_ns.count, c.now->duration_ns.count) < kMinComparedLaunches)
      c.change = Change::few_launches;
    else if (std::abs(after - before) <= noise_ns)
      c.change = Change::within_noise;
    else
      c.change = after > before ? Change::slower : Change::faster;
  }
  return out;
}

std::vector<Section> comparison_sections(const Analysis& a, const RenderOptions& o,
                                         const analyze::NameTable& names) {
  if (!o.baseline) return {};
  const Analysis& base = *o.baseline;
  Section s{"Compared with the baseline, per launch",
            fmt::format("Baseline: {}. Per launch, so runs of different lengths compare; the "
                        "change is that of the median launch, (now - baseline) / baseline. Noise: "
                        "the ~95 % interval of the difference of the medians from each run's "
                        "spread (box-plot notches, 1.57 IQR / sqrt(launches)); a change inside "
                        "it is within noise. GPU time in all: {} before, {} now.",
                        capture_line(base), duration(double(base.kernel_total_ns)),
                        duration(double(a.kernel_total_ns)))};
  s.header = {"Kernel",     "Launches", "Mean before", "Mean now", "Median before",
              "Median now", "Change",   "Noise",       "Verdict"};
  const auto cell = [](const KernelGroup* g, double Summary::*field) {
    return g ? duration(g->duration_ns.*field) : std::string("-");
  };
  const auto comparisons = compare_kernels(a, base);
  for (std::size_t i = 0; i < comparisons.size() && i < o.top_kernels; ++i) {
    const KernelComparison& c = comparisons[i];
    const KernelGroup& g = c.now ? *c.now : *c.baseline;
    s.rows.push_back({names(g.name),
                      fmt::format("{} -> {}", c.baseline ? c.baseline->duration_ns.count : 0,
                                  c.now ? c.now->duration_ns.count : 0),
                      cell(c.baseline, &Summary::mean), cell(c.now, &Summary::mean),
                      cell(c.baseline, &Summary::median), cell(c.now, &Summary::median),
                      c.median_change ? fmt::format("{:+.1f} %", 100 * *c.median_change) : "-",
                      c.noise && c.change != Change::few_launches
                          ? fmt::format("+/-{:.1f} %", 100 * *c.noise)
                          : "-",
                      to_string(c.change)});
  }
  if (comparisons.size() > o.top_kernels)
    s.note += fmt::format(" Top {} of {} kernels; --format json lists them all.", o.top_kernels,
                          comparisons.size());
  return {s};
}

json comparison_json(const Analysis& a, const Analysis& base, const analyze::NameTable& names) {
  const auto launches = [](const KernelGroup* g) -> json {
    if (!g) return nullptr;
    return {{"count", g->duration_ns.count},
            {"total_ns", g->total_ns},
            {"mean_ns", g->duration_ns.mean},
            {"median_ns", g->duration_ns.median},
            {"q1_ns", g->q1_ns},
            {"q3_ns", g->q3_ns},
            {"min_ns", g->duration_ns.min},
            {"max_ns", g->duration_ns.max}};
  };
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json kernels = json::array();
  for (const KernelComparison& c : compare_kernels(a, base)) {
    const KernelGroup& g = c.now ? *c.now : *c.baseline;
    kernels.push_back({{"name", g.name},
                       {"display_name", names(g.name)},
                       {"baseline", launches(c.baseline)},
                       {"now", launches(c.now)},
                       {"median_change", optional(c.median_change)},
                       {"noise", optional(c.noise)},
                       {"verdict", to_string(c.change)}});
  }
  return {{"command_line", base.metadata.command_line},
          {"started_at", base.metadata.started_at},
          {"kernel_time_ns", base.kernel_total_ns},
          {"noise_method", "box-plot notch: 1.57 IQR / sqrt(n) per median, combined in quadrature"},
          {"min_launches", kMinComparedLaunches},
          {"kernels", kernels}};
}

}  // namespace ktune::report::detail
