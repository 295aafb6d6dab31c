#include "ktune/tune/spec_problem.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "ktune/core/assignments.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/spec/space.hpp"

namespace ktune::tune {

using bench::KernelArg;
using bench::KernelLaunch;

namespace {

std::string define_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::boolean:
      return v.truthy() ? "1" : "0";
    case Value::Kind::string:
      return v.as_string();
    default:
      return v.repr();
  }
}

std::string allowed(const Parameter& p) {
  std::vector<std::string> v;
  for (const auto& x : p.values) v.push_back(x.repr());
  return fmt::format("{}", fmt::join(v, ", "));
}

// ktune's stand-in for HIP's runtime header when a HIP-flavoured kernel is compiled as CUDA (as the
// benchmark hub ships some): such kernels use CUDA's built-ins under the same names.
constexpr const char* kHipRuntimeShim =
    "#pragma once\n#ifndef __HIP_PLATFORM_NVIDIA__\n#define __HIP_PLATFORM_NVIDIA__ 1\n#endif\n";

// C headers a CUDA kernel may include whose declarations NVRTC already has built in, and what
// ktune gives in their place: math.h's constants (POSIX, used by kernels as M_PI), nothing else.
constexpr std::pair<std::string_view, std::string_view> kBuiltinCHeaders[] = {
    {"math.h",
     "#pragma once\n"
     "#ifndef M_PI\n"
     "#define M_E 2.7182818284590452354\n"
     "#define M_LOG2E 1.4426950408889634074\n"
     "#define M_LOG10E 0.43429448190325182765\n"
     "#define M_LN2 0.69314718055994530942\n"
     "#define M_LN10 2.30258509299404568402\n"
     "#define M_PI 3.14159265358979323846\n"
     "#define M_PI_2 1.57079632679489661923\n"
     "#define M_PI_4 0.78539816339744830962\n"
     "#define M_1_PI 0.31830988618379067154\n"
     "#define M_2_PI 0.63661977236758134308\n"
     "#define M_2_SQRTPI 1.12837916709551257390\n"
     "#define M_SQRT2 1.41421356237309504880\n"
     "#define M_SQRT1_2 0.70710678118654752440\n"
     "#endif\n"},
    {"stdio.h", "#pragma once\n"},
};

struct Include {
  bool quoted = false;  // "name", else <name>
  std::string name;
};

// The #include directives of `text`, one per line: optional blanks, '#', blanks, "include",
// blanks, then "name" or <name> on that line. A scan, not std::regex: the library's backtracking
// matcher recursed once per character and overflowed the stack on a 50 KB file name.
std::vector<Include> includes_of(std::string_view text) {
  std::vector<Include> out;
  const auto blanks = [&](std::size_t i, std::size_t end) {
    while (i < end && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\v' ||
                       text[i] == '\f'))
      ++i;
    return i;
  };
  for (std::size_t line = 0; line < text.size();) {
    std::size_t end = text.find('\n', line);
    if (end == std::string_view::npos) end = text.size();
    std::size_t i = blanks(line, end);
    if (i < end && text[i] == '#') {
      i = blanks(i + 1, end);
      constexpr std::string_view kWord = "include";
      if (text.substr(i, kWord.size()) == kWord) {
        i = blanks(i + kWord.size(), end);
        if (i < end && (text[i] == '"' || text[i] == '<')) {
          const std::size_t close = text.substr(0, end).find_first_of("\">", i + 1);
          if (close != std::string_view::npos && close > i + 1)
            out.push_back({text[i] == '"', std::string(text.substr(i + 1, close - i - 1))});
        }
      }
    }
    line = end + 1;
  }
  return out;
}

// A name as a message quotes it: a hostile source may name a 50 KB file.
std::string quoted_name(const std::string& name) {
  return name.size() > 200 ? name.substr(0, 200) + "..." : name;
}

