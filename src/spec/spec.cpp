#include "ktune/spec/spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/dtype.hpp"
#include "ktune/core/enum_names.hpp"
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
    if (it == j.end()) {
      // Older drafts of the format spell fields in lower case or with underscores
      // ("kernelSpecification", "configuration_space"): say so, since the file looks complete.
      for (const auto& [key, value] : j.items())
        if (loose_name(key) == loose_name(field))
          fail(field, fmt::format("is missing; the file has '{}', which T1 does not define (its "
                                  "field names are case-sensitive, without underscores): write "
                                  "the spec in the T1 layout",
                                  key));
      fail(field, "is missing; add it (an object)");
    }
    if (!it->is_object()) fail(field, "must be an object");
    return *it;
  }
  static std::string loose_name(std::string_view name) {
    std::string out;
    for (char c : name)
      if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
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

constexpr EnumName<MemoryType> kMemoryTypes[] = {
    {MemoryType::vector, "Vector"},
    {MemoryType::scalar, "Scalar"},
};
constexpr EnumName<AccessType> kAccessTypes[] = {
    {AccessType::read_only, "ReadOnly"},
    {AccessType::write_only, "WriteOnly"},
    {AccessType::read_write, "ReadWrite"},
};
constexpr EnumName<FillType> kFillTypes[] = {
    {FillType::constant, "Constant"},
    {FillType::random, "Random"},
    {FillType::binary_raw, "BinaryRaw"},
    {FillType::generator, "Generator"},
};

// The value `name` stands for in `table`; a failure of field `key` naming the accepted ones.
template <class E, std::size_t N>
E enum_field(const EnumName<E> (&table)[N], const std::string& name, const Fields& f,
             const char* key) {
  if (const auto v = value_of(table, name)) return *v;
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.second);
  f.fail(key, fmt::format("'{}' is not one of {}", name, fmt::join(names, ", ")));
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Parameter parse_parameter(const json& j, const Fields& f, std::vector<std::string>& notes) {
  if (!j.is_object()) f.fail("", "must be an object with Name, Type and Values");
  Parameter p;
  p.name = f.string(j, "Name", std::nullopt);
  // Every character counts: the name becomes a -DNAME=VALUE option of the compiler, and
  // "X -DEVIL=1 -I/etc" passed a check of its first character only.
  if (!is_identifier(p.name))
    f.fail("Name", fmt::format("'{}' is not a valid identifier (letters, digits and _, not "
                               "starting with a digit)",
                               p.name));
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
  if (list.kind() != Value::Kind::list) f.fail("Values", "must be a list, e.g. \"[1, 2, 4]\"");
  p.values = list.as_list();
  if (p.values.empty()) f.fail("Values", "is empty; a parameter needs at least one value");
  // Sorted once, duplicates sit side by side (Value's order agrees with its Python equality).
  std::vector<const Value*> sorted;
  for (const auto& v : p.values) sorted.push_back(&v);
  std::sort(sorted.begin(), sorted.end(), [](const Value* a, const Value* b) { return *a < *b; });
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (*sorted[i] == *sorted[i - 1])
      f.fail("Values", fmt::format("lists {} twice; remove the duplicate", sorted[i]->repr()));
  // T1 leaves "Default" undefined and Kernel Tuner ignores it, so a default that is not one of the
  // values is a note, not an error: ktune then starts from the first value.
  if (const json* d = f.optional(j, "Default")) {
    Value v;
    bool readable = true;
    try {
      v = d->get<Value>();
    } catch (const Error&) {
      readable = false;
    }
    if (readable && std::find(p.values.begin(), p.values.end(), v) != p.values.end())
      p.default_value = v;
    else
      notes.push_back(fmt::format(
          "{}: field {}: {}'s Default {} is not among its Values, so it is ignored and {} is the "
          "default.",
          f.source(), f.join("Default"), p.name, d->dump(), p.values.front().repr()));
  }
  return p;
}

Argument parse_argument(const json& j, const Fields& f, const std::filesystem::path& base,
                        const std::filesystem::path& root) {
  if (!j.is_object()) f.fail("", "must be an object");
  Argument a;
  a.name = f.string(j, "Name", std::nullopt);
  a.type = f.string(j, "Type", std::nullopt);
  if (const auto v = find_vector_type(a.type)) {
    a.dtype = v->element;
    a.width = v->width;
  }
  a.memory_type = enum_field(kMemoryTypes, f.string(j, "MemoryType", "Vector"), f, "MemoryType");
  a.access_type = enum_field(kAccessTypes, f.string(j, "AccessType", "ReadWrite"), f, "AccessType");
  a.constant_memory = f.string(j, "MemType", "Global") == "Constant";
  a.fill_type = enum_field(kFillTypes, f.string(j, "FillType", "Constant"), f, "FillType");
  a.size = f.expression(j, "Size", "1");
  if (const json* seed = f.optional(j, "RandomSeed")) {
    if (!seed->is_number_integer() || seed->get<std::int64_t>() < 0)
      f.fail("RandomSeed", "must be a non-negative integer");
    a.random_seed = seed->get<std::uint64_t>();
  }
  if (const json* v = f.optional(j, "FillValue")) {
    try {
      a.fill_value = v->get<Value>();
    } catch (const Error& e) {
      f.fail("FillValue", e.what());
    }
    // BAT's and Kernel Tuner's readers evaluate a FillValue written as a string ("4096", "1.0/3").
    if (a.fill_value.kind() == Value::Kind::string) {
      try {
        a.fill_value = evaluate_constant(v->get<std::string>());
      } catch (const ExpressionError& e) {
        throw e.with_context(f.source(), f.join("FillValue"));
      }
      if (a.fill_value.kind() != Value::Kind::integer && a.fill_value.kind() != Value::Kind::real)
        f.fail("FillValue", fmt::format("\"{}\" is not a number", v->get<std::string>()));
    }
  }
  if (a.fill_type == FillType::generator) {
    if (!f.optional(j, "DataSource"))
      f.fail("DataSource",
             "is missing; FillType Generator computes each element from this expression of "
             "the element index i, e.g. \"i\" or \"(i % 7) * 0.5\"");
    a.generator = f.expression(j, "DataSource", std::nullopt);
  } else if (const json* file = f.optional(j, "DataSource")) {
    if (!file->is_string()) f.fail("DataSource", "must be a file name");
    a.data_file = confined_path(root, base, file->get<std::string>(),
                                fmt::format("{}: field {}", f.source(), f.join("DataSource")));
  }
  if (a.fill_type == FillType::binary_raw && a.data_file.empty())
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

// Kernel Tuner's T1 reader looks for KernelFile as given, then beside the spec, then one folder up.
// Sets `root` to the folder the spec's files must stay in: the spec's, or its parent when the
// kernel file is found there. Where that lookup would leave the spec's folder tree (an absolute
// path, "..", a link out), the file is refused unless the user allowed its folder.
std::filesystem::path find_kernel_file(const std::string& name, const std::filesystem::path& base,
                                       const Fields& f, std::vector<std::string>& notes,
                                       std::filesystem::path& root) {
  const std::filesystem::path given(name);
  const std::string what = fmt::format("{}: field {}", f.source(), f.join("KernelFile"));
  root = base;
  if (given.is_absolute()) return confined_path(root, base, given, what);
  const std::filesystem::path beside = base / given;
  // Probes only: a name the file system refuses (too long, say) is a missing file, reported where
  // it is read.
  std::error_code ec;
  if (std::filesystem::exists(beside, ec)) return confined_path(root, base, given, what);
  const std::filesystem::path above = base.parent_path() / given;
  const bool plain = std::none_of(given.begin(), given.end(),
                                  [](const std::filesystem::path& part) { return part == ".."; });
  if (!base.empty() && plain && std::filesystem::exists(above, ec) &&
      inside_allowed(base.parent_path(), above)) {
    notes.push_back(fmt::format("{}: field {}: {} is not beside the spec; using {}.", f.source(),
                                f.join("KernelFile"), name, above.string()));
    root = base.parent_path();
    return above;
  }
  return confined_path(root, base, given, what);  // a missing file is reported where it is read
}

// CompilerOptions that make NVRTC read a file (-I, -include) name it inside the spec's folder;
// those that write files, or read ones ktune does not manage (precompiled headers, time traces),
// are refused: they read or write outside what the user meant to share.
void check_compiler_options(const std::vector<std::string>& options, const Fields& f,
                            const std::filesystem::path& base, const std::filesystem::path& root) {
  static const char* const kFileOptions[] = {"--include-path", "-include", "--pre-include", "-I"};
  static const char* const kRefused[] = {"--pch",
                                         "-pch",
                                         "--create-pch",
                                         "--use-pch",
                                         "--pch-dir",
                                         "--fdevice-time-trace",
                                         "-fdevice-time-trace",
                                         "--time",
                                         "-time"};
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    const std::string field = fmt::format("CompilerOptions[{}]", i);
    for (const char* r : kRefused)
      if (o.rfind(r, 0) == 0)
        f.fail(field, fmt::format("'{}' makes the compiler read or write files of its own; ktune "
                                  "manages its compile cache itself, so remove it",
                                  o));
    for (const char* opt : kFileOptions) {
      const std::string_view name(opt);
      if (o.rfind(name, 0) != 0) continue;
      std::string value = o.substr(name.size());
      if (!value.empty() && value.front() == '=') value.erase(0, 1);
      if (name != "-I" && !value.empty() && o[name.size()] != '=')
        continue;  // another option that starts alike
      if (value.empty()) {
        if (i + 1 == options.size()) f.fail(field, fmt::format("'{}' needs a path after it", o));
        value = options[++i];
      }
      confined_path(root, base, value, fmt::format("{}: field {}", f.source(), f.join(field)));
      break;
    }
  }
}

KernelSpec parse_kernel(const json& j, const Fields& f, const std::filesystem::path& base,
                        std::vector<std::string>& notes) {
  KernelSpec k;
  k.language = f.string(j, "Language", "CUDA");
  if (k.language != "CUDA" && k.language != "OpenCL")
    f.fail("Language", fmt::format("'{}' is not CUDA or OpenCL", k.language));
  if (const json* opts = f.optional(j, "CompilerOptions")) {
    if (!opts->is_array()) f.fail("CompilerOptions", "must be a list of strings");
    for (std::size_t i = 0; i < opts->size(); ++i) {
      if (!(*opts)[i].is_string())
        f.fail(fmt::format("CompilerOptions[{}]", i), "must be a string");
      k.compiler_options.push_back((*opts)[i].get<std::string>());
    }
  }
  k.kernel_name = f.string(j, "KernelName", std::nullopt);
  k.kernel_file =
      find_kernel_file(f.string(j, "KernelFile", std::nullopt), base, f, notes, k.files_root);
  check_compiler_options(k.compiler_options, f, base, k.files_root);
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
    // One size may stand alone, as BAT's specs write it: 20000000 is [20000000].
    const json sizes = ps->is_array() ? *ps : json::array({*ps});
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const json& e = sizes[i];
      const std::string field = fmt::format("ProblemSize[{}]", i);
      if (!e.is_string() && !e.is_number_integer())
        f.fail(field, "must be an integer or an expression string");
      k.problem_size.push_back(
          f.parse_expression(e.is_string() ? e.get<std::string>() : e.dump(), field));
    }
  }
  const bool has_grid_div =
      std::any_of(k.grid_div.begin(), k.grid_div.end(), [](const auto& v) { return !v.empty(); });
  if (!k.global_size && k.problem_size.empty())
    f.fail("ProblemSize", "is missing, and no GlobalSize is given; give one of them");
  k.grid_source = (has_grid_div || !k.global_size) && !k.problem_size.empty()
                      ? GridSource::grid_div
                      : GridSource::global_size;
  k.shared_memory_bytes = f.expression(j, "SharedMemory", "0");
  if (const json* args = f.optional(j, "Arguments")) {
    if (!args->is_array()) f.fail("Arguments", "must be a list of argument objects");
    for (std::size_t i = 0; i < args->size(); ++i)
      k.arguments.push_back(
          parse_argument((*args)[i], f.child(fmt::format("Arguments[{}]", i)), base, k.files_root));
    for (std::size_t i = 0; i < k.arguments.size(); ++i)
      for (std::size_t m = 0; m < i; ++m)
        if (k.arguments[m].name == k.arguments[i].name && !k.arguments[i].name.empty())
          f.fail(fmt::format("Arguments[{}].Name", i),
                 fmt::format("'{}' is already an argument; names must be unique",
                             k.arguments[i].name));
  }
  return k;
}

