// ktune gate record/check/history/cache: the performance gate. Exit codes: 0 pass, 1 a regression
// (check) or a cached winner that lost its lead (cache), 2 usage or anything that kept the gate
// from deciding (bad suite, no GPU, a benchmark that cannot run): never a false "regression".
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/bench/pipeline.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/gate/gate.hpp"
#include "ktune/gate/gpu_measurer.hpp"
#include "ktune/gate/history.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

constexpr int kRecordSchemaVersion = 1;     // of gate record --json
constexpr int kGateCacheSchemaVersion = 1;  // of gate cache --json

struct GateArgs {
  std::string suite, against, commit, label, format = "table", junit, bench,
                                             shape;  // format: table|md|json
  std::vector<std::string> specs;
  bool json = false, no_store = false, invalidate = false;
  double threshold = 0;
  std::size_t limit = 20;
};

// The measured code's commit: --commit, else CI's variables, else git in the working directory.
std::string code_commit(const std::string& given) {
  if (!given.empty()) return given;
  for (const char* v : {"KTUNE_GATE_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT"})
    if (const char* s = std::getenv(v); s && *s) return s;
  try {
    std::string out = gate::run_program({"git", "rev-parse", "HEAD"}, /*timeout_s=*/10);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  } catch (const Error&) {
    return "";  // not a git checkout: baselines then carry no commit
  }
}

int usage_error(const Error& e) {
  std::fprintf(stderr, "ktune: %s\n", e.what());
  return 2;
}

int do_record(const GateArgs& a, const GlobalOptions& g) {
  refuse_stdin(a.suite, "a suite (its specs are found beside it)");
  const gate::Suite suite = gate::load_suite(a.suite);
  auto st = store::Store::open(g.db);
  gate::GpuMeasurer m(suite, g.device, st.get());
  store::Baselines baselines(*st);
  const auto runs = gate::record(suite, m, baselines, {code_commit(a.commit), a.label});
  if (a.json) {
    print_json({{"session", runs.empty() ? "" : runs.front().session_id},
                {"runs", runs.size()},
                {"benchmarks", suite.benchmarks.size()},
                {"store", st->describe()}},
               kRecordSchemaVersion);
    return 0;
  }
  fmt::print("recorded {} runs of {} benchmarks (session {}) in {}\n", runs.size(),
             suite.benchmarks.size(), runs.empty() ? "-" : runs.front().session_id, st->describe());
  return 0;
}

int do_check(const GateArgs& a, const GlobalOptions& g) {
  refuse_stdin(a.suite, "a suite (its specs are found beside it)");
  gate::Suite suite = gate::load_suite(a.suite);
  if (a.threshold > 0) suite.rule.threshold = a.threshold;
  auto st = store::Store::open(g.db);
  gate::GpuMeasurer m(suite, g.device, st.get());
  store::Baselines baselines(*st);
  const gate::CheckReport r = gate::check(suite, m, baselines, {code_commit(a.commit), ""},
                                          {.against = a.against, .store_candidate = !a.no_store});
  if (!a.junit.empty()) write_file_atomic(a.junit, gate::render_junit(r));
  if (a.format == "json") {
    print_json(nlohmann::json(r));
  } else {
    fmt::print("{}", a.format == "md" ? gate::render_markdown(r) : gate::render_table(r));
  }
  return r.regressed() ? 1 : 0;
}

int do_history(const GateArgs& a, const GlobalOptions& g) {
  auto st = store::Store::open(g.db, store::Access::read_only);
  store::Baselines baselines(*st);
  const auto runs = baselines.runs({.benchmark = a.bench, .shape = a.shape, .with_samples = false});
  if (runs.empty())
    throw Error(
        fmt::format("the store {} holds no gate runs of \"{}\"{}; check the name (ktune gate "
                    "record stores them).",
                    st->describe(), a.bench, a.shape.empty() ? "" : " at " + a.shape));
  const auto points = gate::series(runs);
  const auto changes = gate::history_change_points(points);
  if (a.json)
    print_json(gate::history_json(a.bench, points, changes));
  else
    fmt::print("{}", gate::render_history(a.bench, points, changes));
  return 0;
}

