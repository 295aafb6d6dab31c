// ktune bench SPEC: measures one configuration of a kernel described by a T1 tuning spec, verified
// against the spec's reference first. Exit 0 when measured, 1 on any failure (status named).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/bench/pipeline.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/trace/ktrace.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "print_json.hpp"
#include "spec_options.hpp"

namespace ktune::cli {
namespace {

struct BenchArgs {
  std::string spec, config, mode = "cold", stop, compare, grid, metrics;
  bool json = false;
};

// This process's arguments without --metrics (and its value): the measurement a --metrics run
// repeats under the tracer.
std::vector<std::string> own_args_without_metrics() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  std::vector<std::string> out = {std::filesystem::read_symlink("/proc/self/exe").string()};
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--metrics") {
      ++i;
      continue;
    }
    if (args[i].rfind("--metrics=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// ktune bench --metrics SET: the same measurement, run again by ktune profile with counters on the
// kernel's first launch (the tracer lives in the profiled process, so this one cannot host it);
// the counters are printed after the measurement.
int bench_with_counters(const BenchArgs& a, const tune::ProblemSpec& spec) {
  if (a.json || !a.compare.empty())
    throw UsageError(
        "--metrics prints text for one configuration; drop --json and --compare, or run ktune "
        "profile --metrics SET -- ktune bench ... and read the counters from its .ktrace.");
  trace::TracerOptions o;
  o.kernels_only = true;
  o.metrics = a.metrics;
  o.counters.kernel_regex = regex_escape(spec.kernel.kernel_name);
  o.counters.launch_count = 1;
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("ktune-bench-metrics-{}", static_cast<long>(::getpid()));
  std::filesystem::create_directories(dir);
  o.output = dir / "bench.ktrace";
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  // The default store: bench reads the counters alone, never the roofline.
  const int code = run_profile(o, own_args_without_metrics(), "");
  if (!std::filesystem::exists(o.output)) return code == 0 ? 1 : code;
  const trace::KtraceReader reader(o.output);
  std::map<std::uint32_t, std::string> names;
  reader.kernels([&](const trace::KernelRecord& k) {
    names[k.correlation_id] = k.demangled_name.empty() ? k.name : k.demangled_name;
  });
  std::uint32_t launch = 0;
  std::size_t values = 0;
  reader.counters([&](const trace::CounterRecord& c) {
    if (values == 0 || c.correlation_id != launch) {
      launch = c.correlation_id;
      const auto it = names.find(launch);
      fmt::print("counters ({}) of {}:\n", a.metrics,
                 it == names.end() ? spec.kernel.kernel_name : it->second);
    }
    ++values;
    fmt::print("  {:<72} {:>18.6g}\n", c.metric, c.value);
  });
  if (values == 0) {
    std::fprintf(stderr,
                 "ktune: no counters were recorded for %s; the tracer's message above says why.\n",
                 spec.kernel.kernel_name.c_str());
    return code == 0 ? 1 : code;
  }
  return code;
}

void print_text(const bench::Measurement& m) {
  const auto& t = m.time_ns;
  fmt::print("{} [{}] mode {} ({} launch{}/sample)\n", m.kernel, m.config.dump(),
             bench::to_string(m.mode), m.launches_per_sample,
             m.launches_per_sample == 1 ? "" : "es");
  fmt::print(
      "  median {:.3f} us  mean {:.3f}  stddev {:.3f}  min {:.3f}  max {:.3f}  p5 {:.3f}  p95 "
      "{:.3f}\n",
      t.median / 1e3, t.mean / 1e3, t.stddev / 1e3, t.min / 1e3, t.max / 1e3, t.p5 / 1e3,
      t.p95 / 1e3);
  fmt::print("  samples {}  noise {:.2f} %  stop {}  dropped (throttled) {}  SM clock {} MHz\n",
             t.count, 100 * m.noise, bench::to_string(m.stop_reason), m.dropped_throttled,
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
       app.add_option("--mode", a->mode, "Timing mode: cold (L2 flushed), hot or graph")
           ->check(parsed_by([](const std::string& v) { bench::parse_mode(v); }));
       app.add_option("--stop", a->stop,
                      "Stop-rule overrides, e.g. min_samples=20,timeout_s=5 (" +
                          stop_rule_defaults(bench::PipelineSettings{}.full) + ")");
       app.add_option("--compare", a->compare,
                      "A second configuration NAME=VALUE,...: measure both interleaved (A B A B)");
       add_grid_option(app, a->grid);
       app.add_option("--metrics", a->metrics,
                      "Also read hardware counters of the kernel's first launch: a set (triage, "
                      "roofline, memory, stalls, compute, full) or metric names "
                      "(docs/profiling.md)");
       app.add_flag(
           "--json", a->json,
           fmt::format("Print JSON (schema_version {})", bench::kMeasurementSchemaVersion));
       return [a, &globals] {
         const tune::ProblemSpec spec = load_spec(a->spec, a->grid);
         if (!a->metrics.empty()) {
           trace::TracerOptions check;
           check.metrics = a->metrics;
           try {
             trace::check_counter_options(check);
           } catch (const Error& e) {
             throw UsageError(e.what());
           }
           return bench_with_counters(*a, spec);
         }
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
           j["mode"] = bench::to_string(settings.mode);
           j["a"] = problem.config;
           j["b"] = other.config;
           if (a->json)
             print_json(j, bench::kMeasurementSchemaVersion);
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
           print_json(j);
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
