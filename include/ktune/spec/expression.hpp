#pragma once
// Python-style expressions as the T1 format writes them: constraints ("32 <= a*b <= 1024",
// "x > 1 or y == 0"), grid and block sizes ("(262144 // bx) // tx"), argument sizes
// ("ProblemSize[0]*ProblemSize[1]") and value lists ("[1, 2, 4] + list(range(32, 1025, 32))",
// "[2**i for i in range(6)]"). Integer arithmetic follows Python: `//` floors, `%` takes the sign
// of the divisor, `/` gives a float, `**` of ints is an int (a float for a negative exponent).
// Python's ints are unbounded, ours are 64-bit: a result that does not fit is an ExpressionError,
// never a wrapped value.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/core/error.hpp"

namespace ktune::tune {

// Limits that keep a mistaken or hostile expression from crashing or hanging the process; real
// T1 files stay far below them.
// Parentheses, brackets, calls, unary operators, `**` and comprehension clauses nested deeper than
// this are an ExpressionError (the parser and evaluator recurse once per level). Long flat chains
// of one operator (a + b + c ..., x and y and z ...) are not nesting and have no limit.
inline constexpr std::size_t kMaxExpressionDepth = 256;
// Characters one expression may hold. The longest real T1 restriction is a few thousand; a 45 MB
// one once took 3.1 GB to tokenize before its syntax error at character 16 (1 MiB takes ~70 MB).
inline constexpr std::size_t kMaxExpressionBytes = std::size_t{1} << 20;
// What an ExpressionError quotes of its expression: the part around the position, never all of a
// long one (a 6 MB expression came back as a 6 MB message).
inline constexpr std::size_t kMaxQuotedExpression = 120;
// List elements one evaluation may build (range, comprehensions, `+`, `*` of lists).
inline constexpr std::size_t kMaxListElements = 10'000'000;
// Work one evaluation may do (comprehension iterations weighted by their size, list scans).
inline constexpr std::size_t kMaxEvaluationSteps = 100'000'000;

// One value: int, float, bool, string, or a list of values. Copies are cheap (lists are shared).
class Value {
 public:
  using List = std::vector<Value>;
  enum class Kind { integer, real, boolean, string, list };

  Value() : v_(std::int64_t{0}) {}
  Value(std::int64_t v) : v_(v) {}
  Value(int v) : v_(std::int64_t{v}) {}
  Value(double v) : v_(v) {}
  Value(bool v) : v_(v) {}
  Value(std::string v) : v_(std::move(v)) {}
  Value(const char* v) : v_(std::string(v)) {}
  Value(List v) : v_(std::make_shared<const List>(std::move(v))) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_number() const { return kind() == Kind::integer || kind() == Kind::real; }
  // Accessors throw ktune::Error naming the expected and actual type.
  std::int64_t as_int() const;  // Int or Bool; a Float only when integral
  double as_double() const;     // Int, Float or Bool
  const std::string& as_string() const;
  const List& as_list() const;
  bool truthy() const;  // Python truthiness
  // Python repr: 3, 2.5, True, 'abc', [1, 2].
  std::string repr() const;
  // repr cut to about 60 characters ("[0, 0, 0, ...") for messages: rendering stops there, so a
  // list of millions of elements costs no more than a short one.
  std::string shown() const;
  static const char* kind_name(Kind k);

  // Python equality: 1 == 1.0 == True; strings and lists compare by content.
  friend bool operator==(const Value& a, const Value& b);
  // A total order for sorting and maps: numbers (and bools) by value, then strings, then lists.
  friend bool operator<(const Value& a, const Value& b);

 private:
  // Appends repr to `out`, stopping once `out` is longer than `limit`.
  void append_repr(std::string& out, std::size_t limit) const;
  std::variant<std::int64_t, double, bool, std::string, std::shared_ptr<const List>> v_;
};

void to_json(nlohmann::json& j, const Value& v);
// Numbers, bools, strings and arrays of them, arrays nested at most kMaxExpressionDepth deep;
// anything else throws ktune::Error.
void from_json(const nlohmann::json& j, Value& v);

// A parse or evaluation error. what() is one sentence with the expression text and the 0-based
// position of the offending token; callers that know the file and field prepend them
// (with_context).
class ExpressionError : public Error {
 public:
  ExpressionError(std::string text, std::size_t position, std::string problem);
  const std::string& text() const { return text_; }
  std::size_t position() const { return position_; }
  const std::string& problem() const { return problem_; }
  // "FILE: field FIELD: <this message>", as an Error to throw.
  Error with_context(std::string_view file, std::string_view field) const;

 private:
  std::string text_;
  std::size_t position_;
  std::string problem_;
};

// Where an expression finds its names. find() returns nullptr for an unknown name.
class Scope {
 public:
  virtual ~Scope() = default;
  virtual const Value* find(std::string_view name) const = 0;
};

// A Scope over a name -> value map; `parent` (optional, not owned) is searched when a name is
// missing here, so a configuration can sit on top of problem-wide constants.
class MapScope : public Scope {
 public:
  explicit MapScope(const Scope* parent = nullptr) : parent_(parent) {}
  void set(std::string name, Value v) { values_[std::move(name)] = std::move(v); }
  const Value* find(std::string_view name) const override;

 private:
  std::map<std::string, Value, std::less<>> values_;
  const Scope* parent_;
};

namespace detail {
struct Node;
}

// A parsed expression: immutable, cheap to copy, safe to evaluate from many threads.
class Expression {
 public:
  Expression();  // the constant 0
  // Throws ExpressionError on a syntax error or an unknown function, naming the position.
  // Sub-expressions without names ("-1", "[1, 2, 4]", "range(32, 1025, 32)") are computed here
  // once instead of at every evaluation.
  static Expression parse(std::string_view text);
  // Throws ExpressionError for an unknown name, a type error, a division by zero, an integer
  // overflow or work beyond the limits above.
  Value evaluate(const Scope& scope) const;
  bool test(const Scope& scope) const { return evaluate(scope).truthy(); }
  // The source text, and the free names it reads (sorted, unique; built-in functions and
  // comprehension variables excluded).
  const std::string& text() const { return text_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::string text_;
  std::shared_ptr<const detail::Node> root_;
  std::vector<std::string> names_;
};

// Evaluates `text` with no names in scope: "[1, 2, 4]" -> a List value. Throws ExpressionError.
Value evaluate_constant(std::string_view text);

}  // namespace ktune::tune
