#include "ktune/spec/expression.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ktune::tune {

// ---------------------------------------------------------------------------------------- Value

const char* Value::kind_name(Kind k) {
  switch (k) {
    case Kind::integer:
      return "int";
    case Kind::real:
      return "float";
    case Kind::boolean:
      return "bool";
    case Kind::string:
      return "str";
    case Kind::list:
      return "list";
  }
  return "?";
}

std::int64_t Value::as_int() const {
  switch (kind()) {
    case Kind::integer:
      return std::get<std::int64_t>(v_);
    case Kind::boolean:
      return std::get<bool>(v_) ? 1 : 0;
    case Kind::real: {
      const double d = std::get<double>(v_);
      if (std::floor(d) == d && std::abs(d) < 9.0e18) return static_cast<std::int64_t>(d);
      break;
    }
    default:
      break;
  }
  throw Error(fmt::format("expected an integer, got {} {}", kind_name(kind()), repr()));
}

double Value::as_double() const {
  switch (kind()) {
    case Kind::integer:
      return static_cast<double>(std::get<std::int64_t>(v_));
    case Kind::real:
      return std::get<double>(v_);
    case Kind::boolean:
      return std::get<bool>(v_) ? 1.0 : 0.0;
    default:
      break;
  }
  throw Error(fmt::format("expected a number, got {} {}", kind_name(kind()), repr()));
}

const std::string& Value::as_string() const {
  if (kind() != Kind::string)
    throw Error(fmt::format("expected a string, got {} {}", kind_name(kind()), repr()));
  return std::get<std::string>(v_);
}

const Value::List& Value::as_list() const {
  if (kind() != Kind::list)
    throw Error(fmt::format("expected a list, got {} {}", kind_name(kind()), repr()));
  return *std::get<std::shared_ptr<const List>>(v_);
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::integer:
      return std::get<std::int64_t>(v_) != 0;
    case Kind::real:
      return std::get<double>(v_) != 0.0;
    case Kind::boolean:
      return std::get<bool>(v_);
    case Kind::string:
      return !std::get<std::string>(v_).empty();
    case Kind::list:
      return !as_list().empty();
  }
  return false;
}

std::string Value::repr() const {
  std::string out;
  append_repr(out, std::string::npos);
  return out;
}

std::string Value::shown() const {
  constexpr std::size_t kShown = 60;
  std::string out;
  append_repr(out, kShown);
  if (out.size() > kShown) out = out.substr(0, kShown) + "...";
  return out;
}

void Value::append_repr(std::string& out, std::size_t limit) const {
  switch (kind()) {
    case Kind::integer:
      out += std::to_string(std::get<std::int64_t>(v_));
      return;
    case Kind::real: {
      const double d = std::get<double>(v_);
      std::string s = fmt::format("{}", d);
      if (std::isfinite(d) && s.find_first_of(".e") == std::string::npos) s += ".0";
      out += s;
      return;
    }
    case Kind::boolean:
      out += std::get<bool>(v_) ? "True" : "False";
      return;
    case Kind::string: {
      const std::string& s = std::get<std::string>(v_);
      out += '\'';
      out.append(s, 0, limit == std::string::npos ? s.size() : std::min(s.size(), limit + 1));
      if (out.size() <= limit || limit == std::string::npos) out += '\'';
      return;
    }
    case Kind::list: {
      out += '[';
      const auto& l = as_list();
      for (std::size_t i = 0; i < l.size() && out.size() <= limit; ++i) {
        if (i) out += ", ";
        l[i].append_repr(out, limit);
      }
      out += ']';
      return;
    }
  }
  out += '?';
}

namespace {
bool numeric_like(const Value& v) {
  return v.is_number() || v.kind() == Value::Kind::boolean;
}
int rank_of(const Value& v) {
  if (numeric_like(v)) return 0;
  return v.kind() == Value::Kind::string ? 1 : 2;
}
}  // namespace

bool operator==(const Value& a, const Value& b) {
  if (numeric_like(a) && numeric_like(b)) {
    if (a.kind() != Value::Kind::real && b.kind() != Value::Kind::real)
      return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  if (a.kind() == Value::Kind::string) return a.as_string() == b.as_string();
  return a.as_list() == b.as_list();
}

bool operator<(const Value& a, const Value& b) {
  const int ra = rank_of(a), rb = rank_of(b);
  if (ra != rb) return ra < rb;
  if (ra == 0) {
    if (a.kind() != Value::Kind::real && b.kind() != Value::Kind::real)
      return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (ra == 1) return a.as_string() < b.as_string();
  return std::lexicographical_compare(a.as_list().begin(), a.as_list().end(), b.as_list().begin(),
                                      b.as_list().end());
}

void to_json(nlohmann::json& j, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::integer:
      j = v.as_int();
      break;
    case Value::Kind::real:
      j = v.as_double();
      break;
    case Value::Kind::boolean:
      j = v.truthy();
      break;
    case Value::Kind::string:
      j = v.as_string();
      break;
    case Value::Kind::list: {
      j = nlohmann::json::array();
      for (const auto& e : v.as_list()) j.push_back(e);
      break;
    }
  }
}

namespace {
// JSON arrays nest without limit, and reading them recurses; a hostile file must not overflow the
// stack.
Value value_from_json(const nlohmann::json& j, std::size_t depth) {
  if (j.is_boolean()) return Value(j.get<bool>());
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t{INT64_MAX})
      throw Error(fmt::format("the JSON integer {} does not fit in 64 bits", j.dump()));
    return Value(j.get<std::int64_t>());
  }
  if (j.is_number_float()) return Value(j.get<double>());
  if (j.is_string()) return Value(j.get<std::string>());
  if (j.is_array()) {
    if (depth >= kMaxExpressionDepth)
      throw Error(
          fmt::format("a JSON value with lists nested more than {} deep cannot be read; "
                      "flatten it",
                      kMaxExpressionDepth));
    Value::List l;
    l.reserve(j.size());
    for (const auto& e : j) l.push_back(value_from_json(e, depth + 1));
    return Value(std::move(l));
  }
  throw Error(fmt::format("expected a number, bool, string or list, got JSON {}", j.type_name()));
}
}  // namespace

void from_json(const nlohmann::json& j, Value& v) {
  v = value_from_json(j, 0);
}

// ------------------------------------------------------------------------------ ExpressionError

namespace {

// The expression as a message quotes it: whole when short, else the kMaxQuotedExpression
// characters around `position`, with "..." where it was cut.
std::string quoted_excerpt(std::string_view text, std::size_t position) {
  if (text.size() <= kMaxQuotedExpression) return std::string(text);
  const std::size_t half = kMaxQuotedExpression / 2;
  const std::size_t begin =
      position > half ? std::min(position - half, text.size() - kMaxQuotedExpression) : 0;
  std::string out = begin > 0 ? "..." : "";
  out += text.substr(begin, kMaxQuotedExpression);
  if (begin + kMaxQuotedExpression < text.size()) out += "...";
  return out;
}

}  // namespace

