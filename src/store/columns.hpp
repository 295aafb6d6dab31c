#pragma once
// A table's columns, listed once: the SQL column list, the $1..$N placeholders and the index of a
// column in a row all come from the one list, so a statement and the code reading its rows cannot
// disagree. Names are looked up at compile time: `row.text(kEntries["op"])` does not build when
// "op" is not in kEntries.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ktune::store::detail {

template <std::size_t N>
struct Columns {
  std::array<std::string_view, N> names;

  static constexpr std::size_t size() { return N; }

  // Position of `name` in the list; a name not in it fails the build.
  consteval std::size_t operator[](std::string_view name) const {
    for (std::size_t i = 0; i < N; ++i)
      if (names[i] == name) return i;
    throw "no such column";
  }

  // "a, b, c": the columns in a SELECT or INSERT.
  std::string list() const { return fmt::format("{}", fmt::join(names, ", ")); }

  // The list with column i read as `expr` instead ("'' AS samples"): a column a query leaves out,
  // or one an older schema lacks.
  std::string list_with(std::size_t i, std::string_view expr) const {
    std::string out;
    for (std::size_t k = 0; k < N; ++k)
      out += k == i ? fmt::format("{}{} AS {}", k ? ", " : "", expr, names[k])
                    : fmt::format("{}{}", k ? ", " : "", names[k]);
    return out;
  }

  // "$first, $first+1, ...": one placeholder a column, numbered from `first`.
  static std::string placeholders(std::size_t first = 1) {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) out += fmt::format("{}${}", i ? ", " : "", first + i);
    return out;
  }

  // "c = $i+1<sep>..." for the columns [begin, end): a key to match or the values to set, with the
  // placeholder numbers an INSERT of all the columns uses.
  std::string bound(std::size_t begin, std::size_t end, std::string_view sep) const {
    std::string out;
    for (std::size_t i = begin; i < end; ++i)
      out += fmt::format("{}{} = ${}", i > begin ? sep : "", names[i], i + 1);
    return out;
  }
};

// Builds a Columns from string literals: columns("op", "dtype", ...).
template <class... Names>
consteval auto columns(Names... names) {
  return Columns<sizeof...(Names)>{{std::string_view(names)...}};
}

}  // namespace ktune::store::detail
