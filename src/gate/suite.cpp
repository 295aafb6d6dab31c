#include "ktune/gate/suite.hpp"

#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/text.hpp"

namespace ktune::gate {
namespace {

// A suite lists a few dozen benchmarks; nvbench's per-sample file holds 4 bytes a sample.
constexpr std::size_t kMaxSuiteBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxSampleFileBytes = std::size_t{256} << 20;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& where,
                       const std::string& what) {
  throw Error(fmt::format("{}: {}: {}.", file.string(), where, what));
}

std::string string_key(const toml::table& t, const std::string& key, const std::string& fallback,
                       const std::filesystem::path& file, const std::string& where,
                       const char* example) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_string())
    fail(file, where, fmt::format("\"{}\" must be a string, e.g. {} = {}", key, key, example));
  return n->as_string()->get();
}

std::vector<std::string> string_list(const toml::table& t, const std::string& key,
                                     const std::filesystem::path& file, const std::string& where,
                                     const char* example) {
  std::vector<std::string> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a)
    fail(file, where,
         fmt::format("\"{}\" must be a list of strings, e.g. {} = {}", key, key, example));
  for (const auto& e : *a) {
    if (!e.is_string())
      fail(file, where,
           fmt::format("\"{}\" must hold only strings, e.g. {} = {}", key, key, example));
    out.push_back(e.as_string()->get());
  }
  return out;
}

double number_key(const toml::table& t, const std::string& key, double fallback, double lo,
                  double hi, const std::filesystem::path& file, const std::string& where) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  std::optional<double> v = n->value<double>();
  if (!v || *v < lo || *v > hi)
    fail(file, where, fmt::format("\"{}\" must be a number from {} to {}", key, lo, hi));
  return *v;
}

void reject_unknown(const toml::table& t, const std::set<std::string>& known,
                    const std::filesystem::path& file, const std::string& where) {
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (!known.count(key)) {
      std::string list;
      for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
      fail(file, where, fmt::format("unknown key \"{}\"; the keys are {}", key, list));
    }
  }
}

ProgramFormat parse_format(const std::string& s, const std::filesystem::path& file,
                           const std::string& where) {
  if (s == "ktune") return ProgramFormat::ktune;
  if (s == "gbench" || s == "google-benchmark") return ProgramFormat::gbench;
  if (s == "nvbench") return ProgramFormat::nvbench;
  fail(file, where,
       fmt::format("format \"{}\" is not one ktune reads; use \"ktune\" "
                   "(ktune bench --json), \"gbench\" or \"nvbench\"",
                   s));
}

}  // namespace

