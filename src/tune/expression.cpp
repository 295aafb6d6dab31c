#include "ktune/tune/expression.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ktune::tune {

// ---------------------------------------------------------------------------------------- Value

const char* Value::kind_name(Kind k) {
  switch (k) {
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::Bool:
      return "bool";
    case Kind::String:
      return "str";
    case Kind::List:
      return "list";
  }
  return "?";
}

std::int64_t Value::as_int() const {
  switch (kind()) {
    case Kind::Int:
      return std::get<std::int64_t>(v_);
    case Kind::Bool:
      return std::get<bool>(v_) ? 1 : 0;
    case Kind::Float: {
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
    case Kind::Int:
      return static_cast<double>(std::get<std::int64_t>(v_));
    case Kind::Float:
      return std::get<double>(v_);
    case Kind::Bool:
      return std::get<bool>(v_) ? 1.0 : 0.0;
    default:
      break;
  }
  throw Error(fmt::format("expected a number, got {} {}", kind_name(kind()), repr()));
}

const std::string& Value::as_string() const {
  if (kind() != Kind::String)
    throw Error(fmt::format("expected a string, got {} {}", kind_name(kind()), repr()));
  return std::get<std::string>(v_);
}

const Value::List& Value::as_list() const {
  if (kind() != Kind::List)
    throw Error(fmt::format("expected a list, got {} {}", kind_name(kind()), repr()));
  return *std::get<std::shared_ptr<const List>>(v_);
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Int:
      return std::get<std::int64_t>(v_) != 0;
    case Kind::Float:
      return std::get<double>(v_) != 0.0;
    case Kind::Bool:
      return std::get<bool>(v_);
    case Kind::String:
      return !std::get<std::string>(v_).empty();
    case Kind::List:
      return !as_list().empty();
  }
  return false;
}

