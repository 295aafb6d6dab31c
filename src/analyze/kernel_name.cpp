#include "ktune/analyze/kernel_name.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::analyze {
namespace {

// Template arguments nested deeper than this are read as opaque leaves: real kernels nest a dozen
// levels, and a hostile name must not exhaust the stack.
constexpr int kMaxDepth = 24;

bool opens(char c) {
  return c == '(' || c == '<' || c == '[' || c == '{';
}
bool closes(char c) {
  return c == ')' || c == '>' || c == ']' || c == '}';
}

// Index of the bracket opening the one that closes at `close`, scanning back; npos if unbalanced.
std::size_t matching_open(std::string_view s, std::size_t close) {
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (closes(s[i])) ++depth;
    if (opens(s[i]) && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// The last position of `token` outside every bracket, or npos.
std::size_t last_top_level(std::string_view s, std::string_view token) {
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (closes(s[i])) ++depth;
    if (opens(s[i])) --depth;
    if (depth == 0 && s.substr(i, token.size()) == token) return i;
  }
  return std::string_view::npos;
}

bool balanced(std::string_view s) {
  int depth = 0;
  for (char c : s) {
    if (opens(c)) ++depth;
    if (closes(c) && --depth < 0) return false;
  }
  return depth == 0;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// `s` split at each `sep` outside brackets (", " between template arguments, "::" between scopes).
std::vector<std::string_view> split_top(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (opens(s[i])) ++depth;
    if (closes(s[i])) --depth;
    if (depth == 0 && s.substr(i, sep.size()) == sep) {
      out.push_back(trimmed(s.substr(from, i - from)));
      i += sep.size() - 1;
      from = i + 1;
    }
  }
  out.push_back(trimmed(s.substr(from)));
  return out;
}

// A name component split into its name, template arguments and parameters:
// "foo<int, 2>(float*) const" -> {"foo", "int, 2", "float*"}.
struct Component {
  std::string_view name, targs, params;
  bool has_params = false;
};

Component split_component(std::string_view c) {
  Component out;
  c = trimmed(c);
  for (std::string_view q : {" const", " volatile", " &&", " &"})
    if (ends_with(c, q)) c = trimmed(c.substr(0, c.size() - q.size()));
  // "operator()" is a name whose own "()" is not a parameter list.
  if (!c.empty() && c.back() == ')' && !ends_with(c, "operator()")) {
    const std::size_t open = matching_open(c, c.size() - 1);
    if (open != std::string_view::npos && open > 0) {
      out.params = c.substr(open + 1, c.size() - open - 2);
      out.has_params = true;
      c = trimmed(c.substr(0, open));
    }
  }
  if (!c.empty() && c.back() == '>') {
    const std::size_t open = matching_open(c, c.size() - 1);
    if (open != std::string_view::npos && open > 0) {
      out.targs = c.substr(open + 1, c.size() - open - 2);
      c = trimmed(c.substr(0, open));
    }
  }
  out.name = c;
  return out;
}

// A kernel's signature: "RET scope::name<targs>(params) const". Nullopt for what is not one.
struct Signature {
  std::string_view qualified, targs, params;
};

std::optional<Signature> parse_signature(std::string_view demangled) {
  std::string_view s = trimmed(demangled);
  for (std::string_view q : {" const", " volatile", " &&", " &"})
    if (s.size() > q.size() && ends_with(s, q)) s.remove_suffix(q.size());
  if (s.empty() || s.back() != ')') return std::nullopt;
  Signature sig;
  std::size_t open = matching_open(s, s.size() - 1);
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  sig.params = s.substr(open + 1, s.size() - open - 2);
  s = trimmed(s.substr(0, open));
  if (!s.empty() && s.back() == '>') {
    open = matching_open(s, s.size() - 1);
    if (open == std::string_view::npos || open == 0) return std::nullopt;
    sig.targs = s.substr(open + 1, s.size() - open - 2);
    s = s.substr(0, open);
  }
  if (!balanced(s) || !balanced(sig.targs) || !balanced(sig.params)) return std::nullopt;
  if (const std::size_t space = last_top_level(s, " "); space != std::string_view::npos)
    s = s.substr(space + 1);  // the return type
  sig.qualified = trimmed(s);
  if (sig.qualified.empty()) return std::nullopt;
  return sig;
}

// Scope components of a qualified name, without "(anonymous namespace)" and empty ones.
std::vector<std::string_view> scopes(std::string_view qualified) {
  std::vector<std::string_view> out;
  for (std::string_view c : split_top(qualified, "::"))
    if (!c.empty() && c != "(anonymous namespace)") out.push_back(c);
  return out;
}

std::string_view last_name(std::string_view qualified) {
  const auto parts = scopes(qualified);
  return parts.empty() ? qualified : split_component(parts.back()).name;
}

// A closure type's scope component: "{lambda(float)#1}", "{unnamed type#2}".
bool is_closure(std::string_view c) {
  return starts_with(c, "{lambda") || starts_with(c, "{unnamed");
}

// Number types of C++, CUDA and the GPU libraries. Chosen as a kernel's distinguishing argument
// only when nothing else is there: the dtype is secondary to what the kernel computes.
constexpr std::string_view kScalarTypes[] = {
    "bool",
    "char",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned int",
    "unsigned",
    "long",
    "unsigned long",
    "long long",
    "unsigned long long",
    "float",
    "double",
    "void",
    "__half",
    "__half2",
    "half",
    "__nv_bfloat16",
    "__nv_bfloat162",
    "__nv_fp8_e4m3",
    "__nv_fp8_e5m2",
    "Half",
    "BFloat16",
    "Float8_e4m3fn",
    "Float8_e5m2",
    "Float8_e4m3fnuz",
    "Float8_e5m2fnuz",
    "complex",
    "half_t",
    "bfloat16_t",
    "tfloat32_t",
    "float_e4m3_t",
    "float_e5m2_t",
    "int8_t",
    "uint8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint32_t",
    "uint64_t",
    "size_t",
    "__int128",
    "unsigned __int128",
};

bool is_scalar(std::string_view name) {
  return std::find(std::begin(kScalarTypes), std::end(kScalarTypes), name) !=
         std::end(kScalarTypes);
}

// Drops cv-qualifiers, elaborated-type keywords, pointers and references around a type.
std::string_view undecorated(std::string_view s) {
  s = trimmed(s);
  for (bool again = true; again && !s.empty();) {
    again = false;
    for (std::string_view p : {"const ", "volatile ", "struct ", "class ", "enum ", "typename "})
      if (starts_with(s, p)) s = trimmed(s.substr(p.size())), again = true;
    for (std::string_view q : {" const", " volatile", "*", "&", " __restrict__", " __restrict"})
      if (ends_with(s, q)) s = trimmed(s.substr(0, s.size() - q.size())), again = true;
  }
  return s;
}

bool is_literal(std::string_view s) {
  if (s.empty()) return false;
  if (s == "true" || s == "false" || s == "nullptr") return true;
  if (s[0] >= '0' && s[0] <= '9') return true;
  if (s[0] == '-' && s.size() > 1 && s[1] >= '0' && s[1] <= '9') return true;
  // A cast constant, "(c10::ScalarType)15" or "(Layout)1".
  if (s[0] == '(') {
    const std::size_t close = s.find(')');
    return close != std::string_view::npos && close + 1 < s.size() &&
           ((s[close + 1] >= '0' && s[close + 1] <= '9') || s[close + 1] == '-');
  }
  return false;
}

// How much a template argument says about what a kernel does; the highest wins.
enum class Rank { scalar = 0, shape = 1, leaf = 2, composite = 3, callable = 4 };

// One template argument reduced to its readable core.
struct Reduced {
  Rank rank = Rank::scalar;
  bool literal = false;
  std::string core;
  // Integral shapes of two or more dimensions found inside (CUTLASS tiles, clusters).
  std::vector<std::pair<double, std::string>> shapes;  // volume, "128x256x64"
};

Reduced reduce(std::string_view arg, int depth);

// The argument of `targs` that says most (the first of the highest rank), or a scalar without core.
Reduced best_of(std::string_view targs, int depth, std::vector<Reduced>* all = nullptr) {
  Reduced best;
  if (trimmed(targs).empty()) return best;
  bool any = false;
  for (std::string_view a : split_top(targs, ",")) {
    Reduced r = reduce(a, depth + 1);
    // Among number types and constants, a type says more than a constant.
    if (!any || r.rank > best.rank || (r.rank == best.rank && best.literal && !r.literal)) {
      best = r;
      any = true;
    }
    if (all) all->push_back(std::move(r));
  }
  return best;
}

Reduced reduce(std::string_view arg, int depth) {
  Reduced out;
  arg = undecorated(arg);
  if (arg.empty()) return out;
  if (is_literal(arg)) {
    out.literal = true;
    out.core = std::string(arg);
    return out;
  }
  if (arg[0] == '&') {  // a function as a template argument: it is what the kernel calls
    out.rank = Rank::callable;
    out.core = std::string(last_name(arg.substr(1)));
    return out;
  }
  if (arg.find("(*)") != std::string_view::npos || arg.find("(&)") != std::string_view::npos)
    return out;  // a function type: says nothing a person would look for
  const auto parts = scopes(arg);
  if (parts.empty()) return out;
  if (depth > kMaxDepth) {
    out.rank = Rank::leaf;
    out.core = std::string(split_component(parts.back()).name);
    return out;
  }
  if (std::any_of(parts.begin(), parts.end(), is_closure)) {
    // A lambda is named by the function or class that defines it (skipping operator() of the
    // lambdas around it), with what that one's template arguments carry when they carry a class:
    // gpu_kernel_impl_nocast<MulFunctor>, uniform_kernel<CUDAGeneratorImpl>.
    out.rank = Rank::callable;
    out.core = "lambda";
    for (std::size_t i = parts.size(); i-- > 0;) {
      if (is_closure(parts[i]) || starts_with(parts[i], "operator")) continue;
      const Component c = split_component(parts[i]);
      const Reduced inner = best_of(c.targs, depth);
      if (inner.rank >= Rank::leaf) {
        out.core = std::string(c.name) + "<" + inner.core + ">";
        out.shapes = inner.shapes;
      } else {
        out.core = std::string(c.name);
      }
      break;
    }
    return out;
  }
  const Component last = split_component(parts.back());
  if (is_scalar(last.name) || last.name.find(' ') != std::string_view::npos) {
    out.core = std::string(last.name);
    return out;
  }
  if (trimmed(last.targs).empty()) {
    out.rank = Rank::leaf;
    out.core = std::string(last.name);
    return out;
  }
  std::vector<Reduced> args;
  const Reduced best = best_of(last.targs, depth, &args);
  for (const Reduced& r : args)
    out.shapes.insert(out.shapes.end(), r.shapes.begin(), r.shapes.end());
  // All integral constants (or shapes of them): a shape, "128x256x64" (cute::tuple<C<128>, ...>,
  // cutlass::gemm::GemmShape<128, 128, 32>).
  const bool shape = std::all_of(args.begin(), args.end(), [](const Reduced& r) {
    return (r.literal && r.core.find(')') == std::string::npos) || r.rank == Rank::shape;
  });
  if (shape) {
    out.rank = Rank::shape;
    double volume = 1;
    for (std::size_t i = 0; i < args.size(); ++i) {
      out.core += (i ? "x" : "") + args[i].core;
      volume *= std::max(1.0, std::atof(args[i].core.c_str()));
    }
    if (args.size() >= 2) out.shapes.push_back({volume, out.core});
    return out;
  }
  if (best.rank >= Rank::leaf) {
    out.rank = Rank::composite;
    out.core = best.core;
    return out;
  }
  out.rank = Rank::leaf;
  out.core = std::string(last.name);
  return out;
}

// What a kernel's template arguments and parameters show, in order, for telling apart two
// kernels whose middle forms agree: each argument's core, then what it carries inside.
void flatten(std::string_view arg, std::vector<std::string>& out, int depth) {
  arg = undecorated(arg);
  if (arg.empty() || depth > kMaxDepth) return;
  if (is_literal(arg) || arg[0] == '&') {
    out.emplace_back(arg[0] == '&' ? last_name(arg.substr(1)) : arg);
    return;
  }
  const auto parts = scopes(arg);
  if (parts.empty()) return;
  const auto named = [&](std::string_view part) {
    const Component c = split_component(part);
    out.emplace_back(c.name);
    if (!trimmed(c.targs).empty())
      for (std::string_view a : split_top(c.targs, ",")) flatten(a, out, depth + 1);
  };
  if (std::none_of(parts.begin(), parts.end(), is_closure)) {
    named(parts.back());
    return;
  }
  // A lambda: the function or class defining it, then each lambda's parameter types
  // ("{lambda(c10::BFloat16)#1}" -> "BFloat16").
  for (std::size_t i = parts.size(); i-- > 0;)
    if (!is_closure(parts[i]) && !starts_with(parts[i], "operator")) {
      named(parts[i]);
      break;
    }
  for (std::string_view part : parts) {
    if (!is_closure(part)) continue;
    const std::size_t open = part.find('('), close = part.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close <= open)
      continue;
    std::string params;
    for (std::string_view p : split_top(part.substr(open + 1, close - open - 1), ",")) {
      const Reduced r = reduce(p, depth + 1);
      if (!r.core.empty()) params += (params.empty() ? "" : ",") + r.core;
    }
    if (!params.empty()) out.push_back(params);
  }
}

std::string cut(std::string s) {
  if (s.size() > kMaxMiddleNameChars) s = s.substr(0, kMaxMiddleNameChars - 3) + "...";
  return s;
}

// The middle form's parts: base and the distinguishing detail ("" for none).
struct Middle {
  std::string base, detail;
  bool signature = false;
};

Middle middle_parts(std::string_view demangled) {
  Middle m;
  const auto sig = parse_signature(demangled);
  if (!sig) {
    m.base = std::string(demangled);
    return m;
  }
  m.signature = true;
  m.base = std::string(last_name(sig->qualified));
  if (m.base.empty()) m.base = std::string(sig->qualified);
  const Reduced best = best_of(sig->targs, 0);
  if (best.rank >= Rank::leaf || best.rank == Rank::shape) {
    m.detail = best.core;
    // The largest integral shape inside is a library kernel's tile: what sets its instances apart.
    const auto largest = std::max_element(best.shapes.begin(), best.shapes.end());
    if (largest != best.shapes.end() && largest->second != best.core)
      m.detail += " " + largest->second;
  } else if (!best.literal) {
    m.detail = best.core;  // only number types: the first one
  }
  return m;
}

std::string compose(const Middle& m, const std::string& extra = {}) {
  if (!m.signature) return cut(m.base + (extra.empty() ? "" : " [" + extra + "]"));
  std::string detail = m.detail;
  if (!extra.empty()) detail += (detail.empty() ? "" : ", ") + extra;
  return cut(detail.empty() ? m.base : m.base + "<" + detail + ">");
}

std::vector<std::string> distinguishing_tokens(std::string_view demangled) {
  std::vector<std::string> out;
  const auto sig = parse_signature(demangled);
  if (!sig) return out;
  if (!trimmed(sig->targs).empty())
    for (std::string_view a : split_top(sig->targs, ",")) flatten(a, out, 0);
  if (!trimmed(sig->params).empty())
    for (std::string_view p : split_top(sig->params, ",")) flatten(p, out, 0);
  return out;
}

}  // namespace

