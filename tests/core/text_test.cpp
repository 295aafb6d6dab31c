#include "ktune/core/text.hpp"

#include <gtest/gtest.h>

namespace ktune {
namespace {

TEST(Text, XmlEscapeCoversMarkupAndQuotes) {
  EXPECT_EQ(xml_escape("a<b> & \"c\" 'd'"), "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  EXPECT_EQ(xml_escape("void k<float>(int)"), "void k&lt;float&gt;(int)");
  EXPECT_EQ(xml_escape(""), "");
}

TEST(Text, ValidUtf8KeepsValidTextAndReplacesEveryBadByte) {
  EXPECT_EQ(valid_utf8("gemm<float> \xCE\xB1\xE2\x82\xAC\xF0\x9F\x98\x80"),
            "gemm<float> \xCE\xB1\xE2\x82\xAC\xF0\x9F\x98\x80");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("k\xFFx"), "k" + fffd + "x");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), fffd + fffd);             // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(valid_utf8("ab\xE2\x82"), "ab" + fffd + fffd);  // cut short at the end
  EXPECT_EQ(valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

// Issue 44: names reached the terminal with their control characters.
TEST(Text, TerminalSafeEscapesEveryControlCharacter) {
  EXPECT_EQ(terminal_safe("gemm\x1b]0;owned\x07<float>"), "gemm\\x1b]0;owned\\x07<float>");
  EXPECT_EQ(terminal_safe("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(terminal_safe("a\nb", /*keep_newlines=*/true), "a\nb");
  EXPECT_EQ(terminal_safe("csi\xC2\x9B"
                          "2J"),
            "csi\\u009b2J");                                               // C1 as UTF-8
  EXPECT_EQ(terminal_safe("raw\x9B"), "raw\xEF\xBF\xBD");                  // a lone byte
  EXPECT_EQ(terminal_safe("\xCE\xB1 \xC2\xA0ok"), "\xCE\xB1 \xC2\xA0ok");  // not controls
}

// Issue 44: `std::stod` refused the subnormal 5e-324 as out of range.
TEST(Text, ParseDoubleTakesSubnormalsAndRefusesTheRest) {
  EXPECT_EQ(parse_double("5e-324"), 5e-324);
  EXPECT_EQ(parse_double("-2.5"), -2.5);
  for (const char* bad : {"", "1e999", "inf", "nan", "1.5x", " 1", "1e-400x"})
    EXPECT_FALSE(parse_double(bad)) << bad;
}

}  // namespace
}  // namespace ktune
