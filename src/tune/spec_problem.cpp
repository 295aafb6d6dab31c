#include "ktune/bench/spec_problem.hpp"

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::bench {

namespace {

std::string define_value(const tune::Value& v) {
  switch (v.kind()) {
    case tune::Value::Kind::Bool:
      return v.truthy() ? "1" : "0";
    case tune::Value::Kind::String:
      return v.as_string();
    default:
      return v.repr();
  }
}

std::string allowed(const tune::Parameter& p) {
  std::vector<std::string> v;
  for (const auto& x : p.values) v.push_back(x.repr());
  return fmt::format("{}", fmt::join(v, ", "));
}

KernelLaunch make_launch(const tune::ProblemSpec& spec, const std::string& source,
                         const std::string& program, const std::string& kernel,
                         const tune::MapScope& scope, const ConfigValues& values) {
  KernelLaunch l;
  l.source = source;
  l.program_name = program;
  l.kernel_name = kernel;
  l.flags = spec.kernel.compiler_options;
  for (const auto& [name, v] : values)
    l.flags.push_back(fmt::format("-D{}={}", name, define_value(v)));
  const tune::LaunchGeometry g = spec.launch_geometry(scope);
  for (int d = 0; d < 3; ++d) {
    if (g.grid[d] < 1 || g.block[d] < 1 || g.grid[d] > 0x7fffffff || g.block[d] > 1024)
      throw Error(fmt::format(
          "{}: the launch geometry of this configuration is grid {}x{}x{}, block {}x{}x{}; fix "
          "KernelSpecification.GlobalSize/LocalSize so every dimension is at least 1.",
          spec.source, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2]));
    l.grid[d] = static_cast<unsigned>(g.grid[d]);
    l.block[d] = static_cast<unsigned>(g.block[d]);
  }
  l.dynamic_shared_bytes = static_cast<unsigned>(std::max<std::int64_t>(0, g.shared_memory_bytes));
  return l;
}

}  // namespace

ConfigValues default_config(const tune::ProblemSpec& spec) {
  ConfigValues c;
  for (const auto& p : spec.parameters) c[p.name] = p.default_value.value_or(p.values.front());
  return c;
}

ConfigValues parse_config(const tune::ProblemSpec& spec, std::string_view text) {
  ConfigValues c = default_config(spec);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw Error(fmt::format("--config item '{}' needs the form NAME=VALUE.", item));
    const std::string name(item.substr(0, eq));
    const std::string_view text_value = item.substr(eq + 1);
    const auto it = std::find_if(spec.parameters.begin(), spec.parameters.end(),
                                 [&](const tune::Parameter& p) { return p.name == name; });
    if (it == spec.parameters.end()) {
      std::vector<std::string> names;
      for (const auto& p : spec.parameters) names.push_back(p.name);
      throw Error(fmt::format("--config names '{}', which is not a parameter of {}; use one of {}.",
                              name, spec.source, fmt::join(names, ", ")));
    }
    tune::Value v;
    try {
      v = tune::evaluate_constant(text_value);
    } catch (const Error&) {
      v = tune::Value(std::string(text_value));  // a bare word: a string parameter's value
    }
    const auto match = std::find(it->values.begin(), it->values.end(), v);
    if (match == it->values.end())
      throw Error(
          fmt::format("--config {}={} is not among that parameter's values in {}; use one of {}.",
                      name, text_value, spec.source, allowed(*it)));
    c[name] = *match;
  }
  return c;
}

Problem make_problem(const tune::ProblemSpec& spec, const ConfigValues& values,
                     const std::map<std::string, std::int64_t>& shape) {
  const tune::MapScope constants = spec.constants(shape);
  tune::MapScope scope(&constants);
  for (const auto& [name, v] : values) scope.set(name, v);

  Problem p;
  p.name = spec.name;
  for (const auto& [name, v] : values) p.config[name] = v;
  const std::string source = read_file(spec.kernel.kernel_file);
  const std::string program = spec.kernel.kernel_file.filename().string();
  p.launch = make_launch(spec, source, program, spec.kernel.kernel_name, scope, values);

  const auto eval_int = [&](const tune::Expression& e, const std::string& field) {
    try {
      return e.evaluate(scope).as_int();
    } catch (const tune::ExpressionError& err) {
      throw err.with_context(spec.source, field);
    }
  };
  // The spec's tolerance applies when it sets one; its untouched default is too tight for 16-bit
  // outputs, so those get the per-dtype default instead.
  const tune::Tolerance untouched;
  const bool spec_tolerance =
      spec.ktune.tolerance.rtol != untouched.rtol || spec.ktune.tolerance.atol != untouched.atol;
  for (std::size_t i = 0; i < spec.kernel.arguments.size(); ++i) {
    const tune::Argument& a = spec.kernel.arguments[i];
    const std::string field = fmt::format("KernelSpecification.Arguments[{}]", i);
    KernelArg k;
    k.name = a.name;
    try {
      k.dtype = cuda::parse_dtype(a.type);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: field {}.Type: {}", spec.source, field, e.what()));
    }
    if (a.memory_type == "Scalar") {
      k.kind = KernelArg::Kind::scalar;
      k.value = a.fill_value.as_double();
    } else {
      k.kind = a.constant_memory ? KernelArg::Kind::constant_memory : KernelArg::Kind::buffer;
      const std::int64_t count = eval_int(a.size, field + ".Size");
      if (count < 1)
        throw Error(fmt::format("{}: field {}.Size is {}; an argument needs at least one element.",
                                spec.source, field, count));
      k.count = static_cast<std::size_t>(count);
      if (a.fill_type == "Random") {
        k.fill = KernelArg::Fill::random;
      } else if (a.fill_type == "Constant") {
        k.fill = KernelArg::Fill::constant;
        k.value = a.fill_value.as_double();
      } else {
        throw Error(
            fmt::format("{}: field {}.FillType {} is not supported by ktune bench yet; use "
                        "Random or Constant.",
                        spec.source, field, a.fill_type));
      }
      k.output = a.output;
      if (spec_tolerance)
        k.tolerance = Tolerance{spec.ktune.tolerance.atol, spec.ktune.tolerance.rtol};
    }
    p.args.push_back(std::move(k));
  }
  if (spec.ktune.flops) p.flop = static_cast<double>(eval_int(*spec.ktune.flops, "ktune.flops"));
  if (spec.ktune.bytes) p.bytes = static_cast<double>(eval_int(*spec.ktune.bytes, "ktune.bytes"));

  if (const auto& ref = spec.ktune.reference) {
    if (ref->is_kernel()) {
      p.reference =
          make_launch(spec, read_file(ref->kernel_file), ref->kernel_file.filename().string(),
                      ref->kernel_name, scope, values);
    } else {
      ConfigValues rv = values;
      for (const auto& [name, v] : ref->configuration) rv[name] = v;
      tune::MapScope rscope(&constants);
      for (const auto& [name, v] : rv) rscope.set(name, v);
      p.reference = make_launch(spec, source, program, spec.kernel.kernel_name, rscope, rv);
    }
  }
  return p;
}

}  // namespace ktune::bench
