// ktune bench SPEC: measures one configuration of a kernel described by a T1 tuning spec, verified
// against the spec's reference first. Exit 0 when measured, 1 on any failure (status named).
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/bench/pipeline.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "spec_options.hpp"

namespace ktune::cli {
namespace {

struct BenchArgs {
  std::string spec, config, mode = "cold", stop, compare, grid;
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
       add_grid_option(app, a->grid);
       app.add_flag(
           "--json", a->json,
           fmt::format("Print JSON (schema_version {})", bench::kMeasurementSchemaVersion));
       return [a, &globals] {
         const tune::ProblemSpec spec = load_spec(a->spec, a->grid);
         bench::PipelineSettings settings;
         settings.mode = bench::parse_mode(a->mode);
         settings.full.apply_overrides(a->stop);
         const bench::Problem problem =
             tune::make_problem(spec, tune::parse_config(spec, a->config));
         bench::CandidatePipeline pipeline(problem, settings, globals.device);
         if (!a->compare.empty()) {
           const bench::Problem other =
               tune::make_problem(spec, tune::parse_config(spec, a->compare));
           const bench::InterleavedResult r = pipeline.compare(problem, other, settings.full);
           nlohmann::json j = r;
           j["schema_version"] = bench::kMeasurementSchemaVersion;
           j["mode"] = bench::mode_name(settings.mode);
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
         bench::CandidateOutcome o = pipeline.run(problem);
         o.measurement.identity = cuda::capture_identity();
         if (a->json) {
           nlohmann::json j = o.measurement;
           j["status"] = bench::to_string(o.status);
           j["reason"] = o.status == bench::Status::ok ? "" : o.detail;
           fmt::print("{}\n", j.dump(2));
         } else if (o.status == bench::Status::ok) {
           print_text(o.measurement);
         }
         if (o.status != bench::Status::ok) {
           std::fprintf(stderr, "ktune: %s: %s\n", bench::to_string(o.status), o.detail.c_str());
           return 1;
         }
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