std::string Value::repr() const {
  switch (kind()) {
    case Kind::Int:
      return std::to_string(std::get<std::int64_t>(v_));
    case Kind::Float: {
      const double d = std::get<double>(v_);
      std::string s = fmt::format("{}", d);
      if (std::isfinite(d) && s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::Bool:
      return std::get<bool>(v_) ? "True" : "False";
    case Kind::String:
      return "'" + std::get<std::string>(v_) + "'";
    case Kind::List: {
      std::string s = "[";
      const auto& l = as_list();
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + l[i].repr();
      return s + "]";
    }
  }
  return "?";
}

namespace {
bool numeric_like(const Value& v) {
  return v.is_number() || v.kind() == Value::Kind::Bool;
}
int rank_of(const Value& v) {
  if (numeric_like(v)) return 0;
  return v.kind() == Value::Kind::String ? 1 : 2;
}
}  // namespace

bool operator==(const Value& a, const Value& b) {
  if (numeric_like(a) && numeric_like(b)) {
    if (a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float)
      return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  if (a.kind() == Value::Kind::String) return a.as_string() == b.as_string();
  return a.as_list() == b.as_list();
}

bool operator<(const Value& a, const Value& b) {
  const int ra = rank_of(a), rb = rank_of(b);
  if (ra != rb) return ra < rb;
  if (ra == 0) {
    if (a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float)
      return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (ra == 1) return a.as_string() < b.as_string();
  return std::lexicographical_compare(a.as_list().begin(), a.as_list().end(), b.as_list().begin(),
                                      b.as_list().end());
}

void to_json(nlohmann::json& j, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Int:
      j = v.as_int();
      break;
    case Value::Kind::Float:
      j = v.as_double();
      break;
    case Value::Kind::Bool:
      j = v.truthy();
      break;
    case Value::Kind::String:
      j = v.as_string();
      break;
    case Value::Kind::List: {
      j = nlohmann::json::array();
      for (const auto& e : v.as_list()) j.push_back(e);
      break;
    }
  }
}

void from_json(const nlohmann::json& j, Value& v) {
  if (j.is_boolean()) {
    v = Value(j.get<bool>());
  } else if (j.is_number_integer()) {
    v = Value(j.get<std::int64_t>());
  } else if (j.is_number_float()) {
    v = Value(j.get<double>());
  } else if (j.is_string()) {
    v = Value(j.get<std::string>());
  } else if (j.is_array()) {
    Value::List l;
    for (const auto& e : j) l.push_back(e.get<Value>());
    v = Value(std::move(l));
  } else {
    throw Error(fmt::format("expected a number, bool, string or list, got JSON {}", j.type_name()));
  }
}

// ------------------------------------------------------------------------------ ExpressionError

ExpressionError::ExpressionError(std::string text, std::size_t position, std::string problem)
    : Error(fmt::format("in expression \"{}\" at position {}: {}", text, position, problem)),
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
  Const,
  Name,
  List,
  Index,
  Call,  // leaves and postfix
  Neg,
  Pos,
  Invert,
  Not,  // unary
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr,
  And,
  Or,
  Compare,
  IfElse
};

enum class Cmp { Lt, Le, Gt, Ge, Eq, Ne, In, NotIn };

struct Node {
  Op op;
  std::size_t pos;   // offset of the token that names this node, for error messages
  Value value;       // Const
  std::string name;  // Name, Call
  std::vector<std::shared_ptr<const Node>> kids;
  std::vector<Cmp> cmps;  // Compare: kids.size() == cmps.size() + 1
};

}  // namespace detail

namespace {

using detail::Cmp;
using detail::Node;
using detail::Op;
using NodePtr = std::shared_ptr<const Node>;

enum class Tok { End, Int, Float, Str, Name, Sym };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  std::size_t pos = 0;
  Value value;
};

const char* const kSymbols[] = {"**", "//", "<=", ">=", "==", "!=", "<<", ">>", "+", "-", "*", "/",
                                "%",  "<",  ">",  "(",  ")",  "[",  "]",  ",",  "&", "|", "^", "~"};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) { tokenize(); }

  NodePtr parse_all() {
    if (toks_.front().kind == Tok::End) fail(0, "the expression is empty");
    NodePtr n = expr();
    if (peek().kind != Tok::End) fail(peek().pos, fmt::format("unexpected '{}'", peek().text));
    return n;
  }

  std::vector<std::string> names;

 private:
  [[noreturn]] void fail(std::size_t pos, std::string problem) const {
    throw ExpressionError(std::string(text_), pos, std::move(problem));
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
          t.kind = Tok::Float;
          t.value = Value(std::strtod(digits.c_str(), nullptr));
        } else {
          t.kind = Tok::Int;
          errno = 0;
          const long long v = std::strtoll(digits.c_str(), nullptr, 10);
          if (errno == ERANGE) fail(i, fmt::format("integer {} does not fit in 64 bits", t.text));
          t.value = Value(static_cast<std::int64_t>(v));
        }
        i = j;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t j = i;
        while (j < text_.size() && (std::isalnum((unsigned char)text_[j]) || text_[j] == '_')) ++j;
        t.kind = Tok::Name;
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
        t.kind = Tok::Str;
        t.text = std::string(text_.substr(i, j + 1 - i));
        t.value = Value(std::move(s));
        i = j + 1;
      } else {
        bool matched = false;
        for (const char* sym : kSymbols) {
          const std::string_view s(sym);
          if (text_.substr(i, s.size()) == s) {
            t.kind = Tok::Sym;
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
    return peek(ahead).kind == Tok::Sym && peek(ahead).text == s;
  }
  bool is_word(std::string_view s, std::size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Name && peek(ahead).text == s;
  }
  const Token& next() { return toks_[std::min(at_++, toks_.size() - 1)]; }
  void expect_sym(std::string_view s, std::string_view what) {
    if (!is_sym(s))
      fail(peek().pos, fmt::format("expected '{}' {}, found '{}'", s, what, peek().text));
    next();
  }

  static NodePtr make(Op op, std::size_t pos, std::vector<NodePtr> kids = {}) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->pos = pos;
    n->kids = std::move(kids);
    return n;
  }

  NodePtr expr() {
    NodePtr a = or_expr();
    if (is_word("if")) {
      const std::size_t pos = next().pos;
      NodePtr cond = or_expr();
      if (!is_word("else"))
        fail(peek().pos, fmt::format("expected 'else' after 'if', found '{}'", peek().text));
      next();
      NodePtr b = expr();
      return make(Op::IfElse, pos, {cond, a, b});
    }
    return a;
  }

  NodePtr or_expr() {
    NodePtr a = and_expr();
    while (is_word("or")) {
      const std::size_t pos = next().pos;
      a = make(Op::Or, pos, {a, and_expr()});
    }
    return a;
  }

  NodePtr and_expr() {
    NodePtr a = not_expr();
    while (is_word("and")) {
      const std::size_t pos = next().pos;
      a = make(Op::And, pos, {a, not_expr()});
    }
    return a;
  }

  NodePtr not_expr() {
    if (is_word("not")) {
      const std::size_t pos = next().pos;
      return make(Op::Not, pos, {not_expr()});
    }
    return comparison();
  }

  bool comparison_op(Cmp& c, std::size_t& width) const {
    width = 1;
    if (is_sym("<"))
      c = Cmp::Lt;
    else if (is_sym("<="))
      c = Cmp::Le;
    else if (is_sym(">"))
      c = Cmp::Gt;
    else if (is_sym(">="))
      c = Cmp::Ge;
    else if (is_sym("=="))
      c = Cmp::Eq;
    else if (is_sym("!="))
      c = Cmp::Ne;
    else if (is_word("in"))
      c = Cmp::In;
    else if (is_word("not") && is_word("in", 1))
      c = Cmp::NotIn, width = 2;
    else
      return false;
    return true;
  }

  NodePtr comparison() {
    NodePtr first = bit_or();
    Cmp c;
    std::size_t width;
    if (!comparison_op(c, width)) return first;
    auto n = std::make_shared<Node>();
    n->op = Op::Compare;
    n->pos = peek().pos;
    n->kids.push_back(first);
    while (comparison_op(c, width)) {
      at_ += width;
      n->cmps.push_back(c);
      n->kids.push_back(bit_or());
    }
    return n;
  }

  template <typename Next>
  NodePtr binary(Next next_level, std::initializer_list<std::pair<const char*, Op>> ops) {
    NodePtr a = (this->*next_level)();
    for (;;) {
      bool found = false;
      for (const auto& [sym, op] : ops) {
        if (is_sym(sym)) {
          const std::size_t pos = next().pos;
          a = make(op, pos, {a, (this->*next_level)()});
          found = true;
          break;
        }
      }
      if (!found) return a;
    }
  }

  NodePtr bit_or() { return binary(&Parser::bit_xor, {{"|", Op::BitOr}}); }
  NodePtr bit_xor() { return binary(&Parser::bit_and, {{"^", Op::BitXor}}); }
  NodePtr bit_and() { return binary(&Parser::shift, {{"&", Op::BitAnd}}); }
  NodePtr shift() { return binary(&Parser::arith, {{"<<", Op::Shl}, {">>", Op::Shr}}); }
  NodePtr arith() { return binary(&Parser::term, {{"+", Op::Add}, {"-", Op::Sub}}); }
  NodePtr term() {
    return binary(&Parser::factor,
                  {{"*", Op::Mul}, {"//", Op::FloorDiv}, {"/", Op::Div}, {"%", Op::Mod}});
  }

  NodePtr factor() {
    Op op;
    if (is_sym("-"))
      op = Op::Neg;
    else if (is_sym("+"))
      op = Op::Pos;
    else if (is_sym("~"))
      op = Op::Invert;
    else
      return power();
    const std::size_t pos = next().pos;  // consume before parsing the operand
    return make(op, pos, {factor()});
  }

  NodePtr power() {
    NodePtr base = postfix();
    if (is_sym("**")) {
      const std::size_t pos = next().pos;
      return make(Op::Pow, pos, {base, factor()});  // right-associative, binds tighter than unary
    }
    return base;
  }

  NodePtr postfix() {
    NodePtr a = atom();
    for (;;) {
      if (is_sym("[")) {
        const std::size_t pos = next().pos;
        NodePtr idx = expr();
        expect_sym("]", "to close the index");
        a = make(Op::Index, pos, {a, idx});
      } else if (is_sym("(")) {
        if (a->op != Op::Name) fail(peek().pos, "only built-in functions can be called");
        const std::size_t pos = next().pos;
        auto call = std::make_shared<Node>();
        call->op = Op::Call;
        call->pos = a->pos;
        call->name = a->name;
        // The callee is a function, not a free name.
        if (auto it = std::find(names.begin(), names.end(), a->name);
            it != names.end() && --name_uses_[a->name] == 0)
          names.erase(it);
        if (!is_sym(")")) {
          call->kids.push_back(expr());
          while (is_sym(",")) {
            next();
            call->kids.push_back(expr());
          }
        }
        expect_sym(")", "to close the call");
        (void)pos;
        a = call;
      } else {
        return a;
      }
    }
  }

  NodePtr atom() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int:
      case Tok::Float:
      case Tok::Str: {
        next();
        auto n = std::make_shared<Node>();
        n->op = Op::Const;
        n->pos = t.pos;
        n->value = t.value;
        return n;
      }
      case Tok::Name: {
        next();
        auto n = std::make_shared<Node>();
        n->pos = t.pos;
        if (t.text == "True" || t.text == "False") {
          n->op = Op::Const;
          n->value = Value(t.text == "True");
          return n;
        }
        static const char* const kKeywords[] = {"and", "or", "not", "if", "else", "in"};
        for (const char* k : kKeywords)
          if (t.text == k) fail(t.pos, fmt::format("'{}' needs an operand before it", t.text));
        n->op = Op::Name;
        n->name = t.text;
        if (name_uses_[t.text]++ == 0) names.push_back(t.text);
        return n;
      }
      case Tok::Sym: {
        if (t.text == "(" || t.text == "[") {
          const bool is_list = t.text == "[";
          const std::size_t pos = next().pos;
          const char* close = is_list ? "]" : ")";
          std::vector<NodePtr> items;
          bool trailing_comma = false;
          if (!is_sym(close)) {
            items.push_back(expr());
            while (is_sym(",")) {
              next();
              trailing_comma = true;
              if (is_sym(close)) break;
              items.push_back(expr());
              trailing_comma = false;
            }
          }
          expect_sym(close, is_list ? "to close the list" : "to close the parenthesis");
          if (!is_list && items.size() == 1 && !trailing_comma) return items[0];
          if (!is_list && items.empty()) fail(pos, "empty parentheses are not a value");
          return make(Op::List, pos, std::move(items));  // tuples act as lists
        }
        fail(t.pos, fmt::format("unexpected '{}'", t.text));
      }
      case Tok::End:
        fail(t.pos, "the expression ends too early");
    }
    fail(t.pos, "unexpected token");
  }

  std::string_view text_;
  std::vector<Token> toks_;
  std::size_t at_ = 0;
  std::map<std::string, int> name_uses_;
};

