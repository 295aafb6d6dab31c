// The tracer's capture schedule on made-up times: --delay and --duration, and periodic windows
// (--period, --window), with no GPU and no clock.
#include "capture_schedule.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace ktune::trace {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

TraceWindow periodic(double period_s, double window_s, double delay_s = 0, double duration_s = 0) {
  TraceWindow w;
  w.period_s = period_s;
  w.window_s = window_s;
  w.delay_s = delay_s;
  w.duration_s = duration_s;
  return w;
}

TEST(CaptureSchedule, WholeRunByDefault) {
  const CaptureSchedule s{TraceWindow{}};
  EXPECT_FALSE(s.periodic());
  for (double t : {0.0, 1.0, 1e6}) {
    const auto st = s.at(t);
    EXPECT_TRUE(st.capturing);
    EXPECT_EQ(st.next_change_s, kNever);
    EXPECT_EQ(st.window, 0u);
  }
}

TEST(CaptureSchedule, DelayThenDuration) {
  TraceWindow w;
  w.delay_s = 2;
  w.duration_s = 3;
  const CaptureSchedule s(w);
  EXPECT_FALSE(s.at(0).capturing);
  EXPECT_EQ(s.at(0).next_change_s, 2);
  EXPECT_TRUE(s.at(2).capturing);
  EXPECT_EQ(s.at(2).next_change_s, 5);
  EXPECT_TRUE(s.at(4.999).capturing);
  EXPECT_FALSE(s.at(5).capturing);
  EXPECT_EQ(s.at(5).next_change_s, kNever);
}

TEST(CaptureSchedule, PeriodicWindowsOpenEveryPeriod) {
  const CaptureSchedule s(periodic(60, 2));
  EXPECT_TRUE(s.periodic());
  struct Case {
    double t;
    bool capturing;
    std::uint64_t window;
    double next;
  };
  for (const Case& c : {Case{0, true, 0, 2}, Case{1.9, true, 0, 2}, Case{2, false, 0, 60},
                        Case{59.99, false, 0, 60}, Case{60, true, 1, 62}, Case{61, true, 1, 62},
                        Case{62, false, 1, 120}, Case{600.5, true, 10, 602}}) {
    const auto st = s.at(c.t);
    EXPECT_EQ(st.capturing, c.capturing) << "t=" << c.t;
    EXPECT_EQ(st.window, c.window) << "t=" << c.t;
    EXPECT_DOUBLE_EQ(st.next_change_s, c.next) << "t=" << c.t;
  }
}

TEST(CaptureSchedule, DutyCycleOverManyPeriodsIsWindowOverPeriod) {
  // 5 % duty, as the benchmark runs it: integrate capturing over 20 periods in 1 ms steps.
  const CaptureSchedule s(periodic(2, 0.1));
  int on = 0, steps = 0;
  std::uint64_t last_window = 0;
  for (double t = 0; t < 40; t += 0.001, ++steps) {
    const auto st = s.at(t);
    on += st.capturing;
    EXPECT_GE(st.window, last_window);  // windows only count up
    last_window = st.window;
  }
  EXPECT_NEAR(static_cast<double>(on) / steps, 0.05, 0.001);
  EXPECT_EQ(last_window, 19u);
}

TEST(CaptureSchedule, DelayShiftsAndDurationEndsTheWindows) {
  const CaptureSchedule s(periodic(10, 1, /*delay_s=*/5, /*duration_s=*/25));
  EXPECT_FALSE(s.at(0).capturing);
  EXPECT_EQ(s.at(0).next_change_s, 5);
  EXPECT_TRUE(s.at(5).capturing);
  EXPECT_EQ(s.at(5).window, 0u);
  EXPECT_TRUE(s.at(25.5).capturing);
  EXPECT_EQ(s.at(25.5).window, 2u);
  EXPECT_EQ(s.at(26).next_change_s, kNever);  // the next would open at 35, after the end (30)
  const auto after = s.at(31);
  EXPECT_FALSE(after.capturing);
  EXPECT_EQ(after.window, 2u);
  EXPECT_EQ(after.next_change_s, kNever);
  // The end cuts a window short.
  const CaptureSchedule cut(periodic(10, 4, 0, 12));
  EXPECT_TRUE(cut.at(11).capturing);
  EXPECT_EQ(cut.at(11).next_change_s, 12);
  EXPECT_FALSE(cut.at(12).capturing);
}

TEST(CaptureSchedule, AWindowAsLongAsItsPeriodHandsOverAtOnce) {
  const CaptureSchedule s(periodic(1, 1));
  const auto st = s.at(0.5);
  EXPECT_TRUE(st.capturing);
  EXPECT_EQ(st.next_change_s, 1);
  EXPECT_TRUE(s.at(1).capturing);
  EXPECT_EQ(s.at(1).window, 1u);
}

}  // namespace
}  // namespace ktune::trace
