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

}  // namespace
}  // namespace ktune