ExpressionError::ExpressionError(std::string text, std::size_t position, std::string problem)
    : Error(fmt::format("in expression \"{}\" at position {}: {}", quoted_excerpt(text, position),
                        position, problem)),
      text_(std::move(text)),
      position_(position),
      problem_(std::move(problem)) {}

Error ExpressionError::with_context(std::string_view file, std::string_view field) const {
  return Error(fmt::format("{}: field {}: {}", file, field, what()));
}

const Value* MapScope::find(std::string_view name) const {
  if (auto it = values_.find(name); it != values_.end()) return &it->second;
  return parent_ ? parent_->find(name) : nullptr;
}

// ------------------------------------------------------------------------------------ the tree

namespace detail {

enum class Op {
  constant,
  name,
  list,
  index,
  call,
  comprehension,
  neg,
  pos,
  invert,
  logical_not,
  chain,  // one precedence level of left-associative operators: kids[0] ops[0] kids[1] ...
  pow,
  logical_and,  // n-ary, short-circuit
  logical_or,
  compare,
  if_else,
  // The operators a chain applies.
  add,
  sub,
  mul,
  div,
  floor_div,
  mod,
  bit_and,
  bit_or,
  bit_xor,
  shl,
  shr
};

enum class Cmp { lt, le, gt, ge, eq, ne, in, not_in };

// Built-in functions, resolved when parsing so evaluation does not compare names.
enum class Fn {
  min,
  max,
  abs,
  to_int,
  to_float,
  to_bool,
  len,
  round,
  ceil,
  floor,
  range,
  list,
  sum,
  sorted,
  any,
  all
};

struct Node {
  Op op;
  std::size_t pos;   // offset of the token that names this node, for error messages
  Value value;       // constant
  std::string name;  // name, call
  Fn fn = Fn::min;   // call
  std::vector<std::shared_ptr<const Node>> kids;
  std::vector<Op> ops;              // chain: ops[i] joins the value so far and kids[i + 1]
  std::vector<std::size_t> op_pos;  // chain: where ops[i] is written
  std::vector<Cmp> cmps;            // compare: kids.size() == cmps.size() + 1
  // comprehension: kids[0] is the element; kids[i + 1] the iterable of the clause
  // `for vars[i] in ...`, or the condition of an `if` clause where vars[i] is empty.
  std::vector<std::string> vars;
  std::uint64_t steps_per_iteration = 1;  // comprehension: its size, charged per iteration
};

}  // namespace detail

namespace {

using detail::Cmp;
using detail::Fn;
using detail::Node;
using detail::Op;
using NodePtr = std::shared_ptr<const Node>;

struct Builtin {
  const char* name;
  Fn fn;
};
constexpr Builtin kBuiltins[] = {
    {"min", Fn::min},        {"max", Fn::max},      {"abs", Fn::abs},       {"int", Fn::to_int},
    {"float", Fn::to_float}, {"bool", Fn::to_bool}, {"len", Fn::len},       {"round", Fn::round},
    {"ceil", Fn::ceil},      {"floor", Fn::floor},  {"range", Fn::range},   {"list", Fn::list},
    {"tuple", Fn::list},     {"sum", Fn::sum},      {"sorted", Fn::sorted}, {"any", Fn::any},
    {"all", Fn::all}};

const char* symbol_of(Op op) {
  switch (op) {
    case Op::add:
      return "+";
    case Op::sub:
      return "-";
    case Op::mul:
      return "*";
    case Op::div:
      return "/";
    case Op::floor_div:
      return "//";
    case Op::mod:
      return "%";
    case Op::pow:
      return "**";
    case Op::bit_and:
      return "&";
    case Op::bit_or:
      return "|";
    case Op::bit_xor:
      return "^";
    case Op::shl:
      return "<<";
    case Op::shr:
      return ">>";
    default:
      return "?";
  }
}

bool is_intlike(const Value& v) {
  return v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean;
}

// A comprehension variable on top of the enclosing scope.
class LocalScope final : public Scope {
 public:
  LocalScope(const Scope* parent, std::string_view name) : parent_(parent), name_(name) {}
  const Value* find(std::string_view name) const override {
    return name == name_ ? &value : parent_->find(name);
  }
  Value value;

 private:
  const Scope* parent_;
  std::string_view name_;
};

// ------------------------------------------------------------------------------- evaluation

// What one evaluation may still build and do. Parsing has one too, shared by everything it folds,
// so that many constant sub-expressions cannot add up to more than one evaluation could.
struct Budget {
  std::uint64_t elements_left = kMaxListElements;
  std::uint64_t steps_left = kMaxEvaluationSteps;
};

// One evaluation: the scope names are read from, and the budget it draws on.
class TreeWalker {
 public:
  TreeWalker(std::string_view text, const Scope& scope, Budget& budget)
      : text_(text), scope_(&scope), budget_(budget) {}

  Value eval(const Node& n) {
    try {
      return eval_unchecked(n);
    } catch (const ExpressionError&) {
      throw;
    } catch (const Error& e) {  // a Value accessor's type error: attach the position
      throw ExpressionError(std::string(text_), n.pos, e.what());
    }
  }

 private:
  [[noreturn]] void fail(std::size_t pos, std::string problem) const {
    throw ExpressionError(std::string(text_), pos, std::move(problem));
  }

  void charge_elements(std::size_t pos, std::uint64_t count, std::string_view what) {
    if (count > budget_.elements_left)
      fail(pos, fmt::format("{} would build more than {} list elements in one evaluation; make "
                            "the list smaller",
                            what, kMaxListElements));
    budget_.elements_left -= count;
  }
  void charge_steps(std::size_t pos, std::uint64_t count) {
    if (count > budget_.steps_left)
      fail(pos, fmt::format("the expression needs more than {} evaluation steps; make its ranges "
                            "or comprehensions smaller",
                            kMaxEvaluationSteps));
    budget_.steps_left -= count;
  }

  [[noreturn]] void overflow(std::size_t pos, Op op, std::int64_t x, std::int64_t y) const {
    fail(pos,
         fmt::format("integer overflow: {} {} {} does not fit in 64 bits", x, symbol_of(op), y));
  }

  // x ** y for y >= 0 by repeated squaring: at most 63 rounds, however large y is.
  std::int64_t int_pow(std::size_t pos, std::int64_t x, std::int64_t y) const {
    std::int64_t result = 1, base = x;
    for (std::int64_t e = y;;) {
      if ((e & 1) && __builtin_mul_overflow(result, base, &result)) overflow(pos, Op::pow, x, y);
      e >>= 1;
      if (e == 0) return result;
      // A remaining exponent bit multiplies the result by base squared or more, so an overflow
      // here is an overflow of the result (base 0, 1 and -1 never overflow).
      if (__builtin_mul_overflow(base, base, &base)) overflow(pos, Op::pow, x, y);
    }
  }

