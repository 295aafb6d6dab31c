// compile_bench: how fast ktune's compile pool turns a spec's configurations into binaries, with no
// GPU and no measurement: the compile-only ceiling of a tuning session's evaluations per second.
//   ktune_compile_bench SPEC [--count N] [--seed S] [--threads T] [--configs RESULTS.jsonl]
//                       [--json FILE] [--ab-minimal]
// Takes N valid configurations drawn at random (or those a session evaluated, from its
// results.jsonl), compiles each distinct binary once on T threads (default: every core) through
// the kernel cache of $KTUNE_HOME, and prints the rates; run it with an empty $KTUNE_HOME for cold
// compiles. The JSON document (schema_version 1) holds the same figures. --ab-minimal instead
// compiles each configuration on this thread with and without NVRTC's --minimal mode, in turn,
// and compares their CPU time and binaries.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/compile_pool.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/tune/spec_problem.hpp"

using namespace ktune;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kSchemaVersion = 1;

// CPU seconds this process has used, every thread: a compile's cost that other work on a shared
// machine does not inflate, unlike its wall time.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Options {
  std::string spec, configs, json;
  std::size_t count = 64;
  std::uint64_t seed = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string arch = "sm_90";
  bool ab_minimal = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(fmt::format("{} needs a value.", a));
      return argv[++i];
    };
    if (a == "--count")
      o.count = std::stoul(next());
    else if (a == "--seed")
      o.seed = std::stoull(next());
    else if (a == "--threads")
      o.threads = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--configs")
      o.configs = next();
    else if (a == "--json")
      o.json = next();
    else if (a == "--arch")
      o.arch = next();
    else if (a == "--ab-minimal")
      o.ab_minimal = true;
    else if (o.spec.empty() && a.rfind("--", 0) != 0)
      o.spec = a;
    else
      throw Error(
          fmt::format("unknown argument '{}'; see the comment at the top of "
                      "benchmarks/tune/compile_bench.cpp.",
                      a));
  }
  if (o.spec.empty()) throw Error("usage: ktune_compile_bench SPEC [--count N] [--threads T] ...");
  return o;
}

// The configurations to compile: those of a session's results.jsonl, in its order, or `count`
// valid ones drawn without repeats.
std::vector<tune::ConfigMap> configurations(const tune::ProblemSpec& spec, const Options& o) {
  std::vector<tune::ConfigMap> out;
  if (!o.configs.empty()) {
    std::ifstream in(o.configs);
    if (!in) throw Error(fmt::format("{}: cannot be read.", o.configs));
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      tune::ConfigMap c = tune::default_config(spec);
      for (const auto& [k, v] : nlohmann::json::parse(line).at("config").items())
        c[k] = v.get<tune::Value>();
      out.push_back(std::move(c));
    }
    return out;
  }
  const tune::MapScope constants = spec.constants();
  const tune::SearchSpace space = tune::SearchSpace::from_spec(spec, &constants);
  const tune::IndexedSpace index(space);
  std::vector<std::size_t> order(index.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(o.seed);
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(std::min(order.size(), o.count));
  for (const std::size_t i : order) {
    const tune::Configuration c = index.at(i);
    tune::ConfigMap m;
    for (std::size_t p = 0; p < c.size(); ++p)
      m[space.parameters()[p].name] = space.parameters()[p].values[c[p]];
    out.push_back(std::move(m));
  }
  return out;
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Each launch compiled with and without --minimal, alternating which goes first; CPU seconds of
// this thread, which other work on a shared machine does not inflate.
int ab_minimal(const Options& o, const std::vector<bench::KernelLaunch>& launches) {
  double with_s = 0, without_s = 0;
  std::size_t same = 0, compared = 0, failed = 0;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const auto& l = launches[i];
    cuda::CompileOptions with = bench::compile_options(l, o.arch), without = with;
    std::erase(without.flags, std::string("--minimal"));
    if (with.flags.size() == without.flags.size())
      throw Error(fmt::format("{} does not qualify for --minimal; nothing to compare.", o.spec));
    std::string cubin[2];
    double took[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const int which = (static_cast<int>(i) + k) % 2;  // 0: with, 1: without
      const double t0 = thread_cpu_s();
      try {
        cubin[which] = cuda::compile(l.source, l.program_name, which == 0 ? with : without).cubin;
      } catch (const cuda::CompileError&) {
        cubin[which].clear();
      }
      took[which] = thread_cpu_s() - t0;
    }
    with_s += took[0];
    without_s += took[1];
    if (cubin[0].empty() || cubin[1].empty()) {
      failed += cubin[0].empty() != cubin[1].empty() ? 1000 : 1;  // both must fail alike
      continue;
    }
    ++compared;
    same += cubin[0] == cubin[1];
  }
  const double n = static_cast<double>(launches.size());
  fmt::print(
      "{} configurations ({} failed to compile both ways): {:.3f} s CPU per compile with "
      "--minimal, {:.3f} s without ({:+.1f} %); {} of {} binaries identical\n",
      launches.size(), failed, with_s / n, without_s / n, 100 * (with_s / without_s - 1), same,
      compared);
  const nlohmann::json doc = {{"schema_version", kSchemaVersion},
                              {"spec", o.spec},
                              {"configurations", launches.size()},
                              {"failed", failed},
                              {"cpu_s_per_compile_minimal", with_s / n},
                              {"cpu_s_per_compile_full", without_s / n},
                              {"identical_binaries", same},
                              {"compared_binaries", compared}};
  if (!o.json.empty()) write_file_atomic(o.json, doc.dump(2) + "\n");
  return same == compared && failed < 1000 ? 0 : 1;
}