KtuneExtension parse_extension(const json& j, const Fields& f, const std::string& default_op,
                               const std::filesystem::path& base,
                               const std::filesystem::path& root) {
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
      ref.kernel_file =
          confined_path(root, base, rf.string(*r, "kernel_file", std::nullopt),
                        fmt::format("{}: field {}", rf.source(), rf.join("kernel_file")));
    }
    if (ref.configuration.empty() == !ref.is_kernel())
      rf.fail("", "needs exactly one of \"configuration\" or \"kernel_name\" + \"kernel_file\"");
    x.reference = std::move(ref);
  }
  if (const json* t = f.optional(j, "tolerance")) {
    const Fields tf = f.child("tolerance");
    if (!t->is_object()) tf.fail("", "must be an object {\"rtol\": ..., \"atol\": ...}");
    Tolerance tol;
    tol.rtol = tf.number(*t, "rtol", tol.rtol);
    tol.atol = tf.number(*t, "atol", tol.atol);
    if (tol.rtol < 0 || tol.atol < 0) tf.fail("", "tolerances must be >= 0");
    x.tolerance = tol;
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
        v.bucket = parse_bucket_rule(sf.string(e, "bucket", "exact"), v.name);
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

// The cache key's dtype when the spec names none: the first output argument's element type (else
// the first argument's), in the short form ktune's own specs use ("f32", "f16", "i32").
std::string default_dtype(const std::vector<Argument>& args) {
  const Argument* pick = nullptr;
  for (const auto& a : args)
    if (a.output) {
      pick = &a;
      break;
    }
  if (!pick && !args.empty()) pick = &args.front();
  if (!pick) return "none";
  const std::string& t = pick->type;
  // T1's float types may carry a vector width (float4, half2, float16 as OpenCL spells a vector
  // of 16): the element type is what counts.
  const std::string base = t.substr(0, t.find_last_not_of("0123456789") + 1);
  if (base != t && (base == "float" || base == "half" || base == "double"))
    return to_string(parse_dtype(base));
  return canonical_dtype_key(t);
}

}  // namespace