  // Inlined: integer operators are most of what constraints evaluate.
  [[gnu::always_inline]] Value int_arithmetic(Op op, std::size_t pos, std::int64_t x,
                                              std::int64_t y) const {
    std::int64_t r = 0;
    switch (op) {
      case Op::add:
        if (__builtin_add_overflow(x, y, &r)) overflow(pos, op, x, y);
        return Value(r);
      case Op::sub:
        if (__builtin_sub_overflow(x, y, &r)) overflow(pos, op, x, y);
        return Value(r);
      case Op::mul:
        if (__builtin_mul_overflow(x, y, &r)) overflow(pos, op, x, y);
        return Value(r);
      case Op::div:
        if (y == 0) fail(pos, "division by zero");
        return Value(static_cast<double>(x) / static_cast<double>(y));
      case Op::floor_div: {
        if (y == 0) fail(pos, "integer division by zero");
        if (y == -1) {  // INT64_MIN / -1 traps in C++
          if (x == std::numeric_limits<std::int64_t>::min()) overflow(pos, op, x, y);
          return Value(-x);
        }
        std::int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value(q);
      }
      case Op::mod: {
        if (y == 0) fail(pos, "integer modulo by zero");
        if (y == -1) return Value(std::int64_t{0});  // INT64_MIN % -1 traps in C++
        std::int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value(m);
      }
      case Op::pow:
        if (y < 0) {  // a float, as in Python
          if (x == 0) fail(pos, "0 cannot be raised to a negative power");
          return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        return Value(int_pow(pos, x, y));
      case Op::bit_and:
        return Value(x & y);
      case Op::bit_or:
        return Value(x | y);
      case Op::bit_xor:
        return Value(x ^ y);
      case Op::shl:
        if (y < 0) fail(pos, "negative shift count");
        if (x == 0) return Value(std::int64_t{0});
        if (y > 63 || ((x << y) >> y) != x) overflow(pos, op, x, y);
        return Value(x << y);
      case Op::shr:
        if (y < 0) fail(pos, "negative shift count");
        return Value(y > 63 ? (x < 0 ? -1 : 0) : x >> y);
      default:
        fail(pos, "internal error: not an arithmetic operator");
    }
  }

  // The elements of the lists inside `v`'s elements, at every depth (0 for a flat list).
  static std::uint64_t nested_elements(const Value& v) {
    std::uint64_t n = 0;
    if (v.kind() != Value::Kind::list) return 0;
    for (const Value& e : v.as_list())
      if (e.kind() == Value::Kind::list) n += e.as_list().size() + nested_elements(e);
    return n;
  }

  Value repeat(std::size_t pos, const Value& seq, std::int64_t times) {
    const std::uint64_t n = times > 0 ? static_cast<std::uint64_t>(times) : 0;
    if (seq.kind() == Value::Kind::string) {
      const std::string& s = seq.as_string();
      // An empty one repeated 10^18 times is still empty: no loop of that length.
      if (s.empty()) return Value(std::string());
      if (n > kMaxListElements / s.size())
        charge_elements(pos, kMaxListElements + 1, "this string repetition");
      charge_elements(pos, s.size() * n, "this string repetition");
      std::string r;
      r.reserve(s.size() * n);
      for (std::uint64_t i = 0; i < n; ++i) r += s;
      return Value(std::move(r));
    }
    const Value::List& l = seq.as_list();
    if (l.empty()) return Value(Value::List{});
    // Each copy copies the nested lists too: [[0] * 10**6] * 20 builds 2 * 10**7 elements.
    const std::uint64_t per_copy = l.size() + nested_elements(seq);
    if (n > kMaxListElements / per_copy)
      charge_elements(pos, kMaxListElements + 1, "this list repetition");
    charge_elements(pos, per_copy * n, "this list repetition");
    Value::List r;
    r.reserve(l.size() * n);
    for (std::uint64_t i = 0; i < n; ++i) r.insert(r.end(), l.begin(), l.end());
    return Value(std::move(r));
  }

  Value arithmetic(Op op, std::size_t pos, const Value& a, const Value& b) {
    if (is_intlike(a) && is_intlike(b)) return int_arithmetic(op, pos, a.as_int(), b.as_int());
    return other_arithmetic(op, pos, a, b);
  }

  // Floats, strings and lists.
  [[gnu::noinline]] Value other_arithmetic(Op op, std::size_t pos, const Value& a, const Value& b) {
    const auto ka = a.kind(), kb = b.kind();
    using K = Value::Kind;
    if (op == Op::add && ka == kb && (ka == K::string || ka == K::list)) {
      if (ka == K::string) {
        charge_steps(pos, a.as_string().size() + b.as_string().size());
        return Value(a.as_string() + b.as_string());
      }
      const Value::List &x = a.as_list(), &y = b.as_list();
      charge_elements(pos, x.size() + y.size(), "this list concatenation");
      Value::List r;
      r.reserve(x.size() + y.size());
      r.insert(r.end(), x.begin(), x.end());
      r.insert(r.end(), y.begin(), y.end());
      return Value(std::move(r));
    }
    if (op == Op::mul) {
      if ((ka == K::string || ka == K::list) && is_intlike(b)) return repeat(pos, a, b.as_int());
      if ((kb == K::string || kb == K::list) && is_intlike(a)) return repeat(pos, b, a.as_int());
    }
    if (!numeric_like(a) || !numeric_like(b))
      fail(pos, fmt::format("cannot apply '{}' to {} and {}", symbol_of(op), a.shown(), b.shown()));
    const double x = a.as_double(), y = b.as_double();
    switch (op) {
      case Op::add:
        return Value(x + y);
      case Op::sub:
        return Value(x - y);
      case Op::mul:
        return Value(x * y);
      case Op::div:
        if (y == 0) fail(pos, "division by zero");
        return Value(x / y);
      case Op::floor_div:
        if (y == 0) fail(pos, "division by zero");
        return Value(std::floor(x / y));
      case Op::mod: {
        if (y == 0) fail(pos, "modulo by zero");
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value(m);
      }
      case Op::pow: {
        if (x == 0 && y < 0) fail(pos, "0.0 cannot be raised to a negative power");
        if (x < 0 && std::isfinite(y) && std::floor(y) != y)
          fail(pos, "a negative number to a fractional power is not a real number");
        const double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
          fail(pos, fmt::format("float overflow: {} ** {} is too large", a.shown(), b.shown()));
        return Value(r);
      }
      default:
        fail(pos, fmt::format("'{}' needs integers, got {} and {}", symbol_of(op), a.shown(),
                              b.shown()));
    }
  }

  bool compare(const Node& n, Cmp c, const Value& a, const Value& b) {
    switch (c) {
      case Cmp::eq:
        return a == b;
      case Cmp::ne:
        return !(a == b);
      case Cmp::in:
      case Cmp::not_in: {
        if (b.kind() == Value::Kind::list) {
          const auto& l = b.as_list();
          charge_steps(n.pos, l.size());
          const bool found = std::find(l.begin(), l.end(), a) != l.end();
          return c == Cmp::in ? found : !found;
        }
        if (b.kind() == Value::Kind::string && a.kind() == Value::Kind::string) {
          const bool found = b.as_string().find(a.as_string()) != std::string::npos;
          return c == Cmp::in ? found : !found;
        }
        fail(n.pos, fmt::format("'in' needs a list or string on its right, got {}", b.shown()));
      }
      default:
        break;
    }
    if (rank_of(a) != rank_of(b) || rank_of(a) == 2)
      fail(n.pos, fmt::format("cannot order {} and {}", a.shown(), b.shown()));
    switch (c) {
      case Cmp::lt:
        return a < b;
      case Cmp::le:
        return !(b < a);
      case Cmp::gt:
        return b < a;
      case Cmp::ge:
        return !(a < b);
      default:
        return false;
    }
  }

  // The items a `for` clause or a function like sum() walks: a list, or a string's characters.
  Value::List items_of(std::size_t pos, const Value& v) {
    if (v.kind() == Value::Kind::string) {
      const std::string& s = v.as_string();
      charge_elements(pos, s.size(), "iterating over this string");
      Value::List l;
      l.reserve(s.size());
      for (char ch : s) l.emplace_back(std::string(1, ch));
      return l;
    }
    if (v.kind() != Value::Kind::list)
      fail(pos, fmt::format("expected a list to iterate over, got {} {}",
                            Value::kind_name(v.kind()), v.shown()));
    return {};  // the caller uses v.as_list() itself, without a copy
  }

  Value range(const Node& n, std::span<const Value> args) {
    for (const Value& a : args)
      if (!is_intlike(a))
        fail(n.pos, fmt::format("range() needs integers, got {} {}", Value::kind_name(a.kind()),
                                a.shown()));
    const std::int64_t start = args.size() == 1 ? 0 : args[0].as_int();
    const std::int64_t stop = args.size() == 1 ? args[0].as_int() : args[1].as_int();
    const std::int64_t step = args.size() == 3 ? args[2].as_int() : 1;
    if (step == 0) fail(n.pos, "range() step must not be zero");
    // Unsigned arithmetic: the distance between two int64 values always fits.
    std::uint64_t count = 0;
    const std::uint64_t ustep = step > 0 ? static_cast<std::uint64_t>(step)
                                         : std::uint64_t{0} - static_cast<std::uint64_t>(step);
    if (step > 0 && stop > start)
      count =
          (static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start) - 1) / ustep + 1;
    if (step < 0 && start > stop)
      count =
          (static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop) - 1) / ustep + 1;
    if (count > budget_.elements_left)  // the message only when it is needed: range() is hot
      charge_elements(n.pos, count, fmt::format("range() of {} elements", count));
    charge_elements(n.pos, count, "range()");
    Value::List l;
    l.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t offset = step > 0 ? i * ustep : std::uint64_t{0} - i * ustep;
      l.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(start) + offset));
    }
    return Value(std::move(l));
  }

  std::int64_t to_int(std::size_t pos, double d, std::string_view f) const {
    // 2^63 is the first double beyond int64.
    if (!std::isfinite(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
      fail(pos, fmt::format("{}() of {} does not fit in a 64-bit integer", f, d));
    return static_cast<std::int64_t>(d);
  }

  Value call(const Node& n) {
    // Most calls take one to three arguments: keep them off the heap.
    Value small[3];
    std::vector<Value> many;
    Value* argv = small;
    if (n.kids.size() > std::size(small)) {
      many.resize(n.kids.size());
      argv = many.data();
    }
    for (std::size_t i = 0; i < n.kids.size(); ++i) argv[i] = eval(*n.kids[i]);
    return apply(n, std::span<const Value>(argv, n.kids.size()));
  }

  Value apply(const Node& n, std::span<const Value> args) {
    const std::string& f = n.name;
    auto want = [&](std::size_t lo, std::size_t hi) {
      if (args.size() < lo || args.size() > hi)
        fail(n.pos, fmt::format("{}() takes {} argument(s), got {}", f,
                                lo == hi ? std::to_string(lo) : fmt::format("{} to {}", lo, hi),
                                args.size()));
    };
    // The items of a one-argument call on an iterable (sum, sorted, any, all, list).
    Value::List chars;
    auto items = [&]() -> const Value::List& {
      chars = items_of(n.pos, args[0]);
      const Value::List& l = args[0].kind() == Value::Kind::list ? args[0].as_list() : chars;
      charge_steps(n.pos, l.size());
      return l;
    };
    switch (n.fn) {
      case Fn::min:
      case Fn::max: {
        if (args.empty()) fail(n.pos, fmt::format("{}() needs at least one argument", f));
        std::span<const Value> pool = args.size() == 1 ? std::span<const Value>(items()) : args;
        if (pool.empty()) fail(n.pos, fmt::format("{}() of an empty list", f));
        const Value* best = &pool[0];
        for (std::size_t i = 1; i < pool.size(); ++i) {
          if (rank_of(pool[i]) != rank_of(*best))
            fail(n.pos, fmt::format("{}() of mixed types", f));
          if (n.fn == Fn::min ? pool[i] < *best : *best < pool[i]) best = &pool[i];
        }
        return *best;
      }
      case Fn::abs:
        want(1, 1);
        if (is_intlike(args[0])) {
          const std::int64_t x = args[0].as_int();
          if (x == std::numeric_limits<std::int64_t>::min())
            fail(n.pos, fmt::format("integer overflow: abs({}) does not fit in 64 bits", x));
          return Value(x < 0 ? -x : x);
        }
        return Value(std::abs(args[0].as_double()));
      case Fn::to_int: {
        want(1, 1);
        if (args[0].kind() == Value::Kind::string) {
          const std::string& s = args[0].as_string();
          char* end = nullptr;
          errno = 0;
          const long long v = std::strtoll(s.c_str(), &end, 10);
          if (s.empty() || *end) fail(n.pos, fmt::format("int() cannot parse {}", args[0].shown()));
          if (errno == ERANGE)
            fail(n.pos, fmt::format("int() of {} does not fit in 64 bits", args[0].shown()));
          return Value(static_cast<std::int64_t>(v));
        }
        if (is_intlike(args[0])) return Value(args[0].as_int());
        return Value(to_int(n.pos, std::trunc(args[0].as_double()), f));
      }
      case Fn::to_float: {
        want(1, 1);
        if (args[0].kind() == Value::Kind::string) {
          const std::string& s = args[0].as_string();
          char* end = nullptr;
          const double d = std::strtod(s.c_str(), &end);
          if (s.empty() || *end)
            fail(n.pos, fmt::format("float() cannot parse {}", args[0].shown()));
          return Value(d);
        }
        return Value(args[0].as_double());
      }
      case Fn::to_bool:
        want(1, 1);
        return Value(args[0].truthy());
      case Fn::len:
        want(1, 1);
        if (args[0].kind() == Value::Kind::string)
          return Value(static_cast<std::int64_t>(args[0].as_string().size()));
        return Value(static_cast<std::int64_t>(args[0].as_list().size()));
      case Fn::round:
        want(1, 1);
        if (is_intlike(args[0])) return Value(args[0].as_int());
        return Value(to_int(n.pos, std::nearbyint(args[0].as_double()), f));  // half-even
      case Fn::ceil:  // math.ceil / math.floor, written without the module
      case Fn::floor: {
        want(1, 1);
        if (is_intlike(args[0])) return Value(args[0].as_int());
        const double d = args[0].as_double();
        return Value(to_int(n.pos, n.fn == Fn::ceil ? std::ceil(d) : std::floor(d), f));
      }
      case Fn::range:
        want(1, 3);
        return range(n, args);
      case Fn::list: {
        want(1, 1);
        if (args[0].kind() == Value::Kind::list) return args[0];  // lists are immutable here
        return Value(items_of(n.pos, args[0]));
      }
      case Fn::sum: {
        want(1, 2);
        Value total = args.size() == 2 ? args[1] : Value(std::int64_t{0});
        for (const Value& v : items()) total = arithmetic(Op::add, n.pos, total, v);
        return total;
      }
      case Fn::sorted: {
        want(1, 1);
        Value::List l = items();
        for (const Value& v : l)
          if (rank_of(v) != rank_of(l[0]) || rank_of(v) == 2)
            fail(n.pos, "sorted() needs a list of numbers or of strings");
        std::stable_sort(l.begin(), l.end());
        return Value(std::move(l));
      }
      case Fn::any:
      case Fn::all: {
        want(1, 1);
        for (const Value& v : items())
          if (v.truthy() == (n.fn == Fn::any)) return Value(n.fn == Fn::any);
        return Value(n.fn == Fn::all);
      }
    }
    fail(n.pos, fmt::format("internal error: unknown function '{}'", f));
  }

  // Runs the clauses of comprehension `n` from `clause` on, appending elements to `out`.
  // Recursion is one level per clause, and the parser bounds the clause count.
  void comprehend(const Node& n, std::size_t clause, Value::List& out) {
    if (clause == n.vars.size()) {
      charge_elements(n.pos, 1, "this comprehension");
      out.push_back(eval(*n.kids[0]));
      return;
    }
    const Node& e = *n.kids[clause + 1];
    if (n.vars[clause].empty()) {  // an `if` clause
      if (eval(e).truthy()) comprehend(n, clause + 1, out);
      return;
    }
    const Value seq = eval(e);
    const Value::List chars = items_of(e.pos, seq);
    const Value::List& l = seq.kind() == Value::Kind::list ? seq.as_list() : chars;
    LocalScope local(scope_, n.vars[clause]);
    const Scope* const outer = scope_;
    scope_ = &local;
    for (const Value& item : l) {
      charge_steps(n.pos, n.steps_per_iteration);
      local.value = item;
      comprehend(n, clause + 1, out);
    }
    scope_ = outer;
  }

  // A leaf's value without copying it (the hot path is "a * b <= c"), else `held` evaluated.
  // `held` is an optional so that a leaf costs no Value construction and destruction.
  using Held = std::optional<Value>;
  const Value& operand(const Node& n, Held& held) {
    if (n.op == Op::constant) return n.value;
    if (n.op == Op::name) {
      if (const Value* v = scope_->find(n.name)) return *v;
    }
    // Built in place, without a move, through guaranteed copy elision.
    struct Evaluated {
      TreeWalker& ev;
      const Node& n;
      operator Value() const { return ev.eval(n); }  // reports an unknown name, with its position
    };
    return held.emplace(Evaluated{*this, n});
  }

  // The nodes that build lists or call functions, kept out of eval_unchecked so that its stack
  // frame, paid at every level of every evaluation, stays small.
  [[gnu::noinline]] Value eval_cold(const Node& n) {
    switch (n.op) {
      case Op::list: {
        charge_elements(n.pos, n.kids.size(), "this list");
        Value::List l;
        l.reserve(n.kids.size());
        for (const auto& k : n.kids) l.push_back(eval(*k));
        return Value(std::move(l));
      }
      case Op::comprehension: {
        Value::List l;
        comprehend(n, 0, l);
        return Value(std::move(l));
      }
      case Op::index: {
        Held held[2];
        const Value& c = operand(*n.kids[0], held[0]);
        const Value& i = operand(*n.kids[1], held[1]);
        if (!is_intlike(i))
          fail(n.pos, fmt::format("an index must be an integer, got {}", i.shown()));
        std::int64_t k = i.as_int();
        const auto size = static_cast<std::int64_t>(
            c.kind() == Value::Kind::string ? c.as_string().size() : c.as_list().size());
        if (k < 0) k += size;
        if (k < 0 || k >= size)
          fail(n.pos, fmt::format("index {} is out of range for {}", i.as_int(), c.shown()));
        if (c.kind() == Value::Kind::string) return Value(std::string(1, c.as_string()[k]));
        return c.as_list()[k];
      }
      case Op::call:
        return call(n);
      default:
        fail(n.pos, "internal error: not a list or call node");
    }
  }

  Value eval_unchecked(const Node& n) {
    switch (n.op) {
      case Op::constant:
        return n.value;
      case Op::name: {
        if (const Value* v = scope_->find(n.name)) return *v;
        fail(n.pos, fmt::format("unknown name '{}'", n.name));
      }
      case Op::list:
      case Op::comprehension:
      case Op::index:
      case Op::call:
        return eval_cold(n);
      case Op::neg: {
        const Value a = eval(*n.kids[0]);
        if (is_intlike(a)) {
          if (a.as_int() == std::numeric_limits<std::int64_t>::min())
            fail(n.pos, fmt::format("integer overflow: -({}) does not fit in 64 bits", a.as_int()));
          return Value(-a.as_int());
        }
        return Value(-a.as_double());
      }
      case Op::pos: {
        const Value a = eval(*n.kids[0]);
        if (is_intlike(a)) return Value(a.as_int());
        return Value(a.as_double());
      }
      case Op::invert:
        return Value(~eval(*n.kids[0]).as_int());
      case Op::logical_not:
        return Value(!eval(*n.kids[0]).truthy());
      case Op::logical_and:
      case Op::logical_or: {
        Value v = eval(*n.kids[0]);
        for (std::size_t i = 1; i < n.kids.size(); ++i) {
          if (v.truthy() != (n.op == Op::logical_and))
            return v;  // Python returns the deciding operand
          v = eval(*n.kids[i]);
        }
        return v;
      }
      case Op::if_else:
        return eval(*n.kids[0]).truthy() ? eval(*n.kids[1]) : eval(*n.kids[2]);
      case Op::compare: {
        Held held[2];
        const Value* left = &operand(*n.kids[0], held[0]);
        for (std::size_t i = 0; i < n.cmps.size(); ++i) {
          const Value& right = operand(*n.kids[i + 1], held[(i + 1) % 2]);
          if (!compare(*n.kids[i + 1], n.cmps[i], *left, right)) return Value(false);
          left = &right;
        }
        return Value(true);
      }
      case Op::chain: {
        Held held[2];
        if (n.ops.size() == 1) {  // operands in Python's order, left first
          const Value& a = operand(*n.kids[0], held[0]);
          return arithmetic(n.ops[0], n.op_pos[0], a, operand(*n.kids[1], held[1]));
        }
        Value v = eval(*n.kids[0]);
        for (std::size_t i = 0; i < n.ops.size(); ++i)
          v = arithmetic(n.ops[i], n.op_pos[i], v, operand(*n.kids[i + 1], held[0]));
        return v;
      }
      case Op::pow: {
        Held held[2];
        const Value& base = operand(*n.kids[0], held[0]);
        return arithmetic(Op::pow, n.pos, base, operand(*n.kids[1], held[1]));
      }
      default:
        fail(n.pos, "internal error: unknown node");
    }
  }

  std::string_view text_;
  const Scope* scope_;
  Budget& budget_;
};

// ---------------------------------------------------------------------------------- parsing

enum class Tok { end, integer, real, str, name, sym };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  std::size_t pos = 0;
  Value value;
};

