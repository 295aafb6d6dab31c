#include "dry_run.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/pipeline.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/progress.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

using nlohmann::json;

json geometry_json(const bench::KernelLaunch& l) {
  return {{"grid", l.grid}, {"block", l.block}, {"dynamic_shared_bytes", l.dynamic_shared_bytes}};
}

// The parameters of `kernel`'s __global__ definition in `source`, as written ("const float *
// shifts"); nothing when the definition cannot be found plainly (a macro-built or templated name).
std::optional<std::vector<std::string>> kernel_parameters(const std::string& source,
                                                          std::string kernel) {
  kernel = kernel.substr(0, kernel.find('<'));
  const auto is_ident = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (std::size_t at = source.find(kernel); at != std::string::npos;
       at = source.find(kernel, at + 1)) {
    if (at > 0 && is_ident(source[at - 1])) continue;
    std::size_t open = at + kernel.size();
    while (open < source.size() && std::isspace(static_cast<unsigned char>(source[open]))) ++open;
    if (open >= source.size() || source[open] != '(') continue;
    // A definition: __global__ before the name in the same declaration.
    const std::size_t decl = source.find_last_of(";}", at);
    const std::string head = source.substr(decl == std::string::npos ? 0 : decl + 1,
                                           at - (decl == std::string::npos ? 0 : decl + 1));
    if (head.find("__global__") == std::string::npos) continue;
    std::vector<std::string> params;
    std::string current;
    int depth = 0;
    for (std::size_t i = open + 1; i < source.size(); ++i) {
      const char c = source[i];
      if (c == '(' || c == '<' || c == '[') ++depth;
      if ((c == ')' || c == '>' || c == ']') && depth > 0) {
        --depth;
        current += c;
        continue;
      }
      if (c == ')' && depth == 0) {
        if (current.find_first_not_of(" \t\r\n") != std::string::npos) params.push_back(current);
        if (params.size() == 1 && params[0].find_first_not_of(" \t\r\n") == params[0].find("void"))
          params.clear();
        return params;
      }
      if (c == ',' && depth == 0) {
        params.push_back(current);
        current.clear();
        continue;
      }
      current += c;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string trimmed(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// What makes every candidate fault on the GPU although each compiles: an argument the kernel
// reads as an array given one element while the problem has many, and a value where the kernel
// takes a pointer (or the other way round). One sentence each.
std::vector<std::string> argument_problems(const tune::ProblemSpec& spec, const bench::Problem& p,
                                           std::uint64_t problem_elements) {
  std::vector<std::string> out;
  using Kind = bench::KernelArg::Kind;
  for (const auto& a : p.args)
    if (a.kind != Kind::scalar && !a.output && a.count == 1 && problem_elements > 1)
      out.push_back(fmt::format(
          "argument '{}' is an array of 1 element while the problem size is {} elements, so "
          "every thread past the first reads outside it; give its Size as the number of "
          "elements the kernel reads (an expression of ProblemSize), or make it a Scalar if "
          "the kernel takes one value",
          a.name, problem_elements));
  const auto params = kernel_parameters(p.launch.source, p.launch.kernel_name);
  if (!params) return out;
  std::vector<const bench::KernelArg*> passed;
  for (const auto& a : p.args)
    if (a.kind != Kind::constant_memory) passed.push_back(&a);
  if (params->size() != passed.size()) {
    passed.clear();
    for (const auto& a : p.args) passed.push_back(&a);
  }
  if (params->size() != passed.size()) {
    out.push_back(
        fmt::format("kernel {} takes {} parameters, the spec's Arguments give {}; list "
                    "one argument per parameter, in order",
                    spec.kernel.kernel_name, params->size(), passed.size()));
    return out;
  }
  for (std::size_t i = 0; i < passed.size(); ++i) {
    const std::string param = trimmed((*params)[i]);
    const bool pointer =
        param.find('*') != std::string::npos || param.find('[') != std::string::npos;
    const bench::KernelArg& a = *passed[i];
    if (a.kind == Kind::scalar && pointer)
      out.push_back(fmt::format(
          "argument '{}' is a Scalar, but parameter {} of {} is a pointer ({}); make it a Vector "
          "with a Size",
          a.name, i + 1, spec.kernel.kernel_name, param));
    else if (a.kind == Kind::buffer && !pointer)
      out.push_back(fmt::format(
          "argument '{}' is a Vector, but parameter {} of {} takes a value ({}); make it a "
          "Scalar",
          a.name, i + 1, spec.kernel.kernel_name, param));
  }
  return out;
}

}  // namespace

int dry_run(const tune::ProblemSpec& spec, const std::map<std::string, std::int64_t>& shape,
            const std::string& arch, bool as_json) {
  const tune::MapScope constants = spec.constants(shape);
  const tune::SearchSpace space = tune::SearchSpace::from_spec(spec, &constants);
  json report = {{"schema_version", kDryRunSchemaVersion},
                 {"spec", spec.source},
                 {"op", spec.ktune.op},
                 {"dtype", spec.ktune.dtype},
                 {"language", spec.kernel.language},
                 {"grid_source", tune::to_string(spec.kernel.grid_source)},
                 {"notes", spec.notes},
                 {"cartesian_size", space.cartesian_size()}};
  std::vector<std::string> problems;

  // Every valid configuration laid out (or, for a space too large to keep, the random sample a
  // search would draw from): an expression that fails anywhere in the space is found here, not
  // hours into a run. Those over Hopper's per-block limits are counted, not failures.
  const bench::DeviceLimits limits;
  const tune::IndexedSpace index(space);
  std::uint64_t over_limits = 0;
  std::optional<tune::Configuration> first_valid;
  std::optional<std::string> layout_error;
  Progress progress("dry run", index.size());
  for (std::size_t i = 0; i < index.size() && !layout_error; ++i) {
    const tune::Configuration c = index.at(i);
    if (!first_valid) first_valid = c;
    if (!spec.runnable()) break;  // enumerated only: ktune lays out and runs CUDA specs
    try {
      const tune::MapScope scope = space.scope(c);
      bench::KernelLaunch l;
      const bool fits = tune::set_geometry(l, spec.launch_geometry(scope));
      if (!fits || bench::launch_problem(limits, l)) ++over_limits;
    } catch (const Error& e) {
      layout_error = fmt::format("configuration {}: {}", space.describe(c), e.what());
    }
    if (i % 4096 == 0) progress.update(i);
  }
  progress.finish();
  const std::uint64_t valid = static_cast<std::uint64_t>(std::llround(index.valid_count()));
  report["space_size"] = valid;
  report["space_size_exact"] = index.valid_count_exact();
  report["sampled"] = index.sampled() ? json(index.size()) : json(nullptr);
  report["over_device_limits"] = over_limits;
  if (layout_error) problems.push_back(*layout_error);
  if (valid == 0) problems.push_back("no configuration satisfies every condition");

  // The default configuration (else the first valid one): arguments, geometry, compile.
  tune::ConfigMap config = tune::default_config(spec);
  const auto as_index = space.from_values(config);
  if ((!as_index || !space.valid(*as_index)) && first_valid) {
    report["default_breaks_a_condition"] = true;
    config.clear();
    const auto& params = space.parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
      config[params[i].name] = params[i].values[(*first_valid)[i]];
  }
  json cfg = json::object();
  for (const auto& [k, v] : config) cfg[k] = v;
  report["configuration"] = cfg;
  if (spec.runnable() && !layout_error && valid > 0) {
    try {
      const bench::Problem p = tune::make_problem(spec, config, shape);
      report["launch"] = geometry_json(p.launch);
      std::uint64_t problem_elements = 1;
      for (const auto& e : spec.kernel.problem_size)
        problem_elements *=
            static_cast<std::uint64_t>(std::max<std::int64_t>(1, e.evaluate(constants).as_int()));
      report["problem_elements"] = problem_elements;
      for (auto& why : argument_problems(spec, p, problem_elements)) problems.push_back(why);
      json args = json::array();
      for (const auto& a : p.args)
        args.push_back({{"name", a.name},
                        {"count", a.count},
                        {"bytes", a.kind == bench::KernelArg::Kind::scalar ? 0 : a.bytes()},
                        {"constant_memory", a.kind == bench::KernelArg::Kind::constant_memory}});
      report["arguments"] = args;
      try {
        const cuda::CompiledProgram prog = cuda::compile(p.launch.source, p.launch.program_name,
                                                         bench::compile_options(p.launch, arch));
        report["compile"] = {{"arch", arch}, {"ok", true}, {"cubin_bytes", prog.cubin.size()}};
      } catch (const cuda::CompileError& e) {
        report["compile"] = {{"arch", arch}, {"ok", false}, {"error", e.what()}, {"log", e.log()}};
        problems.push_back(fmt::format("{}: {}", e.what(), e.log().substr(0, 400)));
      }
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  } else if (!spec.runnable()) {
    report["compile"] = {{"ok", nullptr},
                         {"skipped", fmt::format("Language {} is read and enumerated, not compiled",
                                                 spec.kernel.language)}};
    problems.push_back(fmt::format(
        "the kernel is {}, and ktune compiles and runs CUDA kernels only: its space was checked, "
        "but it cannot be benchmarked or tuned; port the kernel to CUDA (Language CUDA)",
        spec.kernel.language));
  }
  report["problems"] = problems;
  report["ok"] = problems.empty();

  if (as_json) {
    print_json(report);
  } else {
    fmt::print(
        "{} ({}): op {}, dtype {}, {} valid configurations of {} ({} over Hopper's "
        "per-block limits)\n",
        spec.source, spec.kernel.language, spec.ktune.op, spec.ktune.dtype,
        index.valid_count_exact() ? fmt::format("{}", valid)
                                  : fmt::format("about {:.3g}", index.valid_count()),
        space.cartesian_size(), over_limits);
    if (index.sampled())
      fmt::print(
          "searched through a random sample of {} valid configurations (the most ktune "
          "keeps is {})\n",
          index.size(), tune::kMaxIndexedConfigurations);
    fmt::print("configuration: {}{}\n", cfg.dump(),
               report.contains("default_breaks_a_condition") ? " (the default breaks a condition; "
                                                               "the first valid one)"
                                                             : "");
    if (report.contains("launch"))
      fmt::print(
          "launch: grid {}x{}x{}, block {}x{}x{}, {} bytes of dynamic shared memory "
          "(grid from {})\n",
          report["launch"]["grid"][0].get<int>(), report["launch"]["grid"][1].get<int>(),
          report["launch"]["grid"][2].get<int>(), report["launch"]["block"][0].get<int>(),
          report["launch"]["block"][1].get<int>(), report["launch"]["block"][2].get<int>(),
          report["launch"]["dynamic_shared_bytes"].get<int>(),
          tune::to_string(spec.kernel.grid_source));
    if (report.contains("arguments"))
      for (const auto& a : report["arguments"])
        fmt::print("argument {}: {} elements, {} bytes{}\n", a["name"].get<std::string>(),
                   a["count"].get<std::size_t>(), a["bytes"].get<std::size_t>(),
                   a["constant_memory"].get<bool>() ? " (constant memory)" : "");
    if (report.contains("compile")) {
      const json& c = report["compile"];
      if (c.contains("skipped"))
        fmt::print("compile: skipped ({})\n", c["skipped"].get<std::string>());
      else
        fmt::print("compile ({}): {}\n", arch, c["ok"].get<bool>() ? "ok" : "FAILED");
    }
    for (const auto& p : problems) fmt::print("problem: {}\n", p);
    fmt::print("{}\n", problems.empty() ? "dry run: ok" : "dry run: FAILED");
  }
  return problems.empty() ? 0 : 1;
}

}  // namespace ktune::cli
