// Input that used to crash or hang the expression engine: each must now give an ExpressionError
// (or a ktune::Error) naming the problem, or simply work.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "ktune/spec/expression.hpp"

namespace ktune::tune {
namespace {

Value eval(std::string_view text, const MapScope& scope = MapScope()) {
  return Expression::parse(text).evaluate(scope);
}

// The problem of the ExpressionError that parsing or evaluating `text` throws.
std::string problem_of(std::string_view text, const MapScope& scope = MapScope()) {
  try {
    eval(text, scope);
  } catch (const ExpressionError& e) {
    return e.problem();
  }
  ADD_FAILURE() << "expected an error from: " << text.substr(0, 80);
  return "";
}

std::string repeated(std::string_view piece, std::size_t times) {
  std::string s;
  s.reserve(piece.size() * times);
  for (std::size_t i = 0; i < times; ++i) s += piece;
  return s;
}

MapScope with_min() {
  MapScope s;
  s.set("m", Value(std::numeric_limits<std::int64_t>::min()));
  return s;
}

// INT64_MIN // -1 and INT64_MIN % -1 raised SIGFPE.
TEST(ExpressionLimits, IntegerDivisionOfTheMinimumDoesNotTrap) {
  const MapScope s = with_min();
  try {
    eval("m // -1", s);
    ADD_FAILURE() << "expected an overflow";
  } catch (const ExpressionError& e) {
    EXPECT_EQ(e.position(), 2u);
    EXPECT_EQ(e.problem(), "integer overflow: -9223372036854775808 // -1 does not fit in 64 bits");
  }
  EXPECT_EQ(eval("m % -1", s).as_int(), 0);  // Python: 0, which fits
  EXPECT_EQ(eval("7 // -1").as_int(), -7);
  EXPECT_NE(problem_of("(-9223372036854775807 - 1) // -1").find("integer overflow"),
            std::string::npos);
}

TEST(ExpressionLimits, EveryIntegerOperationIsChecked) {
  const MapScope s = with_min();
  for (const char* text : {"m - 1", "m + -1", "m * -1", "-m", "abs(m)", "m * m", "2 ** 63",
                           "3 ** 40", "(-2) ** 64", "1 << 63", "3 << 62", "1 << 64", "int(1e19)",
                           "round(-1e19)", "ceil(1e300)", "int('99999999999999999999')"})
    EXPECT_NE(problem_of(text, s).find("does not fit"), std::string::npos) << text;
  EXPECT_EQ(eval("(-2) ** 63").as_int(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(eval("3 ** 39").as_int(), 4052555153018976267);
  EXPECT_EQ(eval("-1 << 63").as_int(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(eval("0 << 100").as_int(), 0);
  EXPECT_EQ(eval("m + 1", s).as_int(), std::numeric_limits<std::int64_t>::min() + 1);
}

// 0 ** 9223372036854775807 multiplied 9e18 times.
TEST(ExpressionLimits, HugeExponentsReturnAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(eval("0 ** 9223372036854775807").as_int(), 0);
  EXPECT_EQ(eval("1 ** 9223372036854775807").as_int(), 1);
  EXPECT_EQ(eval("(-1) ** 9223372036854775807").as_int(), -1);
  EXPECT_EQ(eval("(-1) ** 9223372036854775806").as_int(), 1);
  EXPECT_EQ(eval("2 ** 62").as_int(), 4611686018427387904);
  EXPECT_NE(problem_of("2 ** 9223372036854775807").find("integer overflow"), std::string::npos);
  EXPECT_DOUBLE_EQ(eval("2 ** -9223372036854775807").as_double(), 0.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

std::string nesting_message() {
  return "the expression is nested more than " + std::to_string(kMaxExpressionDepth) +
         " levels deep; simplify it";
}

// 5,000 nested parentheses, and 200,000 unary operators, overflowed the stack.
TEST(ExpressionLimits, DeepNestingIsAClearError) {
  EXPECT_EQ(problem_of(repeated("(", 5000) + "1" + repeated(")", 5000)), nesting_message());
  EXPECT_EQ(problem_of(repeated("[", 5000) + repeated("]", 5000)), nesting_message());
  EXPECT_EQ(problem_of(repeated("-", 200000) + "1"), nesting_message());
  EXPECT_EQ(problem_of(repeated("not ", 100000) + "1"), nesting_message());
  EXPECT_EQ(problem_of("2" + repeated(" ** 2", 5000)), nesting_message());
  EXPECT_EQ(problem_of("[1]" + repeated("[0]", 5000)), nesting_message());
  EXPECT_EQ(problem_of(repeated("max(", 5000) + "1" + repeated(")", 5000)), nesting_message());
  EXPECT_EQ(problem_of("1" + repeated(" if 1 else 1", 5000)), nesting_message());
  EXPECT_EQ(problem_of("[1" + repeated(" for x in [1]", 5000) + "]"), nesting_message());
  {
    const std::string text = repeated("(", 5000) + "1" + repeated(")", 5000);
    try {
      Expression::parse(text);
    } catch (const ExpressionError& e) {
      EXPECT_EQ(e.position(), kMaxExpressionDepth);  // the first token nested too deep
    }
  }
  // Just under the limit still works.
  const std::size_t ok = kMaxExpressionDepth - 1;
  EXPECT_EQ(eval(repeated("(", ok) + "1" + repeated(")", ok)).as_int(), 1);
  EXPECT_EQ(eval(repeated("-", ok - 1) + "1").as_int(), (ok - 1) % 2 ? -1 : 1);
}

// The worst nesting the limit allows, with every precedence level at each level, must fit in a
// thread's stack when parsed and evaluated.
TEST(ExpressionLimits, TheDeepestAllowedExpressionWorks) {
  MapScope s;
  s.set("a", 1);
  std::string text = "a";
  // Each level: a or a and not a < -a | a ^ a & a << a + a * ~+(...)[0] ** a
  const std::size_t levels = kMaxExpressionDepth / 6;
  for (std::size_t i = 0; i < levels; ++i)
    text = "a or a and not a < -a | a ^ a & a << a + a * ~+[" + text + "][0] ** a";
  EXPECT_EQ(eval(text, s).as_int(), 1);
}

// A 20,000-term sum built a tree 20,000 deep whose evaluation overflowed the stack.
TEST(ExpressionLimits, LongFlatChainsWork) {
  MapScope s;
  s.set("a", 1);
  s.set("b", 0);
  EXPECT_EQ(eval("a" + repeated(" + a", 19999), s).as_int(), 20000);
  EXPECT_EQ(eval("a" + repeated(" - a + a", 10000), s).as_int(), 1);
  EXPECT_EQ(eval("a" + repeated(" * a", 19999), s).as_int(), 1);
  EXPECT_EQ(eval("b" + repeated(" or b", 19999) + " or 7", s).as_int(), 7);
  EXPECT_EQ(eval("a" + repeated(" and a", 19999), s).as_int(), 1);
  EXPECT_TRUE(eval("0" + repeated(" < a", 20000), s).truthy() == false);
  EXPECT_EQ(eval("[" + repeated("a, ", 20000) + "a][-1]", s).as_int(), 1);
  EXPECT_EQ(Expression::parse("a" + repeated(" + b", 20000)).names(),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(eval(repeated("1 + ", 20000) + "1").as_int(), 20001);  // folded while parsing
}

// range(10**12) tried to allocate terabytes; a comprehension over it looped for hours. (The
// cases fail before building much, except the comprehension, which builds the limit: 400 MB.)
TEST(ExpressionLimits, ListBuildingIsBounded) {
  const std::string limit = "more than " + std::to_string(kMaxListElements) + " list elements";
  for (const char* text :
       {"range(10**12)", "len(range(-9223372036854775807 - 1, 9223372036854775807))",
        "[0] * 10**12", "[0, 1] * 9223372036854775807", "'ab' * 10**12", "10**12 * [0]",
        "[i for i in range(10**6) for j in range(10**6)]"})
    EXPECT_NE(problem_of(text).find(limit), std::string::npos) << text;
  EXPECT_NE(problem_of("range(10**12)").find("range() of 1000000000000 elements would build"),
            std::string::npos);
  // Summing lists concatenates them again and again: charged for every copy.
  MapScope s;
  s.set("rows", Value(Value::List(100000, Value(Value::List(1000, Value(0))))));
  EXPECT_NE(problem_of("sum(rows, [])", s).find(limit), std::string::npos);
}

// Found by the fuzzer (fuzz/corpus/expression/empty_repeated): an empty string or list repeated
// 10^18 times looped 10^18 times to build nothing.
TEST(ExpressionLimits, RepeatingNothingReturnsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(eval("'' * 9223372036854775807").as_string(), "");
  EXPECT_EQ(eval("9223372036854775807 * []").as_list().size(), 0u);
  EXPECT_EQ(eval("\"\" * 55 * 854775808").as_string(), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

// Found by the fuzzer (fuzz/corpus/expression/huge_value_in_a_message): an error about a list of
// millions of elements rendered all of it into its message, and repeating a list of lists did not
// count the nested elements it shares out.
TEST(ExpressionLimits, MessagesShowALongValueCutShort) {
  const auto start = std::chrono::steady_clock::now();
  const std::string p = problem_of("[[0] * 10**6] * 5 < 0");
  EXPECT_NE(p.find("cannot order [[0, 0, 0"), std::string::npos) << p.substr(0, 200);
  EXPECT_LT(p.size(), 300u);
  EXPECT_NE(problem_of("[[0] * 10**6] * 20").find("list elements"), std::string::npos);
  MapScope s;
  s.set("ProblemSize", Value(Value::List{Value(4096)}));
  EXPECT_NE(problem_of("ProblemSize[65*[ 1212*[4088]* 10]* 20<0]", s).find("list elements"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ExpressionLimits, WorkIsBounded) {
  const std::string limit =
      "more than " + std::to_string(kMaxEvaluationSteps) + " evaluation steps";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(problem_of("[0 for i in range(10**6) for j in range(10**6) if 0]").find(limit),
            std::string::npos);
  MapScope s;
  s.set("r", evaluate_constant("range(10**6)"));
  EXPECT_NE(problem_of("[sum(r) for i in r]", s).find(limit), std::string::npos);
  EXPECT_NE(problem_of("[i in r for i in r]", s).find(limit), std::string::npos);
  EXPECT_NE(problem_of("[max(r) for i in r]", s).find(limit), std::string::npos);
  // A comprehension's iterations are charged by its size, so a long body cannot multiply them.
  EXPECT_NE(problem_of("[" + repeated("i + ", 1000) + "i for i in range(10**6)]").find(limit),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// from_json recursed once per JSON list level: 60,000 levels overflowed the stack.
TEST(ExpressionLimits, DeepJsonIsAClearError) {
  const nlohmann::json deep =
      nlohmann::json::parse(repeated("[", 60000) + "1" + repeated("]", 60000));
  try {
    (void)deep.get<Value>();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than " + std::to_string(kMaxExpressionDepth) +
                                         " deep"),
              std::string::npos)
        << e.what();
  }
  const nlohmann::json fine = nlohmann::json::parse(repeated("[", 100) + "1" + repeated("]", 100));
  EXPECT_EQ(fine.get<Value>().as_list().size(), 1u);
  EXPECT_THROW(nlohmann::json::parse("18446744073709551615").get<Value>(), Error);
}

}  // namespace
}  // namespace ktune::tune