std::string SuiteBenchmark::shape_key() const {
  std::string out;
  for (const auto& [k, v] : shape) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

Suite parse_suite(const std::string& text, const std::filesystem::path& file) {
  toml::table root;
  try {
    root = toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}:{}: not valid TOML: {}; fix the syntax there.", file.string(),
                            e.source().begin.line, e.source().begin.column, e.description()));
  }
  Suite s;
  s.file = file;
  reject_unknown(root, {"schema_version", "gate", "benchmark"}, file, "top level");
  if (const toml::node* v = root.get("schema_version")) {
    if (v->value<std::int64_t>() != kSuiteSchemaVersion)
      fail(file, "schema_version",
           fmt::format("this ktune reads suite schema_version {}", kSuiteSchemaVersion));
  }
  if (const toml::node* g = root.get("gate")) {
    const toml::table* t = g->as_table();
    if (!t) fail(file, "[gate]", "must be a table of settings");
    const std::string w = "[gate]";
    reject_unknown(*t,
                   {"threshold", "alpha", "confidence", "baseline_runs", "max_baseline_runs",
                    "candidate_runs", "max_remeasure", "stop", "nvrtc_options"},
                   file, w);
    s.rule.threshold = number_key(*t, "threshold", s.rule.threshold, 0.001, 1, file, w);
    s.rule.alpha = number_key(*t, "alpha", s.rule.alpha, 1e-6, 0.5, file, w);
    s.rule.confidence = number_key(*t, "confidence", s.rule.confidence, 0.5, 0.9999, file, w);
    s.rule.baseline_runs =
        static_cast<int>(number_key(*t, "baseline_runs", s.rule.baseline_runs, 2, 100, file, w));
    s.rule.max_baseline_runs = static_cast<int>(number_key(
        *t, "max_baseline_runs", std::max(s.rule.max_baseline_runs, s.rule.baseline_runs),
        s.rule.baseline_runs, 100, file, w));
    s.rule.candidate_runs =
        static_cast<int>(number_key(*t, "candidate_runs", s.rule.candidate_runs, 1, 100, file, w));
    s.rule.max_remeasure =
        static_cast<int>(number_key(*t, "max_remeasure", s.rule.max_remeasure, 0, 20, file, w));
    s.stop = string_key(*t, "stop", "", file, w, "\"min_gpu_time_s=0.3\"");
    s.nvrtc_options = string_list(*t, "nvrtc_options", file, w, "[\"-lineinfo\"]");
  }
  const toml::node* list = root.get("benchmark");
  const toml::array* benches = list ? list->as_array() : nullptr;
  if (!benches || benches->empty())
    fail(file, "benchmark",
         "the suite lists no benchmarks; add [[benchmark]] tables with a name "
         "and a spec or a command");
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  std::set<std::string> names;
  for (std::size_t i = 0; i < benches->size(); ++i) {
    const toml::table* t = (*benches)[i].as_table();
    std::string w = fmt::format("benchmark {}", i + 1);
    if (!t) fail(file, w, "must be a [[benchmark]] table");
    SuiteBenchmark b;
    b.name = string_key(*t, "name", "", file, w, "\"gemv_f16\"");
    if (b.name.empty()) fail(file, w, "\"name\" is missing; give each benchmark a unique name");
    w += fmt::format(" (\"{}\")", b.name);
    reject_unknown(
        *t, {"name", "spec", "config", "shape", "mode", "command", "format", "select", "timeout_s"},
        file, w);
    if (!names.insert(b.name).second)
      fail(file, w, "the name is used twice; names key the stored baselines, make them unique");
    const std::string spec = string_key(*t, "spec", "", file, w, "\"kernels/gemv/gemv.json\"");
    b.command = string_list(*t, "command", file, w, "[\"./my_bench\", \"--json\"]");
    if (spec.empty() == b.command.empty())
      fail(file, w,
           "give exactly one of \"spec\" (a ktune tuning spec) or \"command\" (a program "
           "printing JSON)");
    if (!spec.empty()) {
      if (t->get("timeout_s"))
        fail(file, w,
             "\"timeout_s\" applies to a command; a spec's runs are bounded by its stop rule "
             "([gate] stop), so remove it");
      b.spec = std::filesystem::path(spec).is_absolute() ? std::filesystem::path(spec) : dir / spec;
      b.config = string_key(*t, "config", "", file, w, "\"BLOCK=256,VEC=4\" or \"cached\"");
      if (b.config == "cached") b.cached_winner = true, b.config.clear();
      const std::string mode = string_key(*t, "mode", "cold", file, w, "\"cold\"");
      try {
        b.mode = bench::parse_mode(mode);
      } catch (const Error&) {
        fail(file, w, "\"mode\" must be \"cold\", \"hot\" or \"graph\"");
      }
      if (const toml::node* sh = t->get("shape")) {
        const toml::table* st = sh->as_table();
        if (!st) fail(file, w, "\"shape\" must be a table of integers, e.g. shape = { n = 4096 }");
        for (const auto& [k, v] : *st) {
          const auto x = v.value<std::int64_t>();
          if (!v.is_integer() || !x)
            fail(file, w, fmt::format("shape variable \"{}\" must be an integer", k.str()));
          b.shape[std::string(k.str())] = *x;
        }
      }
    } else {
      for (const char* k : {"config", "shape", "mode"})
        if (t->get(k))
          fail(file, w, fmt::format("\"{}\" applies to a spec, not to a command; remove it", k));
      b.timeout_s = number_key(*t, "timeout_s", kProgramTimeoutS, 0.1, 86400, file, w);
      b.format = parse_format(string_key(*t, "format", "ktune", file, w, "\"gbench\""), file, w);
      b.select = string_key(*t, "select", "", file, w, "\"BM_Gemm/4096\"");
    }
    s.benchmarks.push_back(std::move(b));
  }
  return s;
}

Suite load_suite(const std::filesystem::path& file) {
  // Bounded, and only a regular file: /dev/zero ended in bad_alloc, a FIFO blocked for ever.
  return parse_suite(read_file(file, kMaxSuiteBytes), file);
}