// The files a kernel source includes with #include "...", found beside the including file and read
// (transitively, each once), so NVRTC gets them from memory and the binary cache key covers them.
// Every include that names a path out of the spec's folder tree (`root`: "../../etc/shadow", an
// absolute path, a link out) is refused, quoted or angled: NVRTC would read it itself and print
// its first line in the error.
std::vector<std::pair<std::string, std::string>> local_headers(const std::string& source,
                                                               const std::filesystem::path& file,
                                                               const std::filesystem::path& root) {
  const std::filesystem::path dir = file.parent_path();
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  std::vector<std::string> pending{source};
  while (!pending.empty() && out.size() < 256) {
    const std::string text = std::move(pending.back());
    pending.pop_back();
    for (const auto& [quoted, name] : includes_of(text)) {
      const std::filesystem::path path(name);
      const bool climbs =
          path.is_absolute() ||
          std::any_of(path.begin(), path.end(), [](const auto& p) { return p == ".."; });
      if (!seen.insert(name).second) continue;
      if ((quoted || climbs) && !inside_allowed(root, dir / path))
        throw Error(fmt::format(
            "{} includes \"{}\", which is outside the spec's folder {}; ktune compiles only "
            "headers beside the spec (and the toolkit's): move the header there, or allow its "
            "folder with --allow-path.",
            file.string(), quoted_name(name), root.string()));
      if (!quoted) {
        // C's math and stdio headers, which NVRTC does not ship: their device functions (sinf,
        // printf) are NVRTC built-ins, so an empty header is what the kernel needs (BAT's FFT
        // includes <math.h>, and its reader compiles through jitify, which does the same).
        for (const auto& [header, stub] : kBuiltinCHeaders)
          if (name == header) out.emplace_back(name, std::string(stub));
        continue;  // else a toolkit header: NVRTC has it
      }
      const std::filesystem::path header = dir / path;
      std::error_code ec;  // a name too long for the file system is no header either
      if (std::filesystem::is_regular_file(header, ec))
        out.emplace_back(name, read_file(header));
      else if (name == "hip/hip_runtime.h")
        out.emplace_back(name, kHipRuntimeShim);
      else
        continue;  // a toolkit header, or missing: NVRTC says which
      pending.push_back(out.back().second);
    }
  }
  return out;
}

// Whether defining `name` can change what the compiler sees: the name occurs as an identifier in
// the source or a local header. A parameter the code never names yields the same binary for every
// value, so leaving its -D out lets configurations differing only in it share one compilation (the
// compile pool and the disk cache are keyed by the options). Token pasting (##) could form any
// name, so a source that pastes keeps every define.
bool code_may_use(const std::string& name, const KernelLaunch& l) {
  const auto uses = [&](const std::string& text) {
    if (text.find("##") != std::string::npos) return true;
    const auto ident = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    };
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      const bool starts = at == 0 || !ident(text[at - 1]);
      const bool ends = at + name.size() == text.size() || !ident(text[at + name.size()]);
      if (starts && ends) return true;
    }
    return false;
  };
  if (uses(l.source)) return true;
  for (const auto& [header_name, text] : l.headers)
    if (uses(text)) return true;
  for (const auto& flag : l.flags)
    if (uses(flag)) return true;
  return false;
}

KernelLaunch make_launch(const ProblemSpec& spec, const std::string& source,
                         const std::filesystem::path& file, const std::string& kernel,
                         const MapScope& scope, const ConfigMap& values) {
  KernelLaunch l;
  l.source = source;
  l.program_name = file.filename().string();
  l.headers = local_headers(source, file, spec.kernel.files_root);
  l.kernel_name = kernel;
  l.flags = spec.kernel.compiler_options;
  std::vector<std::string> defines;
  for (const auto& [name, v] : spec.benchmark_config)
    if (!values.count(name) && code_may_use(name, l))
      defines.push_back(fmt::format("-D{}={}", name, define_value(v)));
  for (const auto& [name, v] : values)
    if (code_may_use(name, l)) defines.push_back(fmt::format("-D{}={}", name, define_value(v)));
  l.flags.insert(l.flags.end(), defines.begin(), defines.end());
  const LaunchGeometry g = spec.launch_geometry(scope);
  if (!set_geometry(l, g))
    throw Error(fmt::format(
        "{}: the launch geometry of this configuration is grid {}x{}x{}, block {}x{}x{}; fix "
        "KernelSpecification.GlobalSize/LocalSize so every dimension is at least 1 (at most "
        "1024 threads a block dimension).",
        spec.source, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2]));
  return l;
}

}  // namespace

