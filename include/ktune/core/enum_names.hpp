#pragma once
// The one way an enum gets its names: a table of {value, name} pairs beside the enum's
// to_string, read both ways by these two lookups, so a name is written once and the parser
// cannot drift from the printer. The tables are short; a linear scan beats a map at this size.
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace ktune {

template <class E>
using EnumName = std::pair<E, const char*>;

// The name of `value` in `table`; `unknown` when it has none (an enum from outside ktune, such
// as CUPTI's, can grow values this build does not know).
template <class E, std::size_t N>
constexpr const char* name_of(const EnumName<E> (&table)[N], E value, const char* unknown = "?") {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return unknown;
}

// The value named `name` in `table` (the first, where two values share a name); nullopt: none.
template <class E, std::size_t N>
constexpr std::optional<E> value_of(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace ktune