namespace {

double unit_to_ns(const std::string& unit, const std::string& where) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  throw Error(fmt::format("{}: unknown time_unit \"{}\" (ns, us, ms or s expected).", where, unit));
}

// nvbench writes numbers as strings in its summaries' data.
std::optional<double> nvbench_value(const nlohmann::json& summary, const char* name,
                                    const std::string& where) {
  for (const auto& d : summary.value("data", nlohmann::json::array()))
    if (d.value("name", "") == name) {
      const auto& v = d.at("value");
      if (!v.is_string()) return v.get<double>();
      if (const auto x = parse_double(v.get<std::string>())) return *x;
      throw Error(
          fmt::format("{}: nvbench's \"{}\" is '{}', not a number; check the "
                      "benchmark's \"format\".",
                      where, name, v.get<std::string>().substr(0, 40)));
    }
  return std::nullopt;
}

}  // namespace

std::vector<double> program_samples(const nlohmann::json& out, ProgramFormat format,
                                    const std::string& select, const std::string& where) {
  std::vector<double> samples;
  try {
    switch (format) {
      case ProgramFormat::ktune:
        if (!out.contains("samples_ns"))
          throw Error(
              fmt::format("{}: no \"samples_ns\" in the output; it must be `ktune bench "
                          "--json` output (status {}).",
                          where, out.value("status", std::string("?"))));
        samples = out.at("samples_ns").get<std::vector<double>>();
        break;
      case ProgramFormat::gbench:
        // One entry per repetition (--benchmark_repetitions); aggregates are summaries, skipped.
        // Without `select`, the first benchmark's repetitions.
        {
          std::string want = select;
          for (const auto& b : out.at("benchmarks")) {
            if (b.value("run_type", "iteration") != "iteration") continue;
            const std::string name = b.value("run_name", b.value("name", ""));
            if (want.empty()) want = name;
            if (name != want && b.value("name", "") != want) continue;
            samples.push_back(b.at("real_time").get<double>() *
                              unit_to_ns(b.value("time_unit", "ns"), where));
          }
        }
        break;
      case ProgramFormat::nvbench:
        // Each state's mean cold GPU time is one sample; per-sample times live in a binary file
        // nvbench writes beside the JSON (--jsonbin), read when named.
        for (const auto& b : out.at("benchmarks")) {
          if (!select.empty() && b.value("name", "") != select) continue;
          for (const auto& st : b.at("states"))
            for (const auto& sm : st.value("summaries", nlohmann::json::array())) {
              const std::string tag = sm.value("tag", sm.value("name", ""));
              if (tag == "nv/cold/sample_times") {
                for (const auto& d : sm.value("data", nlohmann::json::array()))
                  if (d.value("name", "") == "filename") {
                    const std::string bin =
                        read_file(d.at("value").get<std::string>(), kMaxSampleFileBytes);
                    std::vector<double> times(bin.size() / sizeof(float));
                    for (std::size_t i = 0; i < times.size(); ++i) {
                      float x;
                      std::memcpy(&x, bin.data() + i * sizeof x, sizeof x);
                      times[i] = x * 1e9;
                    }
                    if (!times.empty()) samples = std::move(times);
                  }
              } else if ((tag == "nv/cold/time/gpu/mean" || tag == "Average GPU Time (Cold)") &&
                         samples.empty()) {
                if (auto v = nvbench_value(sm, "value", where)) samples.push_back(*v * 1e9);
              }
            }
          if (!samples.empty()) break;
        }
        break;
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("{}: the output is not the expected JSON ({}); check the benchmark's "
                    "\"format\".",
                    where, e.what()));
  }
  if (samples.empty())
    throw Error(fmt::format("{}: the output holds no timing{}; check \"select\" and \"format\".",
                            where, select.empty() ? "" : " for \"" + select + "\""));
  for (double x : samples)
    if (!(x > 0) || !std::isfinite(x))
      throw Error(
          fmt::format("{}: the output holds a time of {} ns; every time must be positive, "
                      "so check the program's timer and \"format\".",
                      where, x));
  return samples;
}

int program_clock_mhz(const nlohmann::json& output, ProgramFormat format) {
  if (format != ProgramFormat::ktune || !output.is_object()) return 0;
  const auto c = output.find("sm_clock_mhz");
  if (c == output.end() || !c->is_object()) return 0;
  const auto m = c->find("median");
  return m != c->end() && m->is_number() ? m->get<int>() : 0;
}

}  // namespace ktune::gate
