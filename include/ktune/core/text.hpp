#pragma once
// Text helpers shared by the renderers (HTML report, SVG curves).
#include <string>
#include <string_view>

namespace ktune {

// Escapes &, <, >, " and ' for XML/HTML text and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace ktune