// ------------------------------------------------------------------------------- evaluation

class Evaluator {
 public:
  Evaluator(const std::string& text, const Scope& scope) : text_(text), scope_(scope) {}

  Value eval(const Node& n) const {
    try {
      return eval_unchecked(n);
    } catch (const ExpressionError&) {
      throw;
    } catch (const Error& e) {  // a Value accessor's type error: attach the position
      throw ExpressionError(text_, n.pos, e.what());
    }
  }

 private:
  [[noreturn]] void fail(const Node& n, std::string problem) const {
    throw ExpressionError(text_, n.pos, std::move(problem));
  }

  static bool is_intlike(const Value& v) {
    return v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Bool;
  }

  Value arithmetic(const Node& n, const Value& a, const Value& b) const {
    if (n.op == Op::Add && a.kind() == Value::Kind::String && b.kind() == Value::Kind::String)
      return Value(a.as_string() + b.as_string());
    if (!numeric_like(a) || !numeric_like(b))
      fail(n, fmt::format("cannot apply the operator to {} and {}", a.repr(), b.repr()));
    const bool ints = is_intlike(a) && is_intlike(b);
    if (ints) {
      const std::int64_t x = a.as_int(), y = b.as_int();
      std::int64_t r = 0;
      switch (n.op) {
        case Op::Add:
          if (__builtin_add_overflow(x, y, &r)) fail(n, "integer overflow");
          return Value(r);
        case Op::Sub:
          if (__builtin_sub_overflow(x, y, &r)) fail(n, "integer overflow");
          return Value(r);
        case Op::Mul:
          if (__builtin_mul_overflow(x, y, &r)) fail(n, "integer overflow");
          return Value(r);
        case Op::Div:
          if (y == 0) fail(n, "division by zero");
          return Value(static_cast<double>(x) / static_cast<double>(y));
        case Op::FloorDiv: {
          if (y == 0) fail(n, "integer division by zero");
          std::int64_t q = x / y;
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          return Value(q);
        }
        case Op::Mod: {
          if (y == 0) fail(n, "integer modulo by zero");
          std::int64_t m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) m += y;
          return Value(m);
        }
        case Op::Pow: {
          if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
          std::int64_t p = 1;
          for (std::int64_t i = 0; i < y; ++i)
            if (__builtin_mul_overflow(p, x, &p)) fail(n, "integer overflow");
          return Value(p);
        }
        case Op::BitAnd:
          return Value(x & y);
        case Op::BitOr:
          return Value(x | y);
        case Op::BitXor:
          return Value(x ^ y);
        case Op::Shl:
          if (y < 0 || y > 62) fail(n, "shift count out of range");
          if (((x << y) >> y) != x) fail(n, "integer overflow");
          return Value(x << y);
        case Op::Shr:
          if (y < 0) fail(n, "negative shift count");
          return Value(y > 63 ? (x < 0 ? -1 : 0) : x >> y);
        default:
          break;
      }
    }
    const double x = a.as_double(), y = b.as_double();
    switch (n.op) {
      case Op::Add:
        return Value(x + y);
      case Op::Sub:
        return Value(x - y);
      case Op::Mul:
        return Value(x * y);
      case Op::Div:
        if (y == 0) fail(n, "division by zero");
        return Value(x / y);
      case Op::FloorDiv:
        if (y == 0) fail(n, "division by zero");
        return Value(std::floor(x / y));
      case Op::Mod: {
        if (y == 0) fail(n, "modulo by zero");
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value(m);
      }
      case Op::Pow:
        return Value(std::pow(x, y));
      default:
        fail(n, "bitwise operators need integers");
    }
  }

  bool compare(const Node& n, Cmp c, const Value& a, const Value& b) const {
    switch (c) {
      case Cmp::Eq:
        return a == b;
      case Cmp::Ne:
        return !(a == b);
      case Cmp::In:
      case Cmp::NotIn: {
        if (b.kind() == Value::Kind::List) {
          const auto& l = b.as_list();
          const bool found = std::find(l.begin(), l.end(), a) != l.end();
          return c == Cmp::In ? found : !found;
        }
        if (b.kind() == Value::Kind::String && a.kind() == Value::Kind::String) {
          const bool found = b.as_string().find(a.as_string()) != std::string::npos;
          return c == Cmp::In ? found : !found;
        }
        fail(n, fmt::format("'in' needs a list or string on its right, got {}", b.repr()));
      }
      default:
        break;
    }
    if (rank_of(a) != rank_of(b) || rank_of(a) == 2)
      fail(n, fmt::format("cannot order {} and {}", a.repr(), b.repr()));
    switch (c) {
      case Cmp::Lt:
        return a < b;
      case Cmp::Le:
        return !(b < a);
      case Cmp::Gt:
        return b < a;
      case Cmp::Ge:
        return !(a < b);
      default:
        return false;
    }
  }

  Value call(const Node& n) const {
    std::vector<Value> args;
    args.reserve(n.kids.size());
    for (const auto& k : n.kids) args.push_back(eval(*k));
    const std::string& f = n.name;
    auto want = [&](std::size_t lo, std::size_t hi) {
      if (args.size() < lo || args.size() > hi)
        fail(n, fmt::format("{}() takes {} argument(s), got {}", f,
                            lo == hi ? std::to_string(lo) : fmt::format("{} to {}", lo, hi),
                            args.size()));
    };
    if (f == "min" || f == "max") {
      if (args.empty()) fail(n, fmt::format("{}() needs at least one argument", f));
      std::vector<Value> items = args;
      if (args.size() == 1) items = args[0].as_list();
      if (items.empty()) fail(n, fmt::format("{}() of an empty list", f));
      Value best = items[0];
      for (std::size_t i = 1; i < items.size(); ++i) {
        if (rank_of(items[i]) != rank_of(best)) fail(n, fmt::format("{}() of mixed types", f));
        if (f == "min" ? items[i] < best : best < items[i]) best = items[i];
      }
      return best;
    }
    if (f == "abs") {
      want(1, 1);
      if (is_intlike(args[0])) return Value(std::abs(args[0].as_int()));
      return Value(std::abs(args[0].as_double()));
    }
    if (f == "int") {
      want(1, 1);
      if (args[0].kind() == Value::Kind::String) {
        const std::string& s = args[0].as_string();
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end) fail(n, fmt::format("int() cannot parse {}", args[0].repr()));
        return Value(static_cast<std::int64_t>(v));
      }
      if (is_intlike(args[0])) return Value(args[0].as_int());
      const double d = args[0].as_double();
      if (!std::isfinite(d) || std::abs(d) > 9.0e18) fail(n, "int() of a non-finite float");
      return Value(static_cast<std::int64_t>(std::trunc(d)));
    }
    if (f == "float") {
      want(1, 1);
      return Value(args[0].as_double());
    }
    if (f == "bool") {
      want(1, 1);
      return Value(args[0].truthy());
    }
    if (f == "len") {
      want(1, 1);
      if (args[0].kind() == Value::Kind::String)
        return Value(static_cast<std::int64_t>(args[0].as_string().size()));
      return Value(static_cast<std::int64_t>(args[0].as_list().size()));
    }
    if (f == "round") {
      want(1, 1);
      return Value(static_cast<std::int64_t>(std::nearbyint(args[0].as_double())));  // half-even
    }
    if (f == "ceil" || f == "floor") {  // math.ceil / math.floor, written without the module
      want(1, 1);
      const double d = args[0].as_double();
      return Value(static_cast<std::int64_t>(f == "ceil" ? std::ceil(d) : std::floor(d)));
    }
    fail(n, fmt::format("unknown function '{}'; known: min, max, abs, int, float, bool, len, "
                        "round, ceil, floor",
                        f));
  }

  Value eval_unchecked(const Node& n) const {
    switch (n.op) {
      case Op::Const:
        return n.value;
      case Op::Name: {
        if (const Value* v = scope_.find(n.name)) return *v;
        fail(n, fmt::format("unknown name '{}'", n.name));
      }
      case Op::List: {
        Value::List l;
        l.reserve(n.kids.size());
        for (const auto& k : n.kids) l.push_back(eval(*k));
        return Value(std::move(l));
      }
      case Op::Index: {
        const Value c = eval(*n.kids[0]);
        const Value i = eval(*n.kids[1]);
        if (!is_intlike(i)) fail(n, fmt::format("an index must be an integer, got {}", i.repr()));
        std::int64_t k = i.as_int();
        const auto size = static_cast<std::int64_t>(
            c.kind() == Value::Kind::String ? c.as_string().size() : c.as_list().size());
        if (k < 0) k += size;
        if (k < 0 || k >= size)
          fail(n, fmt::format("index {} is out of range for {}", i.as_int(), c.repr()));
        if (c.kind() == Value::Kind::String) return Value(std::string(1, c.as_string()[k]));
        return c.as_list()[k];
      }
      case Op::Call:
        return call(n);
      case Op::Neg: {
        const Value a = eval(*n.kids[0]);
        if (is_intlike(a)) {
          if (a.as_int() == std::numeric_limits<std::int64_t>::min()) fail(n, "integer overflow");
          return Value(-a.as_int());
        }
        return Value(-a.as_double());
      }
      case Op::Pos: {
        const Value a = eval(*n.kids[0]);
        if (is_intlike(a)) return Value(a.as_int());
        return Value(a.as_double());
      }
      case Op::Invert:
        return Value(~eval(*n.kids[0]).as_int());
      case Op::Not:
        return Value(!eval(*n.kids[0]).truthy());
      case Op::And: {
        Value a = eval(*n.kids[0]);
        return a.truthy() ? eval(*n.kids[1]) : a;
      }
      case Op::Or: {
        Value a = eval(*n.kids[0]);
        return a.truthy() ? a : eval(*n.kids[1]);
      }
      case Op::IfElse:
        return eval(*n.kids[0]).truthy() ? eval(*n.kids[1]) : eval(*n.kids[2]);
      case Op::Compare: {
        Value left = eval(*n.kids[0]);
        for (std::size_t i = 0; i < n.cmps.size(); ++i) {
          Value right = eval(*n.kids[i + 1]);
          if (!compare(*n.kids[i + 1], n.cmps[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      default:
        return arithmetic(n, eval(*n.kids[0]), eval(*n.kids[1]));
    }
  }

  const std::string& text_;
  const Scope& scope_;
};

}  // namespace

Expression::Expression() : text_("0") {
  auto n = std::make_shared<Node>();
  n->op = Op::Const;
  n->pos = 0;
  n->value = Value(0);
  root_ = n;
}

Expression Expression::parse(std::string_view text) {
  Parser p(text);
  Expression e;
  e.root_ = p.parse_all();
  e.text_ = std::string(text);
  e.names_ = std::move(p.names);
  std::sort(e.names_.begin(), e.names_.end());
  return e;
}

Value Expression::evaluate(const Scope& scope) const {
  return Evaluator(text_, scope).eval(*root_);
}

Value evaluate_constant(std::string_view text) {
  MapScope empty;
  return Expression::parse(text).evaluate(empty);
}

}  // namespace ktune::tune
