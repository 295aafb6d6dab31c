// The one column list of a table (src/store/columns.hpp) and the SQL made from it.
#include "../../src/store/columns.hpp"

#include <gtest/gtest.h>

namespace ktune::store::detail {
namespace {

constexpr auto kTable = columns("id", "name", "size", "note");

TEST(Columns, IndexesComeFromTheListAtCompileTime) {
  static_assert(kTable["id"] == 0 && kTable["note"] == 3);
  static_assert(kTable.size() == 4);
}

TEST(Columns, MakeTheColumnListAndItsPlaceholders) {
  EXPECT_EQ(kTable.list(), "id, name, size, note");
  EXPECT_EQ(kTable.placeholders(), "$1, $2, $3, $4");
  EXPECT_EQ(kTable.placeholders(9), "$9, $10, $11, $12");  // the third row of a batched INSERT
}

TEST(Columns, BindColumnsToTheirInsertPlaceholders) {
  EXPECT_EQ(kTable.bound(0, 2, " AND "), "id = $1 AND name = $2");
  EXPECT_EQ(kTable.bound(2, 4, ", "), "size = $3, note = $4");
}

TEST(Columns, ReadOneColumnAsAnExpression) {
  EXPECT_EQ(kTable.list_with(kTable["note"], "''"), "id, name, size, '' AS note");
  EXPECT_EQ(kTable.list_with(0, "NULL"), "NULL AS id, name, size, note");
}

}  // namespace
}  // namespace ktune::store::detail
