#include "ktune/core/text.hpp"

#include <gtest/gtest.h>

namespace ktune {
namespace {

TEST(Text, XmlEscapeCoversMarkupAndQuotes) {
  EXPECT_EQ(xml_escape("a<b> & \"c\" 'd'"), "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  EXPECT_EQ(xml_escape("void k<float>(int)"), "void k&lt;float&gt;(int)");
  EXPECT_EQ(xml_escape(""), "");
}

}  // namespace
}  // namespace ktune
