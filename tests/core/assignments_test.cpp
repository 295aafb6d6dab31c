#include "ktune/core/assignments.hpp"

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"

namespace ktune {
namespace {

TEST(Assignments, SplitsInOrderAndSkipsEmptyItems) {
  const auto a = parse_assignments("n=4096,,k=8192,", "--shape", "n=4096,k=8192");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].name, "n");
  EXPECT_EQ(a[0].value, "4096");
  EXPECT_EQ(a[1].name, "k");
  EXPECT_EQ(a[1].value, "8192");
  EXPECT_TRUE(parse_assignments("", "--shape", "n=1").empty());
}

TEST(Assignments, ValuesMayHoldEqualsSigns) {
  const auto a = parse_assignments("opt=-DX=1", "--config", "a=1");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].value, "-DX=1");
}

TEST(Assignments, MalformedItemsAreNamedWithTheFlagAndAnExample) {
  for (const char* bad : {"n", "=4", "n=", "n=1,k"}) {
    try {
      parse_assignments(bad, "--shape", "n=4096,k=8192");
      FAIL() << bad;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--shape item"), std::string::npos) << what;
      EXPECT_NE(what.find("n=4096,k=8192"), std::string::npos) << what;
    }
  }
}

TEST(Assignments, RepeatedNamesAreRefused) {
  EXPECT_THROW(parse_assignments("n=1,n=2", "--shape", "n=1"), Error);
}

TEST(Assignments, NamedSizesArePositiveIntegersInTheOrderWritten) {
  const auto s = parse_named_sizes("n=4096,k=8", "--shape", "n=4096,k=8192");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "n");
  EXPECT_EQ(s[0].value, 4096);
  EXPECT_EQ(s[1].name, "k");
  EXPECT_EQ(s[1].value, 8);
  for (const char* bad : {"n=0", "n=-4", "n=4k", "n=4.5"})
    EXPECT_THROW(parse_named_sizes(bad, "--shape", "n=4096"), Error) << bad;
}

TEST(Assignments, TheOldShapeFormSaysHowToWriteIt) {
  try {
    parse_named_sizes("4096x4096", "--shape", "n=4096,k=8192");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--shape 4096x4096 is the old form, sizes joined by 'x'; name each size "
                 "instead, e.g. --shape n=4096,k=8192.");
  }
}

}  // namespace
}  // namespace ktune