// Re-measures this GPU's newest cache winners of the given specs' ops against each op's default
// configuration, interleaved; a winner no longer faster than the default, or slower than its
// stored median beyond the threshold, lost its lead.
int do_cache(const GateArgs& a, const GlobalOptions& g) {
  if (a.specs.empty())
    throw Error(
        "ktune gate cache needs --spec SPEC for each op to re-check (the cache stores "
        "configurations, not the kernels that run them).");
  auto st = store::Store::open(g.db);
  const store::Environment env = runtime::detect_environment(g.device);
  const double threshold = a.threshold > 0 ? a.threshold : gate::Rule{}.threshold;
  nlohmann::json out = nlohmann::json::array();
  int lost = 0;
  for (const auto& path : a.specs) {
    const tune::ProblemSpec spec = tune::ProblemSpec::load(path);
    const std::string op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
    auto entries = st->list_entries(
        {.op = op, .arch = env.arch, .device_name = env.device_name, .toolkit = env.toolkit});
    std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
      return x.provenance.created_at > y.provenance.created_at;
    });
    if (a.limit > 0 && entries.size() > a.limit) entries.resize(a.limit);  // 0: all
    for (const auto& e : entries) {
      std::map<std::string, std::int64_t> shape;
      for (std::size_t i = 0; i < spec.ktune.shape.size() && i < e.shape.size(); ++i)
        shape[spec.ktune.shape[i].name] = e.shape[i];
      std::string cfg;
      for (const auto& [k, v] : e.config.items())
        cfg += fmt::format("{}{}={}", cfg.empty() ? "" : ",", k,
                           v.is_string() ? v.get<std::string>() : v.dump());
      const bench::Problem winner = tune::make_problem(spec, tune::parse_config(spec, cfg), shape);
      const bench::Problem fallback = tune::make_problem(spec, tune::default_config(spec), shape);
      bench::PipelineSettings settings;
      bench::CandidatePipeline pipeline(winner, settings, g.device);
      const bench::InterleavedResult r = pipeline.compare(fallback, winner, settings.full);
      const double vs_default = r.ratio.median;                  // winner / default
      const double vs_stored = r.b_ns.median / e.median_ns - 1;  // winner now vs when tuned
      std::string why;
      if (vs_default >= 1)
        why =
            fmt::format("no longer faster than the default config ({:.3f}x its time)", vs_default);
      else if (vs_stored > threshold)
        why = fmt::format("{:+.1f} % slower than when tuned", 100 * vs_stored);
      lost += !why.empty();
      if (!a.json)
        fmt::print("{:<8} {:<18} {:<16} {:>10.3f} us (tuned {:.3f}) winner/default {:.3f}  {}\n",
                   why.empty() ? "ok" : "LOST", op, e.key.bucket, r.b_ns.median / 1e3,
                   e.median_ns / 1e3, vs_default,
                   why.empty() ? "" : why + "; re-tune: ktune tune " + path);
      out.push_back({{"op", op},
                     {"bucket", e.key.bucket},
                     {"config", e.config},
                     {"median_ns", r.b_ns.median},
                     {"tuned_median_ns", e.median_ns},
                     {"winner_over_default", vs_default},
                     {"lost_lead", !why.empty()},
                     {"reason", why}});
      if (!why.empty() && a.invalidate)
        st->invalidate({.op = op,
                        .dtype = e.key.dtype,
                        .arch = e.key.arch,
                        .device_name = e.key.device_name,
                        .toolkit = e.key.toolkit},
                       env, false, "ktune gate cache: " + why);
    }
  }
  if (a.json) {
    print_json({{"entries", out}, {"lost", lost}}, kGateCacheSchemaVersion);
    return lost ? 1 : 0;
  }
  fmt::print("{} of {} re-checked winners lost their lead{}\n", lost, out.size(),
             lost && !a.invalidate ? " (--invalidate marks them stale in the store)" : "");
  return lost ? 1 : 0;
}

const bool registered = register_command(
    {"gate", "Performance gate: record baselines, check a suite for regressions", 60,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<GateArgs>();
       app.require_subcommand(1);
       auto* rec = app.add_subcommand("record", "Measure a suite and store its runs as a baseline");
       rec->add_option("suite", a->suite, "Suite file (TOML)")->required();
       rec->add_option("--commit", a->commit, "Commit of the measured code (default: git HEAD)");
       rec->add_option("--label", a->label, "A name for this baseline, e.g. main");
       rec->add_flag("--json", a->json,
                     fmt::format("Print JSON (schema_version {})", kRecordSchemaVersion));
       auto* chk = app.add_subcommand("check", "Measure a suite and compare with its baselines");
       chk->add_option("suite", a->suite, "Suite file (TOML)")->required();
       chk->add_option("--against", a->against, "Baseline label or commit (default: the newest)");
       chk->add_option("--commit", a->commit, "Commit of the measured code (default: git HEAD)");
       chk->add_option("--format", a->format,
                       fmt::format("table, md (or markdown) or json (schema_version {})",
                                   gate::kCheckSchemaVersion))
           ->capture_default_str()
           ->transform(CLI::Validator(
               [](std::string& v) {
                 if (v == "markdown") v = "md";  // report's spelling is md
                 if (v != "table" && v != "md" && v != "json")
                   return fmt::format("'{}' is not one of table, md, json", v);
                 return std::string();
               },
               ""));
       chk->add_option("--junit", a->junit, "Also write JUnit XML to FILE");
       chk->add_option("--threshold", a->threshold, "Relative p50 slowdown that fails (0.05)");
       add_json_flag_for_format(*chk, a->format, "Print JSON");
       chk->add_flag("--no-store", a->no_store, "Do not keep this check's runs in the store");
       auto* his = app.add_subcommand("history", "A benchmark's stored series and change points");
       his->add_option("bench", a->bench, "Benchmark name (as in the suite)")->required();
       his->add_option("--shape", a->shape, "Shape key, e.g. k=4096,n=7168");
       his->add_flag("--json", a->json,
                     fmt::format("Print JSON (schema_version {})", gate::kHistorySchemaVersion));
       auto* cac = app.add_subcommand("cache", "Re-measure cached winners on this GPU and toolkit");
       cac->add_option("--spec", a->specs, "Tuning spec of an op to re-check (repeatable)");
       cac->add_option("--limit", a->limit, "Newest entries per op (default 20; 0: all)");
       cac->add_option("--threshold", a->threshold, "Slowdown against the tuned time (0.05)");
       cac->add_flag("--invalidate", a->invalidate, "Mark the entries that lost their lead stale");
       cac->add_flag("--json", a->json,
                     fmt::format("Print JSON instead of the table (schema_version {})",
                                 kGateCacheSchemaVersion));
       return [a, rec, chk, his, cac, &globals]() -> int {
         try {
           if (rec->parsed()) return do_record(*a, globals);
           if (chk->parsed()) return do_check(*a, globals);
           if (his->parsed()) return do_history(*a, globals);
           if (cac->parsed()) return do_cache(*a, globals);
         } catch (const Error& e) {
           return usage_error(e);
         }
         return 2;
       };
     }});

}  // namespace
}  // namespace ktune::cli
