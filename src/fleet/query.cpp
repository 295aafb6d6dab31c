#include "ktune/fleet/query.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/kernel_name.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/core/error.hpp"
#include "ktune/fleet/sketch.hpp"
#include "ktune/spec/spec.hpp"

namespace ktune::fleet {
namespace fs = std::filesystem;

std::vector<KnownSpec> spec_catalog(const std::vector<fs::path>& dirs) {
  std::vector<KnownSpec> out;
  auto consider = [&](const fs::path& p) {
    if (p.extension() != ".json") return;
    try {
      const auto spec = tune::ProblemSpec::load(p);
      if (!spec.runnable()) return;
      out.push_back({fs::absolute(p).string(), spec.kernel.kernel_name,
                     spec.ktune.op.empty() ? spec.name : spec.ktune.op, spec.ktune.dtype});
    } catch (const Error&) {
      // Not a T1 spec (a results file, a pack): not something the queue could run.
    }
  };
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.is_directory(ec)) {
        for (const auto& f : fs::directory_iterator(e.path(), ec))
          if (f.is_regular_file(ec)) consider(f.path());
      } else if (e.is_regular_file(ec)) {
        consider(e.path());
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const KnownSpec& a, const KnownSpec& b) { return a.path < b.path; });
  return out;
}

namespace {

std::map<std::string, QuantileSketch> merged(const std::vector<store::FleetSketchRow>& rows,
                                             bool by_build) {
  std::map<std::string, QuantileSketch> out;
  for (const auto& r : rows) {
    const std::string key = by_build ? r.build + '\n' + r.kernel : r.kernel;
    auto it = out.find(key);
    auto s = QuantileSketch::from_hex(
        r.sketch, fmt::format("the stored sketch of kernel {} (fleet_aggregates)", r.kernel));
    if (it == out.end())
      out.emplace(key, std::move(s));
    else
      it->second.merge(s);
  }
  return out;
}

const KnownSpec* find_spec(const std::vector<KnownSpec>& specs, const std::string& kernel) {
  const std::string base = analyze::base_name(kernel);
  for (const auto& s : specs)
    if (s.kernel_name == base) return &s;
  return nullptr;
}

nlohmann::json row_json(const TopRow& r, const analyze::NameTable& names) {
  nlohmann::json j = {{"kernel", r.kernel}, {"display_name", names(r.kernel)},
                      {"calls", r.calls},   {"total_ns", r.total_ns},
                      {"share", r.share},   {"p50_ns", r.p50_ns},
                      {"p95_ns", r.p95_ns}, {"p99_ns", r.p99_ns},
                      {"min_ns", r.min_ns}, {"max_ns", r.max_ns},
                      {"runs", r.runs},     {"spec", nullptr},
                      {"tuned", r.tuned}};
  if (r.spec) j["spec"] = {{"path", r.spec->path}, {"op", r.spec->op}, {"dtype", r.spec->dtype}};
  if (!r.grid.empty()) {
    j["grid"] = r.grid;
    j["block"] = r.block;
  }
  return j;
}

}  // namespace