std::string base_name(std::string_view demangled) {
  const auto sig = parse_signature(demangled);
  if (!sig) return std::string(demangled);
  const std::string_view name = last_name(sig->qualified);
  return name.empty() ? std::string(demangled) : std::string(name);
}

std::string middle_name(std::string_view demangled) {
  return compose(middle_parts(demangled));
}

NameStyle parse_name_style(std::string_view text) {
  if (text == "middle") return NameStyle::middle;
  if (text == "base") return NameStyle::base;
  if (text == "full") return NameStyle::full;
  throw Error(
      fmt::format("--names '{}' is not a name style; use middle (the base name and what tells "
                  "its instances apart, the default), base (templates and arguments elided) or "
                  "full (the whole demangled name).",
                  text));
}

std::string shown_name(std::string_view demangled, NameStyle style) {
  switch (style) {
    case NameStyle::middle:
      return middle_name(demangled);
    case NameStyle::base:
      return base_name(demangled);
    case NameStyle::full:
      break;
  }
  return std::string(demangled);
}

NameTable::NameTable(const std::vector<std::string>& full_names, NameStyle style) : style_(style) {
  const std::set<std::string> names(full_names.begin(), full_names.end());
  if (style != NameStyle::middle) {
    for (const std::string& n : names) shown_.emplace(n, shown_name(n, style));
    return;
  }
  std::map<std::string, std::vector<std::string>> by_middle;  // full names in sorted order
  std::map<std::string, Middle> parts;
  for (const std::string& n : names) {
    Middle m = middle_parts(n);
    by_middle[compose(m)].push_back(n);
    parts.emplace(n, std::move(m));
  }
  for (auto& [middle, group] : by_middle) {
    if (group.size() == 1) {
      shown_.emplace(group.front(), middle);
      continue;
    }
    // The first position at which the reduced arguments of the group differ.
    std::vector<std::vector<std::string>> tokens;
    for (const std::string& n : group) tokens.push_back(distinguishing_tokens(n));
    std::size_t longest = 0;
    for (const auto& t : tokens) longest = std::max(longest, t.size());
    // The first position where they differ, preferring one where a type differs to one where
    // only constants do (FillFunctor<Half> against FillFunctor<float> says more than the
    // vector width 8 against 4).
    const auto differs = [&](std::size_t at) {
      for (const auto& t : tokens)
        if (at >= t.size() || at >= tokens.front().size() || t[at] != tokens.front()[at])
          return true;
      return false;
    };
    const auto only_constants = [&](std::size_t at) {
      return std::all_of(tokens.begin(), tokens.end(),
                         [&](const auto& t) { return at >= t.size() || is_literal(t[at]); });
    };
    std::optional<std::size_t> first, first_typed;
    for (std::size_t i = 0; i < longest && !first_typed; ++i)
      if (differs(i)) {
        if (!first) first = i;
        if (!only_constants(i)) first_typed = i;
      }
    const std::size_t at = first_typed ? *first_typed : first ? *first : longest;
    for (std::size_t i = 0; i < group.size(); ++i)
      shown_.emplace(group[i],
                     compose(parts[group[i]], at < tokens[i].size() ? tokens[i][at] : ""));
  }
  // Whatever still reads the same (identical reduced arguments, or names cut short) is numbered.
  std::map<std::string, std::vector<std::string>> by_shown;
  for (const auto& [full, shown] : shown_) by_shown[shown].push_back(full);
  for (const auto& [shown, group] : by_shown)
    if (group.size() > 1)
      for (std::size_t i = 0; i < group.size(); ++i)
        shown_[group[i]] = fmt::format("{} #{}", shown, i + 1);
}

std::string NameTable::operator()(std::string_view full) const {
  const auto it = shown_.find(full);
  return it != shown_.end() ? it->second : shown_name(full, style_);
}

}  // namespace ktune::analyze
