#include "ktune/tune/spec.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"

namespace ktune::tune {
namespace {

using nlohmann::json;

// Reads one JSON object with the file and field path at hand, so every complaint names both.
class Fields {
 public:
  Fields(const std::string& source, std::string path) : source_(source), path_(std::move(path)) {}

  [[noreturn]] void fail(std::string_view field, std::string_view problem) const {
    throw Error(fmt::format("{}: field {}: {}", source_, join(field), problem));
  }
  std::string join(std::string_view field) const {
    if (path_.empty()) return std::string(field);
    if (field.empty()) return path_;
    return field.front() == '[' ? path_ + std::string(field) : path_ + "." + std::string(field);
  }
  Fields child(std::string_view field) const { return Fields(source_, join(field)); }
  const std::string& source() const { return source_; }

  const json& object(const json& j, std::string_view field) const {
    auto it = j.find(field);
    if (it == j.end() || !it->is_object())
      fail(field, it == j.end() ? "is missing; add it (an object)" : "must be an object");
    return *it;
  }
  const json* optional(const json& j, std::string_view field) const {
    auto it = j.find(field);
    return (it == j.end() || it->is_null()) ? nullptr : &*it;
  }
  std::string string(const json& j, std::string_view field, std::optional<std::string> def) const {
    const json* v = optional(j, field);
    if (!v) {
      if (def) return *def;
      fail(field, "is missing; add it (a string)");
    }
    if (!v->is_string()) fail(field, fmt::format("must be a string, not JSON {}", v->type_name()));
    return v->get<std::string>();
  }
  // T1 writes expressions as strings; plain numbers are accepted too.
  Expression expression(const json& j, std::string_view field,
                        std::optional<std::string> def) const {
    const json* v = optional(j, field);
    std::string text;
    if (!v) {
      if (!def) fail(field, "is missing; add it (an expression string)");
      text = *def;
    } else if (v->is_string()) {
      text = v->get<std::string>();
    } else if (v->is_number()) {
      text = v->dump();
    } else {
      fail(field,
           fmt::format("must be an expression string or a number, not JSON {}", v->type_name()));
    }
    return parse_expression(text, field);
  }
  Expression parse_expression(const std::string& text, std::string_view field) const {
    try {
      return Expression::parse(text);
    } catch (const ExpressionError& e) {
      throw e.with_context(source_, join(field));
    }
  }
  double number(const json& j, std::string_view field, double def) const {
    const json* v = optional(j, field);
    if (!v) return def;
    if (!v->is_number()) fail(field, fmt::format("must be a number, not JSON {}", v->type_name()));
    return v->get<double>();
  }

