#include "ktune/analyze/kernel_name.hpp"

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::analyze {
namespace {

bool opens(char c) {
  return c == '(' || c == '<' || c == '[' || c == '{';
}
bool closes(char c) {
  return c == ')' || c == '>' || c == ']' || c == '}';
}

// Index of the bracket opening the one that closes at `close`, scanning back; npos if unbalanced.
std::size_t matching_open(std::string_view s, std::size_t close) {
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (closes(s[i])) ++depth;
    if (opens(s[i]) && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// The last position of `token` outside every bracket, or npos.
std::size_t last_top_level(std::string_view s, std::string_view token) {
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (closes(s[i])) ++depth;
    if (opens(s[i])) --depth;
    if (depth == 0 && s.substr(i, token.size()) == token) return i;
  }
  return std::string_view::npos;
}

bool balanced(std::string_view s) {
  int depth = 0;
  for (char c : s) {
    if (opens(c)) ++depth;
    if (closes(c) && --depth < 0) return false;
  }
  return depth == 0;
}

void trim(std::string_view& s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

}  // namespace

std::string base_name(std::string_view demangled) {
  std::string_view s = demangled;
  trim(s);
  // Qualifiers after the parameter list ("... ) const").
  for (std::string_view q : {" const", " volatile", " &&", " &"})
    if (s.size() > q.size() && s.substr(s.size() - q.size()) == q) s.remove_suffix(q.size());
  if (s.empty() || s.back() != ')') return std::string(demangled);  // not a signature
  std::size_t open = matching_open(s, s.size() - 1);
  if (open == std::string_view::npos || open == 0) return std::string(demangled);
  s = s.substr(0, open);
  trim(s);
  if (!s.empty() && s.back() == '>') {
    open = matching_open(s, s.size() - 1);
    if (open == std::string_view::npos || open == 0) return std::string(demangled);
    s = s.substr(0, open);
  }
  if (!balanced(s)) return std::string(demangled);
  if (const std::size_t space = last_top_level(s, " "); space != std::string_view::npos)
    s = s.substr(space + 1);  // the return type
  if (const std::size_t scope = last_top_level(s, "::"); scope != std::string_view::npos)
    s = s.substr(scope + 2);
  trim(s);
  return s.empty() ? std::string(demangled) : std::string(s);
}

NameStyle parse_name_style(std::string_view text) {
  if (text == "base") return NameStyle::base;
  if (text == "full") return NameStyle::full;
  throw Error(
      fmt::format("--names '{}' is not a name style; use base (templates and arguments "
                  "elided) or full (the whole demangled name).",
                  text));
}

std::string shown_name(std::string_view demangled, NameStyle style) {
  return style == NameStyle::base ? base_name(demangled) : std::string(demangled);
}

}  // namespace ktune::analyze
