#pragma once
// Text helpers shared by the renderers (HTML report, SVG curves) and the stores.
#include <string>
#include <string_view>

namespace ktune {

// Escapes &, <, >, " and ' for XML/HTML text and attribute values.
std::string xml_escape(std::string_view text);

// `text` with every byte that does not begin or continue a valid UTF-8 sequence (overlong forms,
// surrogates and code points past U+10FFFF included) replaced by U+FFFD, as nlohmann::json's
// error_handler_t::replace does. Names from traced programs need not be UTF-8; PostgreSQL's text
// columns and JSON must be.
std::string valid_utf8(std::string_view text);

}  // namespace ktune