int run(const Options& o) {
  const tune::ProblemSpec spec = tune::ProblemSpec::load(o.spec);
  std::vector<bench::KernelLaunch> launches;
  // A configuration the session could not lay out (its geometry) is not compiled there either.
  for (const auto& c : configurations(spec, o)) {
    try {
      launches.push_back(tune::make_problem(spec, c).launch);
    } catch (const Error&) {
      continue;
    }
  }
  if (o.ab_minimal) return ab_minimal(o, launches);
  std::set<std::string> keys;
  for (const auto& l : launches)
    keys.insert(cuda::compile_cache_key(l.source, bench::compile_options(l, o.arch)));

  const auto t0 = Clock::now();
  const double cpu0 = cpu_s();
  std::size_t ok = 0, failed = 0, cached = 0;
  double compile_s = 0;
  {
    bench::CompilePool pool(o.arch, o.threads);
    for (const auto& l : launches) pool.enqueue(l);
    for (const auto& l : launches) {
      const bench::Compiled c = pool.take(l);
      (c.program ? ok : failed) += 1;
      if (c.program && c.program->from_cache) ++cached;
      compile_s += c.compile_s;
    }
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double compiled_binaries =
      static_cast<double>(std::max<std::size_t>(1, keys.size() - cached));
  const double cpu_s_per_binary = (cpu_s() - cpu0) / compiled_binaries;
  const std::size_t n = launches.size();
  const nlohmann::json doc = {
      {"schema_version", kSchemaVersion},
      {"spec", o.spec},
      {"arch", o.arch},
      {"threads", o.threads},
      {"configurations", n},
      {"distinct_binaries", keys.size()},
      {"compiled", ok},
      {"failed", failed},
      {"from_cache", cached},
      {"wall_s", wall_s},
      {"configurations_per_s", n / wall_s},
      {"binaries_per_s", keys.size() / wall_s},
      // Summed over configurations; a binary shared by several is counted where it was compiled.
      {"compile_s_per_binary", compile_s / compiled_binaries},
      {"cpu_s_per_binary", cpu_s_per_binary}};
  if (!o.json.empty()) write_file_atomic(o.json, doc.dump(2) + "\n");
  fmt::print(
      "{} configurations, {} distinct binaries ({} from the cache), {} failed to compile, "
      "{} threads: {:.2f} s, {:.2f} configurations/s (compile-only ceiling), "
      "{:.2f} binaries/s, {:.2f} s wall and {:.2f} s CPU per binary compiled\n",
      n, keys.size(), cached, failed, o.threads, wall_s, n / wall_s, keys.size() / wall_s,
      doc["compile_s_per_binary"].get<double>(), cpu_s_per_binary);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune_compile_bench: %s\n", e.what());
    return 1;
  }
}
