// The check's renderers: terminal table, markdown (a pull-request comment), JUnit XML, JSON.
#include <fmt/format.h>

#include "ktune/core/text.hpp"
#include "ktune/gate/gate.hpp"

namespace ktune::gate {
namespace {

std::string verdict_of(const BenchmarkResult& r) {
  return r.has_baseline ? std::string(to_string(r.comparison.verdict)) : "new";
}

std::string percent(double x) {
  return fmt::format("{:+.2f} %", 100 * x);
}

std::string interval(const Shift& s) {
  return s.interval_known ? fmt::format("[{:+.2f}, {:+.2f}] %", 100 * s.ci_low, 100 * s.ci_high)
                          : std::string("unknown");
}

std::string attribution(const BenchmarkResult& r) {
  std::string out = r.blame == Blame::none ? "" : std::string("blame: ") + to_string(r.blame);
  for (const auto& c : r.environment_changes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

std::string summary_line(const CheckReport& r) {
  int slower = 0, faster = 0, noisy = 0, fresh = 0;
  for (const auto& b : r.results) {
    if (!b.has_baseline) {
      ++fresh;
      continue;
    }
    slower += b.comparison.verdict == Verdict::slower;
    faster += b.comparison.verdict == Verdict::faster;
    noisy += b.comparison.verdict == Verdict::noisy;
  }
  return fmt::format(
      "{}: {} benchmarks, {} slower, {} faster, {} noisy, {} without a baseline ({:.0f} s; "
      "threshold {:.1f} %, alpha {} over the suite)",
      r.regressed() ? "FAIL" : "PASS", r.results.size(), slower, faster, noisy, fresh, r.duration_s,
      100 * r.rule.threshold, r.rule.alpha);
}

}  // namespace

std::string render_table(const CheckReport& r) {
  std::string out = fmt::format("{:<24} {:<9} {:>10} {:>20} {:>9} {:>12} {:>12} {:>5}  {}\n",
                                "benchmark", "verdict", "p50", "interval", "p (adj)", "base p50 us",
                                "new p50 us", "runs", "attribution");
  for (const auto& b : r.results) {
    if (!b.has_baseline) {
      out +=
          fmt::format("{:<24} {:<9} {:>10} {:>20} {:>9} {:>12} {:>12} {:>5}  {}\n", b.name, "new",
                      "-", "-", "-", "-", "-", "-", "no baseline stored; run gate record");
      continue;
    }
    const Shift& s = b.comparison.shift;
    out += fmt::format("{:<24} {:<9} {:>10} {:>20} {:>9.2g} {:>12.3f} {:>12.3f} {:>2}/{:<2}  {}\n",
                       b.name, verdict_of(b), percent(s.change), interval(s),
                       b.comparison.p_adjusted, s.base_p50_ns / 1e3, s.cand_p50_ns / 1e3,
                       s.base_runs, s.cand_runs, attribution(b));
  }
  for (const auto& b : r.results)
    for (const auto& e : b.explain) out += fmt::format("  explain {}: {}\n", b.name, e);
  out += summary_line(r) + "\n";
  return out;
}

std::string render_markdown(const CheckReport& r) {
  std::string out = fmt::format("### ktune gate: {}\n\n", summary_line(r));
  out +=
      "| benchmark | verdict | p50 change | interval | p (adjusted) | baseline p50 | p50 | "
      "attribution |\n|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& b : r.results) {
    if (!b.has_baseline) {
      out += fmt::format("| {} | new | | | | | | no baseline stored |\n", b.name);
      continue;
    }
    const Shift& s = b.comparison.shift;
    const std::string v = verdict_of(b);
    out += fmt::format("| {} | {} | {} | {} | {:.2g} | {:.3f} us | {:.3f} us | {} |\n", b.name,
                       v == "slower" ? "**slower**" : v, percent(s.change), interval(s),
                       b.comparison.p_adjusted, s.base_p50_ns / 1e3, s.cand_p50_ns / 1e3,
                       attribution(b));
  }
  for (const auto& b : r.results) {
    if (b.explain.empty()) continue;
    out += fmt::format("\n<details><summary>Explain {}</summary>\n\n```sh\n", b.name);
    for (const auto& e : b.explain)
      out += "# " + e.substr(0, e.find(':')) + "\n" + e.substr(e.find(':') + 2) + "\n";
    out += "```\n</details>\n";
  }
  out += fmt::format("\n<sub>{} {} · driver {} · toolkit {} · ktune {}</sub>\n", r.env.device_name,
                     r.env.arch, r.env.driver, r.env.toolkit, r.env.ktune_build);
  return out;
}

std::string render_junit(const CheckReport& r) {
  int failures = 0, skipped = 0;
  for (const auto& b : r.results) {
    failures += b.has_baseline && b.comparison.verdict == Verdict::slower;
    skipped += !b.has_baseline || b.comparison.verdict == Verdict::noisy;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites>\n  <testsuite name=\"ktune gate {}\" tests=\"{}\" failures=\"{}\" "
      "skipped=\"{}\" time=\"{:.3f}\">\n",
      xml_escape(r.suite), r.results.size(), failures, skipped, r.duration_s);
  for (const auto& b : r.results) {
    out += fmt::format("    <testcase classname=\"ktune.gate\" name=\"{}\" time=\"{:.3f}\">\n",
                       xml_escape(b.name), b.measure_s);
    const std::string detail =
        b.has_baseline ? fmt::format("{} p50 {}, interval {}, p (adjusted) {:.2g}{}", verdict_of(b),
                                     percent(b.comparison.shift.change),
                                     interval(b.comparison.shift), b.comparison.p_adjusted,
                                     attribution(b).empty() ? "" : "; " + attribution(b))
                       : std::string("no baseline stored");
    if (b.has_baseline && b.comparison.verdict == Verdict::slower) {
      std::string body;
      for (const auto& e : b.explain) body += e + "\n";
      out += fmt::format("      <failure message=\"{}\">{}</failure>\n", xml_escape(detail),
                         xml_escape(body));
    } else if (!b.has_baseline || b.comparison.verdict == Verdict::noisy) {
      out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(detail));
    } else {
      out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(detail));
    }
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

void to_json(nlohmann::json& j, const CheckReport& r) {
  nlohmann::json benches = nlohmann::json::array();
  for (const auto& b : r.results) {
    nlohmann::json e = {{"name", b.name},
                        {"shape", b.shape},
                        {"verdict", verdict_of(b)},
                        {"measure_s", b.measure_s}};
    if (b.has_baseline) {
      const Shift& s = b.comparison.shift;
      e["change"] = s.change;
      e["ci_low"] = s.ci_low;
      e["ci_high"] = s.ci_high;
      e["interval_known"] = s.interval_known;
      e["p_value"] = s.p_value;
      e["p_adjusted"] = b.comparison.p_adjusted;
      e["base_p50_ns"] = s.base_p50_ns;
      e["cand_p50_ns"] = s.cand_p50_ns;
      e["base_runs"] = s.base_runs;
      e["cand_runs"] = s.cand_runs;
      e["base_samples"] = s.base_samples;
      e["cand_samples"] = s.cand_samples;
      e["remeasured"] = b.comparison.remeasured;
      e["baseline"] = {{"commit", b.baseline_commit},
                       {"session", b.baseline_session},
                       {"recorded_at", b.baseline_recorded_at},
                       {"environment", b.baseline_env}};
      e["environment_changes"] = b.environment_changes;
      e["blame"] = b.blame == Blame::none ? nlohmann::json() : nlohmann::json(to_string(b.blame));
      e["explain"] = b.explain;
    }
    benches.push_back(std::move(e));
  }
  j = {{"schema_version", kCheckSchemaVersion},
       {"suite", r.suite},
       {"passed", !r.regressed()},
       {"environment", r.env},
       {"code_commit", r.code_commit},
       {"against", r.against},
       {"rule",
        {{"threshold", r.rule.threshold},
         {"alpha", r.rule.alpha},
         {"confidence", r.rule.confidence},
         {"baseline_runs", r.rule.baseline_runs},
         {"max_baseline_runs", r.rule.max_baseline_runs},
         {"candidate_runs", r.rule.candidate_runs},
         {"max_remeasure", r.rule.max_remeasure}}},
       {"duration_s", r.duration_s},
       {"benchmarks", std::move(benches)}};
}

}  // namespace ktune::gate