namespace {
constexpr EnumName<GridSource> kGridSourceNames[] = {
    {GridSource::grid_div, "griddiv"},
    {GridSource::global_size, "global-size"},
};
}  // namespace

const char* to_string(MemoryType m) {
  return name_of(kMemoryTypes, m);
}

const char* to_string(AccessType a) {
  return name_of(kAccessTypes, a);
}

const char* to_string(FillType f) {
  return name_of(kFillTypes, f);
}

bool LaunchGeometry::launchable() const {
  constexpr std::int64_t kMaxGridDim = 0x7fffffff, kMaxBlockDim = 1024;
  for (int d = 0; d < 3; ++d)
    if (grid[d] < 1 || block[d] < 1 || grid[d] > kMaxGridDim || block[d] > kMaxBlockDim)
      return false;
  return true;
}

const char* to_string(GridSource g) {
  return name_of(kGridSourceNames, g);
}

std::optional<GridSource> grid_source_from_string(std::string_view s) {
  return value_of(kGridSourceNames, s);
}

store::DimRule parse_bucket_rule(std::string_view text, const std::string& name) {
  store::DimRule p;
  p.name = name;
  if (text == "exact") return p;
  if (text == "pow2") {
    p.kind = store::BucketKind::pow2;
    return p;
  }
  if (text.substr(0, 9) == "multiple:") {
    const std::string n(text.substr(9));
    char* end = nullptr;
    const long long step = std::strtoll(n.c_str(), &end, 10);
    if (!n.empty() && !*end && step > 0) {
      p.kind = store::BucketKind::multiple;
      p.multiple = step;
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
    // nlohmann counts the byte after the error: the line and column of the byte before it.
    const std::size_t at = e.byte > 0 ? std::min<std::size_t>(e.byte - 1, text.size()) : 0;
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    const std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
    throw Error(
        fmt::format("{}: not valid JSON at line {}, column {} (byte {}); fix the syntax "
                    "there.",
                    path.string(), line, column, e.byte));
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

  if (const json* bc = top.optional(j, "BenchmarkConfig")) {
    if (!bc->is_object())
      top.fail("BenchmarkConfig", "must be an object of NAME: value, e.g. {\"PRECISION\": 32}");
    const Fields bf = top.child("BenchmarkConfig");
    for (const auto& [name, v] : bc->items()) {
      // The name becomes a -DNAME=VALUE option, as a parameter's does.
      if (!is_identifier(name))
        bf.fail(name,
                "is not a valid identifier (letters, digits and _, not starting with a "
                "digit); the runner defines each entry for the compiler");
      if (!v.is_number() && !v.is_boolean() && !v.is_string())
        bf.fail(name,
                "must be a number, a boolean or a string, since the runner passes it to "
                "the compiler as -DNAME=VALUE");
      s.benchmark_config.emplace_back(name, v.get<Value>());
    }
  }

  const json& cs = top.object(j, "ConfigurationSpace");
  const Fields csf = top.child("ConfigurationSpace");
  const json* params = csf.optional(cs, "TuningParameters");
  if (!params || !params->is_array() || params->empty())
    csf.fail("TuningParameters", "must be a non-empty list of parameters");
  for (std::size_t i = 0; i < params->size(); ++i) {
    s.parameters.push_back(
        parse_parameter((*params)[i], csf.child(fmt::format("TuningParameters[{}]", i)), s.notes));
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
  s.kernel = parse_kernel(ks, top.child("KernelSpecification"), base_dir, s.notes);
  if (s.name.empty()) s.name = top.child("KernelSpecification").string(ks, "BenchmarkName", "");
  if (s.name.empty()) s.name = s.kernel.kernel_name;

  if (const json* x = top.optional(j, "ktune")) {
    if (!x->is_object()) top.fail("ktune", "must be an object");
    s.ktune = parse_extension(*x, top.child("ktune"), s.name, base_dir, s.kernel.files_root);
  } else {
    s.ktune.op = s.name;
  }
  if (s.ktune.op.empty()) s.ktune.op = s.name;
  s.ktune.dtype = s.ktune.dtype.empty() ? default_dtype(s.kernel.arguments)
                                        : canonical_dtype_key(s.ktune.dtype);

  // Every name an expression reads must be a parameter, ProblemSize or a shape variable.
  std::vector<std::string> known = {"ProblemSize"};
  for (const auto& p : s.parameters) known.push_back(p.name);
  for (const auto& v : s.ktune.shape) known.push_back(v.name);
  for (const auto& [name, v] : s.benchmark_config) known.push_back(name);
  // The conditions decide the space, so they are always checked; the launch and argument
  // expressions only matter to a run, so for a spec ktune does not run (OpenCL) an unknown name
  // there is a note.
  bool strict = true;
  auto check_names = [&](const Expression& e, const std::string& field) {
    for (const auto& n : e.names()) {
      if (std::find(known.begin(), known.end(), n) != known.end()) continue;
      const std::string what = fmt::format(
          "{}: field {}: expression \"{}\" reads '{}', which is not a parameter, ProblemSize or a "
          "ktune.shape variable; fix the name or declare it.",
          s.source, field, e.text(), n);
      if (strict) throw Error(what);
      s.notes.push_back(what);
    }
  };
  for (std::size_t i = 0; i < s.constraints.size(); ++i)
    check_names(s.constraints[i].expression,
                fmt::format("ConfigurationSpace.Conditions[{}].Expression", i));
  strict = s.runnable();
  check_names(s.kernel.local_size.x, "KernelSpecification.LocalSize.X");
  check_names(s.kernel.local_size.y, "KernelSpecification.LocalSize.Y");
  check_names(s.kernel.local_size.z, "KernelSpecification.LocalSize.Z");
  for (int d = 0; d < 3; ++d)
    for (std::size_t i = 0; i < s.kernel.grid_div[d].size(); ++i)
      check_names(s.kernel.grid_div[d][i],
                  fmt::format("KernelSpecification.GridDiv{}[{}]", "XYZ"[d], i));
  check_names(s.kernel.shared_memory_bytes, "KernelSpecification.SharedMemory");
  if (s.kernel.global_size) {
    check_names(s.kernel.global_size->x, "KernelSpecification.GlobalSize.X");
    check_names(s.kernel.global_size->y, "KernelSpecification.GlobalSize.Y");
    check_names(s.kernel.global_size->z, "KernelSpecification.GlobalSize.Z");
  }
  for (std::size_t i = 0; i < s.kernel.arguments.size(); ++i)
    check_names(s.kernel.arguments[i].size,
                fmt::format("KernelSpecification.Arguments[{}].Size", i));
  known.push_back("i");  // a generated argument's element index
  for (std::size_t i = 0; i < s.kernel.arguments.size(); ++i)
    if (const auto& g = s.kernel.arguments[i].generator)
      check_names(*g, fmt::format("KernelSpecification.Arguments[{}].DataSource", i));
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
  for (const auto& [name, v] : benchmark_config)
    if (!scope.find(name)) scope.set(name, v);
  return scope;
}

MapScope ProblemSpec::size_scope(const Scope& constants) const {
  MapScope scope(&constants);
  for (const auto& p : parameters) scope.set(p.name, Value(p.values));
  return scope;
}

LaunchGeometry ProblemSpec::launch_geometry(const Scope& config) const {
  return launch_geometry(config, kernel.grid_source);
}

LaunchGeometry ProblemSpec::launch_geometry(const Scope& config, GridSource source) const {
  auto eval = [&](const Expression& e, std::string_view field) -> std::int64_t {
    try {
      return e.evaluate(config).as_int();
    } catch (const ExpressionError& err) {
      throw err.with_context(this->source, fmt::format("KernelSpecification.{}", field));
    } catch (const Error& err) {
      throw Error(
          fmt::format("{}: field KernelSpecification.{}: {}", this->source, field, err.what()));
    }
  };
  LaunchGeometry g;
  g.block = {eval(kernel.local_size.x, "LocalSize.X"), eval(kernel.local_size.y, "LocalSize.Y"),
             eval(kernel.local_size.z, "LocalSize.Z")};
  if (source == GridSource::global_size && !kernel.global_size)
    throw Error(
        fmt::format("{}: the grid was asked from KernelSpecification.GlobalSize, which the "
                    "spec does not give; use --grid griddiv.",
                    this->source));
  if (source == GridSource::global_size) {
    g.grid = {eval(kernel.global_size->x, "GlobalSize.X"),
              eval(kernel.global_size->y, "GlobalSize.Y"),
              eval(kernel.global_size->z, "GlobalSize.Z")};
    if (kernel.global_size_type == "OpenCL")  // counts threads: round up to whole blocks
      for (int d = 0; d < 3; ++d)
        if (g.block[d] > 0) g.grid[d] = (g.grid[d] + g.block[d] - 1) / g.block[d];
  } else {
    const Value* ps = config.find("ProblemSize");
    static const char* const kBlockNames[] = {"block_size_x", "block_size_y", "block_size_z"};
    for (int d = 0; d < 3; ++d) {
      std::int64_t div = 1;
      if (kernel.grid_div[d].empty()) {
        // No GridDiv for this dimension: the block size parameter divides, as in Kernel Tuner.
        if (const Value* b = config.find(kBlockNames[d]); b && b->is_number()) div = b->as_int();
      }
      for (std::size_t i = 0; i < kernel.grid_div[d].size(); ++i) {
        const std::string field = fmt::format("GridDiv{}[{}]", "XYZ"[d], i);
        const std::int64_t f = eval(kernel.grid_div[d][i], field);
        if (f <= 0)
          throw Error(
              fmt::format("{}: field KernelSpecification.{}: \"{}\" is {} for this "
                          "configuration; a grid divisor must be positive.",
                          this->source, field, kernel.grid_div[d][i].text(), f));
        div = div > INT64_MAX / f ? INT64_MAX : div * f;
      }
      const std::int64_t size =
          ps && ps->kind() == Value::Kind::list && ps->as_list().size() > std::size_t(d)
              ? ps->as_list()[d].as_int()
              : 1;
      g.grid[d] = div > 0 ? size / div + (size % div != 0 ? 1 : 0) : 0;
    }
  }
  g.shared_memory_bytes = eval(kernel.shared_memory_bytes, "SharedMemory");
  return g;
}

std::optional<std::string> ProblemSpec::grid_disagreement(const Scope& config) const {
  const bool has_grid_div = std::any_of(kernel.grid_div.begin(), kernel.grid_div.end(),
                                        [](const auto& v) { return !v.empty(); });
  if (!kernel.global_size || !has_grid_div || kernel.problem_size.empty()) return std::nullopt;
  const LaunchGeometry a = launch_geometry(config, GridSource::grid_div);
  const LaunchGeometry b = launch_geometry(config, GridSource::global_size);
  if (a.grid == b.grid) return std::nullopt;
  const GridSource used = kernel.grid_source;
  const LaunchGeometry& u = used == GridSource::grid_div ? a : b;
  const LaunchGeometry& o = used == GridSource::grid_div ? b : a;
  return fmt::format(
      "{}: GridDiv over ProblemSize and GlobalSize disagree (grid {}x{}x{} against {}x{}x{} for "
      "the default configuration); ktune uses {}, --grid {} picks the other.",
      source, u.grid[0], u.grid[1], u.grid[2], o.grid[0], o.grid[1], o.grid[2],
      used == GridSource::grid_div ? "GridDiv, as Kernel Tuner does" : "GlobalSize",
      to_string(used == GridSource::grid_div ? GridSource::global_size : GridSource::grid_div));
}

}  // namespace ktune::tune
