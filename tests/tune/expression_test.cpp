#include "ktune/tune/expression.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ktune::tune {
namespace {

Value eval(std::string_view text, const MapScope& scope = MapScope()) {
  return Expression::parse(text).evaluate(scope);
}

// Runs `text` expecting an ExpressionError and returns it.
ExpressionError error_of(std::string_view text, const MapScope& scope = MapScope()) {
  try {
    eval(text, scope);
  } catch (const ExpressionError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error from: " << text;
  return ExpressionError(std::string(text), 0, "none");
}

TEST(Expression, PythonIntegerArithmetic) {
  EXPECT_EQ(eval("7 // 2").as_int(), 3);
  EXPECT_EQ(eval("-7 // 2").as_int(), -4);  // floors, unlike C
  EXPECT_EQ(eval("7 // -2").as_int(), -4);
  EXPECT_EQ(eval("-7 % 3").as_int(), 2);  // sign of the divisor
  EXPECT_EQ(eval("7 % -3").as_int(), -2);
  EXPECT_EQ(eval("2 ** 10").as_int(), 1024);
  EXPECT_EQ(eval("-2 ** 2").as_int(), -4);       // ** binds tighter than unary minus
  EXPECT_EQ(eval("2 ** 3 ** 2").as_int(), 512);  // right-associative
  EXPECT_EQ(eval("1 + 2 * 3 - 4").as_int(), 3);
  EXPECT_EQ(eval("(262144 // 16) // 3").as_int(), 5461);
  EXPECT_EQ(eval("1 << 4 | 1").as_int(), 17);
  EXPECT_EQ(eval("6 & 3 ^ 1").as_int(), 3);
}

TEST(Expression, TrueDivisionAndFloats) {
  const Value v = eval("7 / 2");
  EXPECT_EQ(v.kind(), Value::Kind::Float);
  EXPECT_DOUBLE_EQ(v.as_double(), 3.5);
  EXPECT_DOUBLE_EQ(eval("7.5 // 2").as_double(), 3.0);
  EXPECT_DOUBLE_EQ(eval("1e3 + .5").as_double(), 1000.5);
  EXPECT_EQ(eval("4 / 2").kind(), Value::Kind::Float);
}

TEST(Expression, BooleanLogicAndChainedComparisons) {
  MapScope s;
  s.set("a", 4);
  s.set("b", 64);
  EXPECT_TRUE(eval("32 <= a * b <= 1024", s).truthy());
  s.set("b", 512);
  EXPECT_FALSE(eval("32 <= a * b <= 1024", s).truthy());
  EXPECT_TRUE(eval("a > 1 or b == 0", s).truthy());
  EXPECT_FALSE(eval("not a > 1 and b", s).truthy());
  EXPECT_TRUE(eval("1 < 2 < 3 != 4", s).truthy());
  EXPECT_FALSE(eval("3 > 2 > 2", s).truthy());
  EXPECT_EQ(eval("0 or 5").as_int(), 5);  // Python returns the operand
  EXPECT_EQ(eval("3 and 0").as_int(), 0);
  EXPECT_TRUE(eval("a in [1, 2, 4]", s).truthy());
  EXPECT_TRUE(eval("a not in (1, 2)", s).truthy());
  EXPECT_EQ(eval("1 if a > 3 else 2", s).as_int(), 1);
}

TEST(Expression, BuiltinsListsAndIndexing) {
  MapScope s;
  s.set("ProblemSize", Value(Value::List{25000, 2048, 1}));
  EXPECT_EQ(eval("ProblemSize[0] * ProblemSize[1]", s).as_int(), 51200000);
  EXPECT_EQ(eval("ProblemSize[-1]", s).as_int(), 1);
  EXPECT_EQ(eval("min(3, 1, 2)").as_int(), 1);
  EXPECT_EQ(eval("max([3, 9, 2])").as_int(), 9);
  EXPECT_EQ(eval("abs(-5)").as_int(), 5);
  EXPECT_EQ(eval("int(7.9)").as_int(), 7);
  EXPECT_EQ(eval("len([1, 2, 3])").as_int(), 3);
  EXPECT_EQ(eval("ceil(7 / 2)").as_int(), 4);
  EXPECT_EQ(eval("'ab' + 'c'").as_string(), "abc");
  EXPECT_TRUE(eval("'x' == \"x\"").truthy());
  const Value l = evaluate_constant("[1, 2, 4, 8,]");
  ASSERT_EQ(l.as_list().size(), 4u);
  EXPECT_EQ(l.repr(), "[1, 2, 4, 8]");
  EXPECT_EQ(evaluate_constant("[True, 'a', 1.5]").repr(), "[True, 'a', 1.5]");
}

TEST(Expression, NamesAreTheFreeVariablesOnly) {
  const Expression e = Expression::parse("max(bx, 2) * by + bx // min(tx, 4)");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"bx", "by", "tx"}));
  EXPECT_EQ(e.text(), "max(bx, 2) * by + bx // min(tx, 4)");
}

