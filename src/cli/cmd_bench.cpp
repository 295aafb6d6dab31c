// ktune bench SPEC: measures one configuration of a kernel described by a T1 tuning spec, verified
// against the spec's reference first. Exit 0 when measured, 1 on any failure (status named).
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/bench/runner.hpp"
#include "ktune/bench/spec_problem.hpp"
#include "ktune/cuda/identity.hpp"

namespace ktune::cli {
namespace {

struct BenchArgs {
  std::string spec, config, mode = "cold", stop, compare;
  bool json = false;
};

void print_text(const bench::Measurement& m) {
  const auto& t = m.time_ns;
  fmt::print("{} [{}] mode {} ({} launch{}/sample)\n", m.kernel, m.config.dump(),
             bench::mode_name(m.mode), m.launches_per_sample,
             m.launches_per_sample == 1 ? "" : "es");
  fmt::print(
      "  median {:.3f} us  mean {:.3f}  stddev {:.3f}  min {:.3f}  max {:.3f}  p5 {:.3f}  p95 "
      "{:.3f}\n",
      t.median / 1e3, t.mean / 1e3, t.stddev / 1e3, t.min / 1e3, t.max / 1e3, t.p5 / 1e3,
      t.p95 / 1e3);
  fmt::print("  samples {}  noise {:.2f} %  stop {}  dropped (throttled) {}  SM clock {} MHz\n",
             t.count, 100 * m.noise, bench::stop_reason_name(m.stop_reason), m.dropped_throttled,
             m.sm_clock_mhz_median);
  if (m.bytes > 0) fmt::print("  bandwidth {:.1f} GB/s\n", m.bytes_per_s() / 1e9);
  if (m.flop > 0) fmt::print("  compute {:.1f} GFLOP/s\n", m.flop_per_s() / 1e9);
  fmt::print("  verification {}\n",
             m.verification.checked
                 ? (m.verification.passed ? "passed: " : "FAILED: ") + m.verification.detail
                 : std::string("not checked (the spec has no reference)"));
}

const bool registered = register_command(
    {"bench", "Measure one configuration of a kernel described by a tuning spec", 45,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<BenchArgs>();
       app.add_option("spec", a->spec, "T1 tuning spec (JSON)")->required();
       app.add_option("--config", a->config, "Parameter values NAME=VALUE,... (others: defaults)");
       app.add_option("--mode", a->mode, "Timing mode: cold (L2 flushed), hot or graph");
       app.add_option("--stop", a->stop,
                      "Stop-rule overrides, e.g. min_samples=20,timeout_s=5 (defaults: 10 "
                      "samples, 0.5 s GPU time, 0.5 % noise, 15 s timeout)");
       app.add_option("--compare", a->compare,
                      "A second configuration NAME=VALUE,...: measure both interleaved (A B A B)");
       app.add_flag(
           "--json", a->json,
           fmt::format("Print JSON (schema_version {})", bench::kMeasurementSchemaVersion));
       return [a, &globals] {
         const tune::ProblemSpec spec = tune::ProblemSpec::load(a->spec);
         const bench::TimingMode mode = bench::parse_mode(a->mode);
         bench::StopSettings stop;
         stop.apply_overrides(a->stop);
         const bench::Problem problem =
             bench::make_problem(spec, bench::parse_config(spec, a->config));
         bench::Bench b(globals.device);
         if (!a->compare.empty()) {
           const bench::Problem other =
               bench::make_problem(spec, bench::parse_config(spec, a->compare));
           const bench::InterleavedResult r = b.compare(problem, other, mode, stop);
           nlohmann::json j = r;
           j["schema_version"] = bench::kMeasurementSchemaVersion;
           j["mode"] = bench::mode_name(mode);
           j["a"] = problem.config;
           j["b"] = other.config;
           if (a->json)
             fmt::print("{}\n", j.dump(2));
           else
             fmt::print(
                 "A {:.3f} us, B {:.3f} us (medians over {} pairs); B/A {:.4f} (p5 {:.4f}, p95 "
                 "{:.4f})\n",
                 r.a_ns.median / 1e3, r.b_ns.median / 1e3, r.pairs, r.ratio.median, r.ratio.p5,
                 r.ratio.p95);
           return 0;
         }
         bench::BenchOutcome o = b.run(problem, mode, stop);
         o.measurement.identity = cuda::capture_identity();
         if (a->json) {
           nlohmann::json j = o.measurement;
           j["status"] = bench::status_name(o.status);
           j["reason"] = o.reason;
           fmt::print("{}\n", j.dump(2));
         } else if (o.status == bench::BenchOutcome::Status::ok) {
           print_text(o.measurement);
         }
         if (o.status != bench::BenchOutcome::Status::ok) {
           std::fprintf(stderr, "ktune: %s: %s\n",
                        std::string(bench::status_name(o.status)).c_str(), o.reason.c_str());
           return 1;
         }
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
