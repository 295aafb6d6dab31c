// Gate baselines (baselines.hpp) on the store's backend: the same SQL on SQLite and PostgreSQL.
#include "ktune/store/baselines.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backend.hpp"
#include "columns.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/stats.hpp"

namespace ktune::store {
namespace {

// gate_runs. Listings read every column but the samples unless asked for them.
constexpr auto kRuns =
    detail::columns("run_id", "session_id", "kind", "suite", "benchmark", "shape", "device_name",
                    "arch", "driver", "toolkit", "ktune_build", "code_commit", "label", "config",
                    "recorded_at", "sm_clock_mhz", "p50_ns", "sample_count", "samples");

GateRun from_row(const detail::Row& r, bool with_samples) {
  constexpr auto c = kRuns;
  GateRun g;
  g.run_id = r.text(c["run_id"]);
  g.session_id = r.text(c["session_id"]);
  g.kind = r.text(c["kind"]);
  g.suite = r.text(c["suite"]);
  g.benchmark = r.text(c["benchmark"]);
  g.shape = r.text(c["shape"]);
  g.env = {r.text(c["device_name"]), r.text(c["arch"]), r.text(c["driver"]), r.text(c["toolkit"]),
           r.text(c["ktune_build"])};
  g.code_commit = r.text(c["code_commit"]);
  g.label = r.text(c["label"]);
  g.config = nlohmann::json::parse(r.text(c["config"]), nullptr, false);
  g.recorded_at = r.text(c["recorded_at"]);
  g.sm_clock_mhz = static_cast<int>(r.i64(c["sm_clock_mhz"]));
  g.p50_ns = r.f64(c["p50_ns"]);
  if (with_samples)
    g.samples_ns = nlohmann::json::parse(r.text(c["samples"])).get<std::vector<double>>();
  return g;
}

}  // namespace

void Baselines::put_runs(std::vector<GateRun> runs) {
  for (auto& g : runs) {
    if (g.benchmark.empty() || g.run_id.empty() || g.session_id.empty())
      throw Error("gate: a run to store has no benchmark name, run id or session id.");
    if (g.samples_ns.empty())
      throw Error(fmt::format("gate: run {} of benchmark \"{}\" has no samples; nothing stored.",
                              g.run_id, g.benchmark));
    std::vector<double> sorted = g.samples_ns;
    std::sort(sorted.begin(), sorted.end());
    g.p50_ns = quantile_sorted(sorted, 0.5);
  }
  detail::Backend& db = *store_.db_;
  detail::in_write_transaction(db, [&] {
    for (const auto& g : runs)
      db.exec(
          fmt::format("INSERT INTO gate_runs ({}) VALUES ({})", kRuns.list(), kRuns.placeholders()),
          {g.run_id, g.session_id, g.kind, g.suite, g.benchmark, g.shape, g.env.device_name,
           g.env.arch, g.env.driver, g.env.toolkit, g.env.ktune_build, g.code_commit, g.label,
           g.config.dump(), g.recorded_at, std::int64_t{g.sm_clock_mhz}, g.p50_ns,
           static_cast<std::int64_t>(g.samples_ns.size()), nlohmann::json(g.samples_ns).dump()});
  });
}

std::vector<GateRun> Baselines::runs(const GateRunFilter& f) {
  std::string where = "1 = 1";
  detail::Params params;
  const auto eq = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    params.push_back(value);
    where += fmt::format(" AND {} = ${}", column, params.size());
  };
  eq("benchmark", f.benchmark);
  eq("shape", f.shape);
  eq("device_name", f.device_name);
  eq("arch", f.arch);
  eq("kind", f.kind);
  if (!f.ref.empty()) {
    params.push_back(f.ref);
    const auto n = params.size();
    params.push_back(f.ref + "%");
    where += fmt::format(" AND (label = ${} OR code_commit LIKE ${})", n, n + 1);
  }
  // Without samples, that column reads as '' (it is the largest by far).
  const std::string columns =
      f.with_samples ? kRuns.list() : kRuns.list_with(kRuns["samples"], "''");
  const auto rows = store_.db_->query(
      fmt::format("SELECT {} FROM gate_runs WHERE {} ORDER BY recorded_at, run_id", columns, where),
      params);
  std::vector<GateRun> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(from_row(r, f.with_samples));
  return out;
}

std::vector<GateRun> Baselines::latest_session(const GateRunFilter& f) {
  std::vector<GateRun> all = runs(f);
  if (all.empty()) return all;
  const std::string session = all.back().session_id;
  std::erase_if(all, [&](const GateRun& g) { return g.session_id != session; });
  return all;
}

std::vector<std::pair<std::string, std::string>> Baselines::benchmarks() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r :
       store_.db_->query("SELECT DISTINCT benchmark, shape FROM gate_runs ORDER BY 1, 2"))
    out.emplace_back(r.text(0), r.text(1));
  return out;
}

void to_json(nlohmann::json& j, const GateEnvironment& e) {
  j = {{"device_name", e.device_name},
       {"arch", e.arch},
       {"driver", e.driver},
       {"toolkit", e.toolkit},
       {"ktune_build", e.ktune_build}};
}

}  // namespace ktune::store