TEST(Expression, PythonEquality) {
  EXPECT_TRUE(eval("1 == 1.0").truthy());
  EXPECT_TRUE(eval("True == 1").truthy());
  EXPECT_FALSE(eval("'1' == 1").truthy());
  EXPECT_TRUE(Value(2) == Value(2.0));
  EXPECT_TRUE(Value(1) < Value(1.5));
}

TEST(Expression, SyntaxErrorsNameThePosition) {
  {
    const ExpressionError e = error_of("a * (b + 2");
    EXPECT_EQ(e.position(), 10u);
    EXPECT_NE(std::string(e.what()).find("expected ')'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("position 10"), std::string::npos) << e.what();
  }
  {
    const ExpressionError e = error_of("a $ b");
    EXPECT_EQ(e.position(), 2u);
    EXPECT_NE(std::string(e.what()).find("unexpected character '$'"), std::string::npos);
  }
  EXPECT_EQ(error_of("1 +").position(), 3u);
  EXPECT_EQ(error_of("a b").position(), 2u);
  EXPECT_EQ(error_of("").position(), 0u);
  EXPECT_EQ(error_of("3x").position(), 1u);
  EXPECT_EQ(error_of("x if y").position(), 6u);
  EXPECT_EQ(error_of("'open").position(), 0u);
  EXPECT_EQ(error_of("and 1").position(), 0u);
}

TEST(Expression, EvaluationErrorsNameThePositionAndCause) {
  MapScope s;
  s.set("a", 0);
  {
    const ExpressionError e = error_of("4 // a", s);
    EXPECT_EQ(e.position(), 2u);
    EXPECT_NE(e.problem().find("division by zero"), std::string::npos);
  }
  {
    const ExpressionError e = error_of("a + missing", s);
    EXPECT_EQ(e.position(), 4u);
    EXPECT_EQ(e.problem(), "unknown name 'missing'");
  }
  EXPECT_EQ(error_of("5 % a", s).position(), 2u);
  EXPECT_EQ(error_of("'s' < 1").position(), 6u);
  EXPECT_NE(error_of("frob(1)").problem().find("unknown function 'frob'"), std::string::npos);
  EXPECT_NE(error_of("[1][3]").problem().find("out of range"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775807 + 1").problem().find("overflow"), std::string::npos);
  EXPECT_NE(error_of("1.5 | 1").problem().find("integers"), std::string::npos);
}

TEST(Expression, ErrorContextNamesFileAndField) {
  const ExpressionError e = error_of("a *");
  const Error ctx = e.with_context("T1.json", "ConfigurationSpace.Conditions[2].Expression");
  EXPECT_EQ(std::string(ctx.what()),
            "T1.json: field ConfigurationSpace.Conditions[2].Expression: in expression \"a *\" at "
            "position 3: the expression ends too early");
}

TEST(Expression, ValueJsonRoundTrip) {
  const Value v = evaluate_constant("[1, 2.5, True, 'x', [3]]");
  const nlohmann::json j = v;
  EXPECT_EQ(j.dump(), R"([1,2.5,true,"x",[3]])");
  EXPECT_EQ(j.get<Value>(), v);
  EXPECT_THROW(nlohmann::json::object().get<Value>(), Error);
}

}  // namespace
}  // namespace ktune::tune