TopReport top(store::Store& store, const store::FleetFilter& filter, std::size_t limit,
              const std::vector<KnownSpec>& specs) {
  store::FleetStore fleet(store);
  TopReport rep;
  rep.filter = filter;
  const auto totals = fleet.kernel_totals(filter);
  rep.kernels = totals.size();
  for (const auto& t : totals) {
    rep.total_ns += t.total_ns;
    rep.calls += t.calls;
  }
  // Sketches are fetched only for the kernels shown and the backlog's: the ranking itself is one
  // GROUP BY in the database.
  std::vector<const store::FleetKernelTotal*> wanted;
  for (std::size_t i = 0; i < totals.size(); ++i)
    if (limit == 0 || i < limit || find_spec(specs, totals[i].kernel)) wanted.push_back(&totals[i]);
  std::vector<std::string> names;
  for (const auto* t : wanted) names.push_back(t->kernel);
  const auto rows = fleet.sketches(filter, names);
  const auto sketches = merged(rows, false);
  std::map<std::string, std::set<std::string>> runs;
  for (const auto& r : rows) runs[r.kernel].insert(r.run_id);
  std::map<std::string, bool> tuned_ops;  // op + arch -> has a winner
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const auto& t = *wanted[i];
    TopRow r;
    r.kernel = t.kernel;
    r.calls = t.calls;
    r.total_ns = t.total_ns;
    r.min_ns = t.min_ns;
    r.max_ns = t.max_ns;
    r.runs = static_cast<std::int64_t>(runs[t.kernel].size());
    r.share = rep.total_ns > 0 ? static_cast<double>(t.total_ns) / rep.total_ns : 0;
    if (auto it = sketches.find(t.kernel); it != sketches.end()) {
      r.p50_ns = it->second.quantile(0.5);
      r.p95_ns = it->second.quantile(0.95);
      r.p99_ns = it->second.quantile(0.99);
    }
    if (const KnownSpec* s = find_spec(specs, t.kernel)) {
      r.spec = *s;
      // Tuned: a live winner of the op on the architecture the filter names, or on any.
      store::EntryFilter ef{.op = s->op, .dtype = s->dtype};
      if (!filter.gpu.empty() && filter.gpu.rfind("sm_", 0) == 0) ef.arch = filter.gpu;
      const std::string key = s->op + '\n' + s->dtype + '\n' + ef.arch;
      if (!tuned_ops.count(key)) tuned_ops[key] = !store.list_entries(ef).empty();
      r.tuned = tuned_ops[key];
      if (!r.tuned) rep.backlog.push_back(r);
    }
    if (limit == 0 || rep.rows.size() < limit) rep.rows.push_back(std::move(r));
  }
  // The backlog's kernels are queued at the shape they ran: their costliest launch shape.
  std::vector<std::string> backlog_kernels;
  for (const auto& r : rep.backlog) backlog_kernels.push_back(r.kernel);
  for (const auto& l : fleet.launch_totals(filter, backlog_kernels))
    for (auto& r : rep.backlog)
      if (r.kernel == l.kernel && r.grid.empty()) {
        r.grid = l.grid;
        r.block = l.block;
      }
  // GEMM problems: tuned when the cache holds a winner of the problem's key on its arch (one
  // listing per op, dtype and arch).
  std::map<std::string, std::vector<store::CacheEntry>> winners;
  for (const auto& t : fleet.gemm_totals(filter)) {
    GemmTopRow g;
    g.total = t;
    g.share = rep.total_ns > 0 ? static_cast<double>(t.gpu_ns) / rep.total_ns : 0;
    try {
      g.tune_command = bench::gemm_tune_command(t.problem.get<bench::GemmProblem>());
    } catch (const Error&) {
      // A problem row a later ktune wrote differently: listed, not tunable from here.
    }
    const std::string key = t.op + '\n' + t.dtype + '\n' + t.arch;
    if (!winners.count(key))
      winners[key] = store.list_entries({.op = t.op, .dtype = t.dtype, .arch = t.arch});
    for (const auto& e : winners[key])
      if (nlohmann::json(e.shape) == t.shape) g.tuned = true;
    if (!g.tuned && !g.tune_command.empty()) rep.gemm_backlog.push_back(g);
    rep.gemms.push_back(std::move(g));
  }
  return rep;
}