 private:
  const std::string& source_;
  std::string path_;
};

const char* const kFillTypes[] = {"Constant", "Random", "BinaryRaw", "Generator"};
const char* const kAccessTypes[] = {"ReadOnly", "WriteOnly", "ReadWrite"};

template <typename List>
bool one_of(const std::string& s, const List& list) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

Parameter parse_parameter(const json& j, const Fields& f) {
  if (!j.is_object()) f.fail("", "must be an object with Name, Type and Values");
  Parameter p;
  p.name = f.string(j, "Name", std::nullopt);
  if (p.name.empty() || !(std::isalpha((unsigned char)p.name[0]) || p.name[0] == '_'))
    f.fail("Name", fmt::format("'{}' is not a valid identifier", p.name));
  p.type = f.string(j, "Type", "int");
  const json* values = f.optional(j, "Values");
  if (!values) f.fail("Values", "is missing; list the values, e.g. \"[1, 2, 4]\"");
  Value list;
  if (values->is_string()) {
    try {
      list = evaluate_constant(values->get<std::string>());
    } catch (const ExpressionError& e) {
      throw e.with_context(f.source(), f.join("Values"));
    }
  } else {
    try {
      list = values->get<Value>();
    } catch (const Error& e) {
      f.fail("Values", e.what());
    }
  }
  if (list.kind() != Value::Kind::List) f.fail("Values", "must be a list, e.g. \"[1, 2, 4]\"");
  p.values = list.as_list();
  if (p.values.empty()) f.fail("Values", "is empty; a parameter needs at least one value");
  for (std::size_t i = 0; i < p.values.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (p.values[i] == p.values[k])
        f.fail("Values", fmt::format("lists {} twice; remove the duplicate", p.values[i].repr()));
  if (const json* d = f.optional(j, "Default")) {
    try {
      p.default_value = d->get<Value>();
    } catch (const Error& e) {
      f.fail("Default", e.what());
    }
    if (std::find(p.values.begin(), p.values.end(), *p.default_value) == p.values.end())
      f.fail("Default", fmt::format("{} is not among the Values", p.default_value->repr()));
  }
  return p;
}

Argument parse_argument(const json& j, const Fields& f, const std::filesystem::path& base) {
  if (!j.is_object()) f.fail("", "must be an object");
  Argument a;
  a.name = f.string(j, "Name", std::nullopt);
  a.type = f.string(j, "Type", std::nullopt);
  a.memory_type = f.string(j, "MemoryType", "Vector");
  if (a.memory_type != "Vector" && a.memory_type != "Scalar")
    f.fail("MemoryType", fmt::format("'{}' is not Vector or Scalar", a.memory_type));
  a.access_type = f.string(j, "AccessType", "ReadWrite");
  if (!one_of(a.access_type, kAccessTypes))
    f.fail("AccessType",
           fmt::format("'{}' is not ReadOnly, WriteOnly or ReadWrite", a.access_type));
  a.constant_memory = f.string(j, "MemType", "Global") == "Constant";
  a.fill_type = f.string(j, "FillType", "Constant");
  if (!one_of(a.fill_type, kFillTypes))
    f.fail("FillType",
           fmt::format("'{}' is not one of Constant, Random, BinaryRaw, Generator", a.fill_type));
  a.size = f.expression(j, "Size", "1");
  if (const json* v = f.optional(j, "FillValue")) {
    try {
      a.fill_value = v->get<Value>();
    } catch (const Error& e) {
      f.fail("FillValue", e.what());
    }
  }
  if (const json* file = f.optional(j, "DataSource")) {
    if (!file->is_string()) f.fail("DataSource", "must be a file name");
    a.data_file = base / file->get<std::string>();
  }
  if (a.fill_type == "BinaryRaw" && a.data_file.empty())
    f.fail("DataSource", "is missing; FillType BinaryRaw reads its data from this file");
  if (const json* o = f.optional(j, "Output")) {
    if (!o->is_boolean() && !o->is_number_integer()) f.fail("Output", "must be 0/1 or true/false");
    a.output = o->is_boolean() ? o->get<bool>() : o->get<int>() != 0;
  }
  return a;
}

Dim3Expression parse_dim3(const json& j, const Fields& f) {
  if (!j.is_object()) f.fail("", "must be an object with X, Y and Z expressions");
  return {f.expression(j, "X", "1"), f.expression(j, "Y", "1"), f.expression(j, "Z", "1")};
}

KernelSpec parse_kernel(const json& j, const Fields& f, const std::filesystem::path& base) {
  KernelSpec k;
  k.language = f.string(j, "Language", "CUDA");
  if (k.language != "CUDA")
    f.fail("Language", fmt::format("'{}' is not supported; ktune tunes CUDA kernels", k.language));
  if (const json* opts = f.optional(j, "CompilerOptions")) {
    if (!opts->is_array()) f.fail("CompilerOptions", "must be a list of strings");
    for (std::size_t i = 0; i < opts->size(); ++i) {
      if (!(*opts)[i].is_string())
        f.fail(fmt::format("CompilerOptions[{}]", i), "must be a string");
      k.compiler_options.push_back((*opts)[i].get<std::string>());
    }
  }
  k.kernel_name = f.string(j, "KernelName", std::nullopt);
  k.kernel_file = base / f.string(j, "KernelFile", std::nullopt);
  k.global_size_type = f.string(j, "GlobalSizeType", "CUDA");
  if (k.global_size_type != "CUDA" && k.global_size_type != "OpenCL")
    f.fail("GlobalSizeType", fmt::format("'{}' is not CUDA or OpenCL", k.global_size_type));
  if (const json* l = f.optional(j, "LocalSize"))
    k.local_size = parse_dim3(*l, f.child("LocalSize"));
  else
    f.fail("LocalSize", "is missing; give the block size as {\"X\": ..., \"Y\": ..., \"Z\": ...}");
  if (const json* g = f.optional(j, "GlobalSize"))
    k.global_size = parse_dim3(*g, f.child("GlobalSize"));
  const char* const div_fields[] = {"GridDivX", "GridDivY", "GridDivZ"};
  for (int d = 0; d < 3; ++d) {
    const json* div = f.optional(j, div_fields[d]);
    if (!div) continue;
    if (!div->is_array()) f.fail(div_fields[d], "must be a list of expressions");
    for (std::size_t i = 0; i < div->size(); ++i) {
      const std::string field = fmt::format("{}[{}]", div_fields[d], i);
      const json& e = (*div)[i];
      if (!e.is_string() && !e.is_number()) f.fail(field, "must be an expression string");
      k.grid_div[d].push_back(
          f.parse_expression(e.is_string() ? e.get<std::string>() : e.dump(), field));
    }
  }
  if (const json* ps = f.optional(j, "ProblemSize")) {
    if (!ps->is_array()) f.fail("ProblemSize", "must be a list of sizes");
    for (std::size_t i = 0; i < ps->size(); ++i) {
      const json& e = (*ps)[i];
      const std::string field = fmt::format("ProblemSize[{}]", i);
      if (!e.is_string() && !e.is_number_integer())
        f.fail(field, "must be an integer or an expression string");
      k.problem_size.push_back(
          f.parse_expression(e.is_string() ? e.get<std::string>() : e.dump(), field));
    }
  }
  if (!k.global_size &&
      std::all_of(k.grid_div.begin(), k.grid_div.end(), [](const auto& v) { return v.empty(); }))
    f.fail("GlobalSize", "is missing, and no GridDivX/Y/Z is given; give one of them");
  k.shared_memory_bytes = f.expression(j, "SharedMemory", "0");
  if (const json* args = f.optional(j, "Arguments")) {
    if (!args->is_array()) f.fail("Arguments", "must be a list of argument objects");
    for (std::size_t i = 0; i < args->size(); ++i)
      k.arguments.push_back(
          parse_argument((*args)[i], f.child(fmt::format("Arguments[{}]", i)), base));
  }
  return k;
}

KtuneExtension parse_extension(const json& j, const Fields& f, const std::string& default_op,
                               const std::filesystem::path& base) {
  KtuneExtension x;
  x.op = f.string(j, "op", default_op);
  x.dtype = f.string(j, "dtype", "");
  if (const json* r = f.optional(j, "reference")) {
    const Fields rf = f.child("reference");
    if (!r->is_object()) rf.fail("", "must be an object with a configuration or a kernel");
    Reference ref;
    if (const json* c = rf.optional(*r, "configuration")) {
      if (!c->is_object()) rf.fail("configuration", "must map parameter names to values");
      for (const auto& [name, v] : c->items()) {
        try {
          ref.configuration[name] = v.get<Value>();
        } catch (const Error& e) {
          rf.fail("configuration." + name, e.what());
        }
      }
    }
    if (rf.optional(*r, "kernel_name")) {
      ref.kernel_name = rf.string(*r, "kernel_name", std::nullopt);
      ref.kernel_file = base / rf.string(*r, "kernel_file", std::nullopt);
    }
    if (ref.configuration.empty() == !ref.is_kernel())
      rf.fail("", "needs exactly one of \"configuration\" or \"kernel_name\" + \"kernel_file\"");
    x.reference = std::move(ref);
  }
  if (const json* t = f.optional(j, "tolerance")) {
    const Fields tf = f.child("tolerance");
    if (!t->is_object()) tf.fail("", "must be an object {\"rtol\": ..., \"atol\": ...}");
    x.tolerance.rtol = tf.number(*t, "rtol", x.tolerance.rtol);
    x.tolerance.atol = tf.number(*t, "atol", x.tolerance.atol);
    if (x.tolerance.rtol < 0 || x.tolerance.atol < 0) tf.fail("", "tolerances must be >= 0");
  }
  if (f.optional(j, "flops")) x.flops = f.expression(j, "flops", std::nullopt);
  if (f.optional(j, "bytes")) x.bytes = f.expression(j, "bytes", std::nullopt);
  if (const json* s = f.optional(j, "shape")) {
    if (!s->is_array()) f.fail("shape", "must be a list of {\"name\": ..., \"bucket\": ...}");
    for (std::size_t i = 0; i < s->size(); ++i) {
      const Fields sf = f.child(fmt::format("shape[{}]", i));
      const json& e = (*s)[i];
      if (!e.is_object()) sf.fail("", "must be an object with name and bucket");
      ShapeVariable v;
      v.name = sf.string(e, "name", std::nullopt);
      try {
        v.bucket = BucketPolicy::parse(sf.string(e, "bucket", "exact"));
      } catch (const Error& err) {
        sf.fail("bucket", err.what());
      }
      if (const json* d = sf.optional(e, "default")) {
        if (!d->is_number_integer()) sf.fail("default", "must be an integer");
        v.default_value = d->get<std::int64_t>();
      }
      x.shape.push_back(std::move(v));
    }
  }
  return x;
}

}  // namespace

std::int64_t BucketPolicy::bucket(std::int64_t value) const {
  switch (kind) {
    case Kind::Exact:
      return value;
    case Kind::Pow2: {
      std::int64_t p = 1;
      while (p < value && p < (std::int64_t{1} << 62)) p <<= 1;
      return p;
    }
    case Kind::Multiple:
      return (value + step - 1) / step * step;
  }
  return value;
}

std::string BucketPolicy::to_string() const {
  switch (kind) {
    case Kind::Exact:
      return "exact";
    case Kind::Pow2:
      return "pow2";
    case Kind::Multiple:
      return fmt::format("multiple:{}", step);
  }
  return "?";
}

BucketPolicy BucketPolicy::parse(std::string_view text) {
  BucketPolicy p;
  if (text == "exact") return p;
  if (text == "pow2") {
    p.kind = Kind::Pow2;
    return p;
  }
  if (text.substr(0, 9) == "multiple:") {
    const std::string n(text.substr(9));
    char* end = nullptr;
    const long long step = std::strtoll(n.c_str(), &end, 10);
    if (!n.empty() && !*end && step > 0) {
      p.kind = Kind::Multiple;
      p.step = step;
      return p;
    }
  }
  throw Error(
      fmt::format("bucket policy '{}' is not one of exact, pow2, multiple:N (N > 0)", text));
}

ProblemSpec ProblemSpec::load(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(
        fmt::format("{}: not valid JSON at byte {}; fix the syntax there.", path.string(), e.byte));
  }
  return parse(j, path.string(), path.parent_path());
}

ProblemSpec ProblemSpec::parse(const json& j, std::string source,
                               const std::filesystem::path& base_dir) {
  ProblemSpec s;
  s.source = std::move(source);
  const Fields top(s.source, "");
  if (!j.is_object()) top.fail("(top level)", "must be a JSON object in the T1 format");
  if (const json* g = top.optional(j, "General"))
    s.name = top.child("General").string(*g, "BenchmarkName", "");

  const json& cs = top.object(j, "ConfigurationSpace");
  const Fields csf = top.child("ConfigurationSpace");
  const json* params = csf.optional(cs, "TuningParameters");
  if (!params || !params->is_array() || params->empty())
    csf.fail("TuningParameters", "must be a non-empty list of parameters");
  for (std::size_t i = 0; i < params->size(); ++i) {
    s.parameters.push_back(
        parse_parameter((*params)[i], csf.child(fmt::format("TuningParameters[{}]", i))));
    for (std::size_t k = 0; k < i; ++k)
      if (s.parameters[k].name == s.parameters[i].name)
        csf.fail(
            fmt::format("TuningParameters[{}].Name", i),
            fmt::format("'{}' is already a parameter; names must be unique", s.parameters[i].name));
  }
  if (const json* conds = csf.optional(cs, "Conditions")) {
    if (!conds->is_array()) csf.fail("Conditions", "must be a list of {\"Expression\": ...}");
    for (std::size_t i = 0; i < conds->size(); ++i) {
      const Fields cf = csf.child(fmt::format("Conditions[{}]", i));
      const json& c = (*conds)[i];
      if (!c.is_object()) cf.fail("", "must be an object with an Expression");
      Constraint con;
      con.expression = cf.expression(c, "Expression", std::nullopt);
      if (const json* ps = cf.optional(c, "Parameters")) {
        if (!ps->is_array()) cf.fail("Parameters", "must be a list of parameter names");
        for (const auto& p : *ps)
          if (p.is_string()) con.parameters.push_back(p.get<std::string>());
      }
      s.constraints.push_back(std::move(con));
    }
  }

  const json& ks = top.object(j, "KernelSpecification");
  s.kernel = parse_kernel(ks, top.child("KernelSpecification"), base_dir);
  if (s.name.empty()) s.name = top.child("KernelSpecification").string(ks, "BenchmarkName", "");

  if (const json* x = top.optional(j, "ktune")) {
    if (!x->is_object()) top.fail("ktune", "must be an object");
    s.ktune = parse_extension(*x, top.child("ktune"), s.name, base_dir);
  } else {
    s.ktune.op = s.name;
  }

  // Every name an expression reads must be a parameter, ProblemSize or a shape variable.
  std::vector<std::string> known = {"ProblemSize"};
  for (const auto& p : s.parameters) known.push_back(p.name);
  for (const auto& v : s.ktune.shape) known.push_back(v.name);
  auto check_names = [&](const Expression& e, const std::string& field) {
    for (const auto& n : e.names())
      if (std::find(known.begin(), known.end(), n) == known.end())
        throw Error(fmt::format(
            "{}: field {}: expression \"{}\" reads '{}', which is not a parameter, ProblemSize "
            "or a ktune.shape variable; fix the name or declare it.",
            s.source, field, e.text(), n));
  };
  for (std::size_t i = 0; i < s.constraints.size(); ++i)
    check_names(s.constraints[i].expression,
                fmt::format("ConfigurationSpace.Conditions[{}].Expression", i));
  check_names(s.kernel.local_size.x, "KernelSpecification.LocalSize.X");
  check_names(s.kernel.local_size.y, "KernelSpecification.LocalSize.Y");
  check_names(s.kernel.local_size.z, "KernelSpecification.LocalSize.Z");
  if (s.kernel.global_size) {
    check_names(s.kernel.global_size->x, "KernelSpecification.GlobalSize.X");
    check_names(s.kernel.global_size->y, "KernelSpecification.GlobalSize.Y");
    check_names(s.kernel.global_size->z, "KernelSpecification.GlobalSize.Z");
  }
  for (std::size_t i = 0; i < s.kernel.arguments.size(); ++i)
    check_names(s.kernel.arguments[i].size,
                fmt::format("KernelSpecification.Arguments[{}].Size", i));
  if (s.ktune.flops) check_names(*s.ktune.flops, "ktune.flops");
  if (s.ktune.bytes) check_names(*s.ktune.bytes, "ktune.bytes");
  return s;
}

MapScope ProblemSpec::constants(const std::map<std::string, std::int64_t>& shape) const {
  MapScope scope;
  for (const auto& v : ktune.shape) {
    if (auto it = shape.find(v.name); it != shape.end())
      scope.set(v.name, Value(it->second));
    else if (v.default_value)
      scope.set(v.name, Value(*v.default_value));
  }
  for (const auto& [name, value] : shape)
    if (!scope.find(name))
      throw Error(
          fmt::format("{}: shape variable '{}' is not declared in ktune.shape; declare it "
                      "or drop it from --shape.",
                      source, name));
  Value::List sizes;
  for (std::size_t i = 0; i < kernel.problem_size.size(); ++i) {
    try {
      sizes.push_back(Value(kernel.problem_size[i].evaluate(scope).as_int()));
    } catch (const ExpressionError& e) {
      throw e.with_context(source, fmt::format("KernelSpecification.ProblemSize[{}]", i));
    }
  }
  while (sizes.size() < 3) sizes.push_back(Value(1));
  scope.set("ProblemSize", Value(std::move(sizes)));
  return scope;
}

LaunchGeometry ProblemSpec::launch_geometry(const Scope& config) const {
  auto eval = [&](const Expression& e, std::string_view field) -> std::int64_t {
    try {
      return e.evaluate(config).as_int();
    } catch (const ExpressionError& err) {
      throw err.with_context(source, fmt::format("KernelSpecification.{}", field));
    } catch (const Error& err) {
      throw Error(fmt::format("{}: field KernelSpecification.{}: {}", source, field, err.what()));
    }
  };
  LaunchGeometry g;
  g.block = {eval(kernel.local_size.x, "LocalSize.X"), eval(kernel.local_size.y, "LocalSize.Y"),
             eval(kernel.local_size.z, "LocalSize.Z")};
  if (kernel.global_size) {
    g.grid = {eval(kernel.global_size->x, "GlobalSize.X"),
              eval(kernel.global_size->y, "GlobalSize.Y"),
              eval(kernel.global_size->z, "GlobalSize.Z")};
    if (kernel.global_size_type == "OpenCL")  // counts threads: round up to whole blocks
      for (int d = 0; d < 3; ++d) g.grid[d] = (g.grid[d] + g.block[d] - 1) / g.block[d];
  } else {
    const Value* ps = config.find("ProblemSize");
    for (int d = 0; d < 3; ++d) {
      std::int64_t div = 1;
      for (std::size_t i = 0; i < kernel.grid_div[d].size(); ++i)
        div *= eval(kernel.grid_div[d][i], fmt::format("GridDiv{}[{}]", "XYZ"[d], i));
      const std::int64_t size = ps ? ps->as_list()[d].as_int() : 1;
      g.grid[d] = div > 0 ? (size + div - 1) / div : 0;
    }
  }
  g.shared_memory_bytes = eval(kernel.shared_memory_bytes, "SharedMemory");
  return g;
}

}  // namespace ktune::tune