const char* const kSymbols[] = {"**", "//", "<=", ">=", "==", "!=", "<<", ">>", "+", "-", "*", "/",
                                "%",  "<",  ">",  "(",  ")",  "[",  "]",  ",",  "&", "|", "^", "~"};

const char* const kKeywords[] = {"and", "or", "not", "if", "else", "in", "for"};

bool is_keyword(std::string_view word) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), word) != std::end(kKeywords);
}

std::size_t count_nodes(const Node& n) {
  std::size_t count = 1;
  for (const auto& k : n.kids) count += count_nodes(*k);
  return count;
}

// Recursive descent, one function per precedence level. Every construct that nests (brackets,
// unary operators, `**`, `not`, postfix chains, comprehension clauses) goes one level deeper, so
// the recursion here, in folding and in evaluation is bounded by kMaxExpressionDepth; operators of
// one level repeated side by side become one n-ary node instead of a deep tree.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) { tokenize(); }

  NodePtr parse_all() {
    if (toks_.front().kind == Tok::end) fail(0, "the expression is empty");
    NodePtr n = expr();
    if (peek().kind != Tok::end) fail(peek().pos, fmt::format("unexpected '{}'", peek().text));
    return n;
  }

 private:
  [[noreturn]] void fail(std::size_t pos, std::string problem) const {
    throw ExpressionError(std::string(text_), pos, std::move(problem));
  }

  // Restores the nesting depth when a construct ends.
  class Nesting {
   public:
    explicit Nesting(Parser& p) : p_(p), saved_(p.depth_) {}
    ~Nesting() { p_.depth_ = saved_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& p_;
    std::size_t saved_;
  };
  void deeper(std::size_t pos) {
    if (++depth_ > kMaxExpressionDepth)
      fail(pos, fmt::format("the expression is nested more than {} levels deep; simplify it",
                            kMaxExpressionDepth));
  }

  void tokenize() {
    std::size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
        continue;
      }
      Token t;
      t.pos = i;
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && i + 1 < text_.size() && std::isdigit((unsigned char)text_[i + 1]))) {
        std::size_t j = i;
        bool is_float = false;
        while (j < text_.size() && (std::isdigit((unsigned char)text_[j]) || text_[j] == '_')) ++j;
        if (j < text_.size() && text_[j] == '.') {
          is_float = true;
          ++j;
          while (j < text_.size() && std::isdigit((unsigned char)text_[j])) ++j;
        }
        if (j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
          std::size_t k = j + 1;
          if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
          if (k < text_.size() && std::isdigit((unsigned char)text_[k])) {
            is_float = true;
            j = k;
            while (j < text_.size() && std::isdigit((unsigned char)text_[j])) ++j;
          }
        }
        if (j < text_.size() && (std::isalpha((unsigned char)text_[j]) || text_[j] == '_'))
          fail(j, fmt::format("'{}' is not a valid number", text_.substr(i, j - i + 1)));
        std::string digits;
        for (char d : text_.substr(i, j - i))
          if (d != '_') digits += d;
        t.text = std::string(text_.substr(i, j - i));
        if (is_float) {
          t.kind = Tok::real;
          t.value = Value(std::strtod(digits.c_str(), nullptr));
        } else {
          t.kind = Tok::integer;
          errno = 0;
          const long long v = std::strtoll(digits.c_str(), nullptr, 10);
          if (errno == ERANGE) fail(i, fmt::format("integer {} does not fit in 64 bits", t.text));
          t.value = Value(static_cast<std::int64_t>(v));
        }
        i = j;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t j = i;
        while (j < text_.size() && (std::isalnum((unsigned char)text_[j]) || text_[j] == '_')) ++j;
        t.kind = Tok::name;
        t.text = std::string(text_.substr(i, j - i));
        i = j;
      } else if (c == '\'' || c == '"') {
        std::size_t j = i + 1;
        std::string s;
        while (j < text_.size() && text_[j] != c) {
          if (text_[j] == '\\' && j + 1 < text_.size()) ++j;
          s += text_[j++];
        }
        if (j >= text_.size()) fail(i, "the string is not closed");
        t.kind = Tok::str;
        t.text = std::string(text_.substr(i, j + 1 - i));
        t.value = Value(std::move(s));
        i = j + 1;
      } else {
        bool matched = false;
        for (const char* sym : kSymbols) {
          const std::string_view s(sym);
          if (text_.substr(i, s.size()) == s) {
            t.kind = Tok::sym;
            t.text = std::string(s);
            i += s.size();
            matched = true;
            break;
          }
        }
        if (!matched) fail(i, fmt::format("unexpected character '{}'", c));
      }
      toks_.push_back(std::move(t));
    }
    Token end;
    end.pos = text_.size();
    end.text = "end of expression";
    toks_.push_back(end);
  }

  const Token& peek(std::size_t ahead = 0) const {
    return toks_[std::min(at_ + ahead, toks_.size() - 1)];
  }
  bool is_sym(std::string_view s, std::size_t ahead = 0) const {
    return peek(ahead).kind == Tok::sym && peek(ahead).text == s;
  }
  bool is_word(std::string_view s, std::size_t ahead = 0) const {
    return peek(ahead).kind == Tok::name && peek(ahead).text == s;
  }
  const Token& next() { return toks_[std::min(at_++, toks_.size() - 1)]; }
  void expect_sym(std::string_view s, std::string_view what) {
    if (!is_sym(s))
      fail(peek().pos, fmt::format("expected '{}' {}, found '{}'", s, what, peek().text));
    next();
  }

  static std::shared_ptr<Node> node(Op op, std::size_t pos, std::vector<NodePtr> kids = {}) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->pos = pos;
    n->kids = std::move(kids);
    return n;
  }

  // A node whose operands are all constants is computed now, once, instead of at every
  // evaluation ("-1", "[1, 2, 4]", "list(range(32, 1025, 32))"). One that fails ("1 // 0") is kept
  // so that evaluation reports the error where it always did.
  NodePtr fold(std::shared_ptr<Node> n) {
    for (const auto& k : n->kids)
      if (k->op != Op::constant) return n;
    MapScope nothing;
    try {
      Value v = TreeWalker(text_, nothing, fold_budget_).eval(*n);
      auto c = node(Op::constant, n->pos);
      c->value = std::move(v);
      return c;
    } catch (const ExpressionError&) {
      return n;
    }
  }

  NodePtr expr() {
    Nesting nesting(*this);
    deeper(peek().pos);
    NodePtr a = or_expr();
    if (is_word("if")) {
      const std::size_t pos = next().pos;
      NodePtr cond = or_expr();
      if (!is_word("else"))
        fail(peek().pos, fmt::format("expected 'else' after 'if', found '{}'", peek().text));
      next();
      NodePtr b = expr();
      return fold(node(Op::if_else, pos, {cond, a, b}));
    }
    return a;
  }

  // `a or b or c` (and `and`) as one node: long chains must not nest.
  NodePtr logic(Op op, const char* word, NodePtr (Parser::*operand)()) {
    NodePtr first = (this->*operand)();
    if (!is_word(word)) return first;
    auto n = node(op, peek().pos, {first});
    while (is_word(word)) {
      next();
      n->kids.push_back((this->*operand)());
    }
    return fold(n);
  }
  NodePtr or_expr() { return logic(Op::logical_or, "or", &Parser::and_expr); }
  NodePtr and_expr() { return logic(Op::logical_and, "and", &Parser::not_expr); }

  NodePtr not_expr() {
    if (is_word("not")) {
      const std::size_t pos = next().pos;
      Nesting nesting(*this);
      deeper(pos);
      return fold(node(Op::logical_not, pos, {not_expr()}));
    }
    return comparison();
  }

  bool comparison_op(Cmp& c, std::size_t& width) const {
    width = 1;
    if (is_sym("<"))
      c = Cmp::lt;
    else if (is_sym("<="))
      c = Cmp::le;
    else if (is_sym(">"))
      c = Cmp::gt;
    else if (is_sym(">="))
      c = Cmp::ge;
    else if (is_sym("=="))
      c = Cmp::eq;
    else if (is_sym("!="))
      c = Cmp::ne;
    else if (is_word("in"))
      c = Cmp::in;
    else if (is_word("not") && is_word("in", 1))
      c = Cmp::not_in, width = 2;
    else
      return false;
    return true;
  }

  NodePtr comparison() {
    NodePtr first = bit_or();
    Cmp c;
    std::size_t width;
    if (!comparison_op(c, width)) return first;
    auto n = node(Op::compare, peek().pos, {first});
    while (comparison_op(c, width)) {
      at_ += width;
      n->cmps.push_back(c);
      n->kids.push_back(bit_or());
    }
    return fold(n);
  }

  // One precedence level of left-associative binary operators, as one Chain node.
  NodePtr chain(NodePtr (Parser::*operand)(),
                std::initializer_list<std::pair<const char*, Op>> ops) {
    NodePtr first = (this->*operand)();
    std::shared_ptr<Node> n;
    for (;;) {
      const std::pair<const char*, Op>* hit = nullptr;
      for (const auto& op : ops)
        if (is_sym(op.first)) {
          hit = &op;
          break;
        }
      if (!hit) break;
      if (!n) n = node(Op::chain, peek().pos, {first});
      n->ops.push_back(hit->second);
      n->op_pos.push_back(next().pos);
      n->kids.push_back((this->*operand)());
    }
    return n ? fold(n) : first;
  }

  NodePtr bit_or() { return chain(&Parser::bit_xor, {{"|", Op::bit_or}}); }
  NodePtr bit_xor() { return chain(&Parser::bit_and, {{"^", Op::bit_xor}}); }
  NodePtr bit_and() { return chain(&Parser::shift, {{"&", Op::bit_and}}); }
  NodePtr shift() { return chain(&Parser::arith, {{"<<", Op::shl}, {">>", Op::shr}}); }
  NodePtr arith() { return chain(&Parser::term, {{"+", Op::add}, {"-", Op::sub}}); }
  NodePtr term() {
    return chain(&Parser::factor,
                 {{"*", Op::mul}, {"//", Op::floor_div}, {"/", Op::div}, {"%", Op::mod}});
  }

  NodePtr factor() {
    Op op;
    if (is_sym("-"))
      op = Op::neg;
    else if (is_sym("+"))
      op = Op::pos;
    else if (is_sym("~"))
      op = Op::invert;
    else
      return power();
    const std::size_t pos = next().pos;  // consume before parsing the operand
    Nesting nesting(*this);
    deeper(pos);
    return fold(node(op, pos, {factor()}));
  }

  NodePtr power() {
    NodePtr base = postfix();
    if (is_sym("**")) {
      const std::size_t pos = next().pos;
      Nesting nesting(*this);
      deeper(pos);
      // Right-associative, and binds tighter than a unary operator on its left only.
      return fold(node(Op::pow, pos, {base, factor()}));
    }
    return base;
  }

  NodePtr postfix() {
    NodePtr a = atom();
    Nesting nesting(*this);  // x[0][1]... nests one level per index
    for (;;) {
      if (is_sym("[")) {
        const std::size_t pos = next().pos;
        deeper(pos);
        NodePtr idx = expr();
        expect_sym("]", "to close the index");
        a = fold(node(Op::index, pos, {a, idx}));
      } else if (is_sym("(")) {
        if (a->op != Op::name) fail(peek().pos, "only built-in functions can be called");
        deeper(next().pos);
        auto call = node(Op::call, a->pos);
        call->name = a->name;
        const auto* known = std::find_if(std::begin(kBuiltins), std::end(kBuiltins),
                                         [&](const Builtin& b) { return a->name == b.name; });
        if (known == std::end(kBuiltins)) {
          std::string names;
          for (const Builtin& b : kBuiltins)
            names += (names.empty() ? "" : ", ") + std::string(b.name);
          fail(a->pos, fmt::format("unknown function '{}'; known: {}", a->name, names));
        }
        call->fn = known->fn;
        if (!is_sym(")")) {
          const std::size_t first_pos = peek().pos;
          NodePtr first = expr();
          if (is_word("for")) {  // sum(x for x in ...): a generator, read as a list
            first = comprehension(first, first_pos);
            if (!is_sym(")"))
              fail(peek().pos, "a comprehension argument must be the only argument");
          }
          call->kids.push_back(first);
          while (is_sym(",")) {
            next();
            if (is_sym(")")) break;
            call->kids.push_back(expr());
          }
        }
        expect_sym(")", "to close the call");
        a = fold(call);
      } else {
        return a;
      }
    }
  }

  // The clauses after `element` in "[element for x in xs if c for y in ys]", `for` next.
  NodePtr comprehension(NodePtr element, std::size_t pos) {
    auto n = node(Op::comprehension, pos, {element});
    Nesting nesting(*this);  // each clause nests the rest of the comprehension
    while (is_word("for") || is_word("if")) {
      const Token& keyword = next();
      deeper(keyword.pos);
      if (keyword.text == "if") {
        n->vars.emplace_back();
        n->kids.push_back(or_expr());
        continue;
      }
      const Token& var = peek();
      if (var.kind != Tok::name || is_keyword(var.text) || var.text == "True" ||
          var.text == "False")
        fail(var.pos, fmt::format("expected a variable name after 'for', found '{}'", var.text));
      next();
      if (is_sym(","))
        fail(peek().pos, "only one variable can follow 'for' (tuples are not unpacked)");
      if (!is_word("in"))
        fail(peek().pos,
             fmt::format("expected 'in' after 'for {}', found '{}'", var.text, peek().text));
      next();
      n->vars.push_back(var.text);
      n->kids.push_back(or_expr());
    }
    n->steps_per_iteration = count_nodes(*n);
    return fold(n);
  }

  NodePtr atom() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::integer:
      case Tok::real:
      case Tok::str: {
        next();
        auto n = node(Op::constant, t.pos);
        n->value = t.value;
        return n;
      }
      case Tok::name: {
        next();
        auto n = node(Op::name, t.pos);
        if (t.text == "True" || t.text == "False") {
          n->op = Op::constant;
          n->value = Value(t.text == "True");
          return n;
        }
        if (is_keyword(t.text)) fail(t.pos, fmt::format("'{}' needs an operand before it", t.text));
        n->name = t.text;
        return n;
      }
      case Tok::sym: {
        if (t.text == "(" || t.text == "[") {
          const bool is_list = t.text == "[";
          const std::size_t pos = next().pos;
          const char* close = is_list ? "]" : ")";
          const char* closing = is_list ? "to close the list" : "to close the parenthesis";
          std::vector<NodePtr> items;
          bool trailing_comma = false;
          if (!is_sym(close)) {
            NodePtr first = expr();
            if (is_word("for")) {  // a comprehension; `(x for ...)` is read as a list too
              NodePtr c = comprehension(first, pos);
              expect_sym(close, closing);
              return c;
            }
            items.push_back(first);
            while (is_sym(",")) {
              next();
              trailing_comma = true;
              if (is_sym(close)) break;
              items.push_back(expr());
              trailing_comma = false;
            }
          }
          expect_sym(close, closing);
          if (!is_list && items.size() == 1 && !trailing_comma) return items[0];
          if (!is_list && items.empty()) fail(pos, "empty parentheses are not a value");
          return fold(node(Op::list, pos, std::move(items)));  // tuples act as lists
        }
        fail(t.pos, fmt::format("unexpected '{}'", t.text));
      }
      case Tok::end:
        fail(t.pos, "the expression ends too early");
    }
    fail(t.pos, "unexpected token");
  }

  std::string_view text_;
  std::vector<Token> toks_;
  std::size_t at_ = 0;
  std::size_t depth_ = 0;
  Budget fold_budget_;
};

