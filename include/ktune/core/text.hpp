#pragma once
// Text helpers shared by the renderers (HTML report, SVG curves) and the stores.
#include <optional>
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

// `text` safe to print on a terminal: valid UTF-8 (as valid_utf8), with every control character
// (C0, tab included, DEL, and C1 as U+0080..U+009F) written as \xHH or \u00HH, so a kernel, op or
// device name from a traced program or a store cannot move the cursor, retitle the window or hide
// what follows. keep_newlines: '\n' stays (a page of output, its names escaped already).
std::string terminal_safe(std::string_view text, bool keep_newlines = false);

// `text`, whole, as a finite double in C's decimal notation (subnormals such as 5e-324 included,
// which std::stod refuses as out of range); nullopt for anything else: empty, trailing characters,
// a number too large for a double, infinities and NaN.
std::optional<double> parse_double(std::string_view text);

// A duration for people: 450 ns, 12.3 us, 4.567 ms, 1.234 s (three or four significant figures).
std::string duration_text(double ns);

}  // namespace ktune