DiffReport diff(store::Store& store, const std::string& build_a, const std::string& build_b,
                store::FleetFilter filter) {
  if (build_a.empty() || build_b.empty() || build_a == build_b)
    throw Error("ktune fleet diff needs two different builds: --build A --build B.");
  store::FleetStore fleet(store);
  DiffReport rep{build_a, build_b, {}};
  std::map<std::string, DiffRow> rows;
  for (const auto& [which, build] : {std::pair{0, build_a}, std::pair{1, build_b}}) {
    filter.build = build;
    const auto sk = merged(fleet.sketches(filter, {}), false);
    for (const auto& t : fleet.kernel_totals(filter)) {
      DiffRow& r = rows[t.kernel];
      r.kernel = t.kernel;
      const double p50 = sk.count(t.kernel) ? sk.at(t.kernel).quantile(0.5) : 0;
      (which == 0 ? r.calls_a : r.calls_b) = t.calls;
      (which == 0 ? r.p50_a_ns : r.p50_b_ns) = p50;
    }
  }
  for (auto& [k, r] : rows) {
    if (r.calls_a > 0 && r.calls_b > 0 && r.p50_a_ns > 0) r.change = r.p50_b_ns / r.p50_a_ns - 1;
    rep.rows.push_back(r);
  }
  std::stable_sort(rep.rows.begin(), rep.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    if (a.change.has_value() != b.change.has_value()) return a.change.has_value();
    return a.change && std::abs(*a.change) > std::abs(*b.change);
  });
  if (rep.rows.empty())
    throw Error(fmt::format(
        "no ingested run is tagged build={} or build={}; ingest traces with --tag build=... "
        "first (ktune fleet top lists what is there).",
        build_a, build_b));
  return rep;
}

analyze::NameTable display_names(const TopReport& r, analyze::NameStyle style) {
  std::vector<std::string> all;
  for (const auto& row : r.rows) all.push_back(row.kernel);
  for (const auto& row : r.backlog) all.push_back(row.kernel);
  return analyze::NameTable(all, style);
}

analyze::NameTable display_names(const DiffReport& r, analyze::NameStyle style) {
  std::vector<std::string> all;
  for (const auto& row : r.rows) all.push_back(row.kernel);
  return analyze::NameTable(all, style);
}

nlohmann::json to_json(const TopReport& r) {
  const analyze::NameTable names = display_names(r);
  nlohmann::json rows = nlohmann::json::array(), backlog = nlohmann::json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row, names));
  for (const auto& row : r.backlog) backlog.push_back(row_json(row, names));
  const auto gemm_json = [](const GemmTopRow& g) {
    return nlohmann::json{
        {"op", g.total.op},         {"dtype", g.total.dtype},        {"shape", g.total.shape},
        {"arch", g.total.arch},     {"problem", g.total.problem},    {"calls", g.total.calls},
        {"gpu_ns", g.total.gpu_ns}, {"runs", g.total.runs},          {"share", g.share},
        {"tuned", g.tuned},         {"tune_command", g.tune_command}};
  };
  nlohmann::json gemms = nlohmann::json::array(), gemm_backlog = nlohmann::json::array();
  for (const auto& g : r.gemms) gemms.push_back(gemm_json(g));
  for (const auto& g : r.gemm_backlog) gemm_backlog.push_back(gemm_json(g));
  return {{"schema_version", kTopSchemaVersion},
          {"filter",
           {{"since", r.filter.since},
            {"gpu", r.filter.gpu},
            {"build", r.filter.build},
            {"job", r.filter.job}}},
          {"total_ns", r.total_ns},
          {"calls", r.calls},
          {"kernels", r.kernels},
          {"rows", rows},
          {"backlog", backlog},
          {"gemms", gemms},
          {"gemm_backlog", gemm_backlog}};
}

nlohmann::json to_json(const DiffReport& r) {
  const analyze::NameTable names = display_names(r);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& d : r.rows)
    rows.push_back({{"kernel", d.kernel},
                    {"display_name", names(d.kernel)},
                    {"calls_a", d.calls_a},
                    {"calls_b", d.calls_b},
                    {"p50_a_ns", d.p50_a_ns},
                    {"p50_b_ns", d.p50_b_ns},
                    {"change", d.change ? nlohmann::json(*d.change) : nlohmann::json(nullptr)}});
  return {{"schema_version", kDiffSchemaVersion},
          {"build_a", r.build_a},
          {"build_b", r.build_b},
          {"rows", rows}};
}

}  // namespace ktune::fleet