// The names `n` reads from its scope: every Name not bound by an enclosing comprehension clause.
// A clause's iterable sees the variables of the clauses before it only, as in Python.
void free_names(const Node& n, std::vector<std::string_view>& bound,
                std::vector<std::string>& out) {
  switch (n.op) {
    case Op::name:
      if (std::find(bound.begin(), bound.end(), n.name) == bound.end()) out.push_back(n.name);
      return;
    case Op::comprehension: {
      const std::size_t outer = bound.size();
      for (std::size_t i = 0; i < n.vars.size(); ++i) {
        free_names(*n.kids[i + 1], bound, out);
        if (!n.vars[i].empty()) bound.push_back(n.vars[i]);
      }
      free_names(*n.kids[0], bound, out);
      bound.resize(outer);
      return;
    }
    default:
      for (const auto& k : n.kids) free_names(*k, bound, out);
  }
}

}  // namespace

Expression::Expression() : text_("0") {
  auto n = std::make_shared<Node>();
  n->op = Op::constant;
  n->pos = 0;
  n->value = Value(0);
  root_ = n;
}

Expression Expression::parse(std::string_view text) {
  if (text.size() > kMaxExpressionBytes)
    throw ExpressionError(std::string(text.substr(0, kMaxQuotedExpression)), kMaxExpressionBytes,
                          fmt::format("the expression holds {} characters, more than the {} ktune "
                                      "reads; shorten it (name repeated parts as parameters)",
                                      text.size(), kMaxExpressionBytes));
  Parser p(text);
  Expression e;
  e.root_ = p.parse_all();
  e.text_ = std::string(text);
  std::vector<std::string_view> bound;
  free_names(*e.root_, bound, e.names_);
  std::sort(e.names_.begin(), e.names_.end());
  e.names_.erase(std::unique(e.names_.begin(), e.names_.end()), e.names_.end());
  return e;
}

Value Expression::evaluate(const Scope& scope) const {
  Budget budget;
  return TreeWalker(text_, scope, budget).eval(*root_);
}

Value evaluate_constant(std::string_view text) {
  MapScope empty;
  return Expression::parse(text).evaluate(empty);
}

}  // namespace ktune::tune