bool set_geometry(bench::KernelLaunch& l, const LaunchGeometry& g) {
  for (int d = 0; d < 3; ++d) {
    l.grid[d] = static_cast<unsigned>(std::clamp<std::int64_t>(g.grid[d], 0, 0x7fffffff));
    l.block[d] = static_cast<unsigned>(std::clamp<std::int64_t>(g.block[d], 0, 1 << 20));
  }
  l.dynamic_shared_bytes =
      static_cast<unsigned>(std::clamp<std::int64_t>(g.shared_memory_bytes, 0, 1LL << 31));
  return g.launchable();
}

ConfigMap default_config(const ProblemSpec& spec) {
  ConfigMap c;
  for (const auto& p : spec.parameters) c[p.name] = p.default_value.value_or(p.values.front());
  return c;
}

ConfigMap parse_config(const ProblemSpec& spec, std::string_view text) {
  ConfigMap c = default_config(spec);
  for (const Assignment& a : parse_assignments(text, "--config", "block_size_x=128,unroll=4")) {
    const std::string& name = a.name;
    const std::string_view text_value = a.value;
    const auto it = std::find_if(spec.parameters.begin(), spec.parameters.end(),
                                 [&](const Parameter& p) { return p.name == name; });
    if (it == spec.parameters.end()) {
      std::vector<std::string> names;
      for (const auto& p : spec.parameters) names.push_back(p.name);
      throw Error(fmt::format("--config names '{}', which is not a parameter of {}; use one of {}.",
                              name, spec.source, fmt::join(names, ", ")));
    }
    Value v;
    try {
      v = evaluate_constant(text_value);
    } catch (const Error&) {
      v = Value(std::string(text_value));  // a bare word: a string parameter's value
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

namespace {

// The most elements a Generator computes: each is an expression evaluation on the host (about a
// microsecond), so this bounds one problem's setup to seconds.
constexpr std::size_t kMaxGeneratedElements = std::size_t{1} << 24;

// A Generator argument's elements: its expression at i = 0 .. count - 1.
std::shared_ptr<const std::vector<double>> generate_values(const ProblemSpec& spec,
                                                           const Expression& generator,
                                                           const Scope& constants,
                                                           std::size_t count,
                                                           const std::string& field) {
  if (count > kMaxGeneratedElements)
    throw Error(fmt::format(
        "{}: field {}.FillType Generator would compute {} elements one expression at a time, "
        "more than the {} ktune generates; use Random or Constant for an argument this large.",
        spec.source, field, count, kMaxGeneratedElements));
  auto out = std::make_shared<std::vector<double>>(count);
  MapScope scope(&constants);
  try {
    for (std::size_t i = 0; i < count; ++i) {
      scope.set("i", Value(static_cast<std::int64_t>(i)));
      (*out)[i] = generator.evaluate(scope).as_double();
    }
  } catch (const ExpressionError& e) {
    throw e.with_context(spec.source, field + ".DataSource");
  } catch (const Error& e) {
    throw Error(fmt::format("{}: field {}.DataSource: {}", spec.source, field, e.what()));
  }
  return out;
}

}  // namespace

bench::Problem make_problem(const ProblemSpec& spec, const ConfigMap& values,
                            const std::map<std::string, std::int64_t>& shape) {
  const MapScope constants = spec.constants(shape);
  MapScope scope(&constants);
  for (const auto& [name, v] : values) scope.set(name, v);

  bench::Problem p;
  if (!spec.runnable())
    throw Error(
        fmt::format("{}: ktune compiles and runs CUDA kernels, and this spec's Language is "
                    "{}; --dry-run still checks it and enumerates its space.",
                    spec.source, spec.kernel.language));
  p.name = spec.name;
  for (const auto& [name, v] : values) p.config[name] = v;
  const std::string source = read_file(spec.kernel.kernel_file);
  p.launch =
      make_launch(spec, source, spec.kernel.kernel_file, spec.kernel.kernel_name, scope, values);
  // Argument sizes are the same for every configuration (buffers are made once): the parameters
  // are their lists of values there, as in Kernel Tuner's T1 reader.
  const MapScope sizes = spec.size_scope(constants);

  const auto eval_in = [&](const Scope& in, const Expression& e, const std::string& field) {
    try {
      return e.evaluate(in).as_int();
    } catch (const ExpressionError& err) {
      throw err.with_context(spec.source, field);
    } catch (const Error& err) {
      throw Error(fmt::format("{}: field {}: {}", spec.source, field, err.what()));
    }
  };
  const auto eval_int = [&](const Expression& e, const std::string& field) {
    return eval_in(scope, e, field);
  };
  const auto eval_size = [&](const Expression& e, const std::string& field) {
    return eval_in(sizes, e, field);
  };
  for (std::size_t i = 0; i < spec.kernel.arguments.size(); ++i) {
    const Argument& a = spec.kernel.arguments[i];
    const std::string field = fmt::format("KernelSpecification.Arguments[{}]", i);
    KernelArg k;
    k.name = a.name;
    // Read once with the spec; a type ktune cannot fill stops here, with parse_dtype's sentence
    // naming the types it can.
    if (!a.dtype) {
      try {
        parse_dtype(a.type);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: field {}.Type: {}", spec.source, field, e.what()));
      }
    }
    k.dtype = *a.dtype;
    if (a.memory_type == MemoryType::scalar) {
      if (a.width > 1)
        throw Error(fmt::format(
            "{}: field {}.Type is {}, a vector type, but the argument is a Scalar, which ktune "
            "passes as one {} value; make it a Vector or give its element type.",
            spec.source, field, a.type, to_string(k.dtype)));
      k.kind = KernelArg::Kind::scalar;
      try {
        k.value = a.fill_value.as_double();
      } catch (const Error& e) {
        throw Error(fmt::format("{}: field {}.FillValue: {}", spec.source, field, e.what()));
      }
    } else {
      k.kind = a.constant_memory ? KernelArg::Kind::constant_memory : KernelArg::Kind::buffer;
      // A vector type holds `width` elements per entry, side by side (float4: x, y, z, w).
      const std::int64_t count = eval_size(a.size, field + ".Size") * a.width;
      if (count < 1)
        throw Error(fmt::format("{}: field {}.Size is {}; an argument needs at least one element.",
                                spec.source, field, count));
      // The byte count wrapped: 2**62+1 floats were "4 bytes", and the dry run passed.
      constexpr std::int64_t kMaxArgumentBytes = std::int64_t{1} << 40;  // past any GPU's memory
      const auto element = static_cast<std::int64_t>(dtype_bytes(k.dtype));
      if (count > kMaxArgumentBytes / element)
        throw Error(fmt::format(
            "{}: field {}.Size is {} elements of {} bytes, more than the 1 TiB any GPU holds; "
            "check the Size expression.",
            spec.source, field, count, element));
      k.count = static_cast<std::size_t>(count);
      if (a.fill_type == FillType::random) {
        k.fill = KernelArg::Fill::random;
      } else if (a.fill_type == FillType::constant) {
        k.fill = KernelArg::Fill::constant;
        k.value = a.fill_value.as_double();
      } else if (a.fill_type == FillType::generator) {
        k.fill = KernelArg::Fill::values;
        k.values = generate_values(spec, *a.generator, constants, k.count, field);
      } else {
        throw Error(
            fmt::format("{}: field {}.FillType {} is not supported by ktune bench yet; use "
                        "Random, Constant or Generator.",
                        spec.source, field, to_string(a.fill_type)));
      }
      k.output = a.output;
      k.seed = a.random_seed;
      if (const auto& t = spec.ktune.tolerance) k.tolerance = bench::Tolerance{t->atol, t->rtol};
    }
    p.args.push_back(std::move(k));
  }
  if (spec.ktune.flops) p.flop = static_cast<double>(eval_int(*spec.ktune.flops, "ktune.flops"));
  if (spec.ktune.bytes) p.bytes = static_cast<double>(eval_int(*spec.ktune.bytes, "ktune.bytes"));

  if (const auto& ref = spec.ktune.reference) {
    if (ref->is_kernel()) {
      p.reference = make_launch(spec, read_file(ref->kernel_file), ref->kernel_file,
                                ref->kernel_name, scope, values);
    } else {
      ConfigMap rv = values;
      for (const auto& [name, v] : ref->configuration) rv[name] = v;
      MapScope rscope(&constants);
      for (const auto& [name, v] : rv) rscope.set(name, v);
      p.reference =
          make_launch(spec, source, spec.kernel.kernel_file, spec.kernel.kernel_name, rscope, rv);
    }
  }
  return p;
}

std::optional<std::map<std::string, std::int64_t>> shape_from_launch(
    const ProblemSpec& spec, const std::array<std::int64_t, 3>& grid,
    const std::array<std::int64_t, 3>& block, std::size_t max_configs) {
  if (spec.ktune.shape.empty()) return std::nullopt;
  std::map<std::string, std::int64_t> defaults;
  for (const auto& v : spec.ktune.shape)
    if (v.default_value) defaults[v.name] = *v.default_value;
  const MapScope base = spec.constants(defaults);
  const SearchSpace space = SearchSpace::from_spec(spec, &base);
  // The grid of `config` at `shape`; nullopt when the spec's expressions cannot be evaluated there.
  const auto grid_at = [&](const Configuration& c, const std::map<std::string, std::int64_t>& shape)
      -> std::optional<std::array<std::int64_t, 3>> {
    try {
      const MapScope constants = spec.constants(shape);
      MapScope scope(&constants);
      for (std::size_t i = 0; i < space.parameters().size(); ++i)
        scope.set(space.parameters()[i].name, space.parameters()[i].values[c[i]]);
      return spec.launch_geometry(scope).grid;
    } catch (const Error&) {
      return std::nullopt;
    }
  };
  // The shape that makes configuration `c` launch the grid and block, or nullopt.
  const auto try_config =
      [&](const Configuration& c) -> std::optional<std::map<std::string, std::int64_t>> {
    LaunchGeometry g;
    try {
      g = spec.launch_geometry(space.scope(c));
    } catch (const Error&) {
      return std::nullopt;
    }
    if (g.block != block) return std::nullopt;
    std::map<std::string, std::int64_t> shape = defaults;
    for (const auto& v : spec.ktune.shape) {
      // The dimension this variable moves, if any: its grid at twice the default.
      const auto at = [&](std::int64_t value) {
        auto s = shape;
        s[v.name] = value;
        return grid_at(c, s);
      };
      const auto lo = at(shape[v.name]), hi = at(2 * std::max<std::int64_t>(shape[v.name], 1));
      if (!lo || !hi || *lo == *hi) continue;
      std::size_t d = 0;
      while (d < 3 && (*lo)[d] == (*hi)[d]) ++d;
      // The largest value whose grid in that dimension is still the launch's: grid_d grows with
      // the variable, so a binary search finds the top of the launch's step.
      std::int64_t low = 1, high = std::int64_t{1} << 40;
      while (low < high) {
        const std::int64_t mid = low + (high - low + 1) / 2;
        const auto g_mid = at(mid);
        if (g_mid && (*g_mid)[d] <= grid[d])
          low = mid;
        else
          high = mid - 1;
      }
      shape[v.name] = low;
    }
    if (grid_at(c, shape) != grid) return std::nullopt;
    return shape;
  };
  // A launch does not show parameters that leave the block alone (a tile size), so several
  // configurations may fit it: the spec's default configuration, the one a program runs unless
  // tuned, is asked first.
  std::map<std::string, Value> default_values;
  for (const auto& [k, v] : default_config(spec)) default_values[k] = v;
  if (const auto d = space.from_values(default_values))
    if (auto shape = try_config(*d)) return shape;
  std::optional<std::map<std::string, std::int64_t>> found;
  std::size_t seen = 0;
  space.for_each([&](const Configuration& c) {
    if (++seen > max_configs) return false;
    found = try_config(c);
    return !found;
  });
  return found;
}

}  // namespace ktune::tune
