// A winner's field trial: alternating arms, a verdict only past the spread, and times that cannot
// be right (none, negative, NaN) never counted.
#include "ktune/route/field_trial.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ktune::route {
namespace {

Verdict run(double winner_ns, double fallback_ns, double jitter_ns, int per_arm = 8) {
  FieldTrial t(per_arm);
  for (int i = 0; t.verdict() == Verdict::trying && i < 4 * per_arm; ++i) {
    const Arm arm = t.next_arm();
    const double wobble = (i % 3 - 1) * jitter_ns;
    t.add(arm, (arm == Arm::winner ? winner_ns : fallback_ns) + wobble);
  }
  return t.verdict();
}

TEST(FieldTrial, ArmsAlternateFromTheWinner) {
  FieldTrial t;
  EXPECT_EQ(t.next_arm(), Arm::winner);
  EXPECT_EQ(t.next_arm(), Arm::fallback);
  EXPECT_EQ(t.next_arm(), Arm::winner);
}

TEST(FieldTrial, AWinnerFasterInTheProgramStays) {
  EXPECT_EQ(run(90e3, 100e3, 1e3), Verdict::routed);
}

TEST(FieldTrial, AWinnerSlowerOrTiedInTheProgramIsDemoted) {
  EXPECT_EQ(run(105e3, 100e3, 1e3), Verdict::demoted);
  EXPECT_EQ(run(100e3, 100e3, 0), Verdict::demoted);
  // Faster by less than the spread is a tie.
  EXPECT_EQ(run(99.5e3, 100e3, 3e3), Verdict::demoted);
}

TEST(FieldTrial, NoVerdictBeforeBothArmsHaveTheirTimes) {
  FieldTrial t(3);
  for (int i = 0; i < 10; ++i) t.add(Arm::winner, 1.0);
  t.add(Arm::fallback, 2.0);
  t.add(Arm::fallback, 2.0);
  EXPECT_EQ(t.verdict(), Verdict::trying);
  t.add(Arm::fallback, 2.0);
  EXPECT_EQ(t.verdict(), Verdict::routed);
  EXPECT_DOUBLE_EQ(t.winner_ns(), 1.0);
  EXPECT_DOUBLE_EQ(t.fallback_ns(), 2.0);
}

TEST(FieldTrial, ImpossibleTimesAreNotCounted) {
  FieldTrial t(1);
  t.add(Arm::winner, std::numeric_limits<double>::quiet_NaN());
  t.add(Arm::winner, -5);
  t.add(Arm::winner, 0);
  t.add(Arm::fallback, std::numeric_limits<double>::infinity());
  t.add(Arm::fallback, 10);
  EXPECT_EQ(t.verdict(), Verdict::trying);
  t.add(Arm::winner, 20);
  EXPECT_EQ(t.verdict(), Verdict::demoted);
}

}  // namespace
}  // namespace ktune::route
