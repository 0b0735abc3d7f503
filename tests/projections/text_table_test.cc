#include "projections/text_table.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(TextTable, AlignsColumnsByCodePoints) {
  TextTable table({{"run", Align::kRight}, {"change"}, {"note"}});
  table.add_row({"1", "--tp 2→1", "a"});
  table.add_row({"12", "baseline", "bb"});
  EXPECT_EQ(table.render(),
            "run  change    note\n"
            "  1  --tp 2→1  a\n"
            " 12  baseline  bb\n");
  EXPECT_EQ(table.row_count(), 2u);
}

TEST(TextTable, KeepsEachCellOnOneLine) {
  TextTable table({{"a"}, {"b"}});
  table.add_row({"x\ny", "p\tq\r"});
  EXPECT_EQ(table.render(), "a    b\nx y  p q \n");
}

TEST(TextTable, AnEmptyTableIsItsHeader) {
  TextTable table({{"event", Align::kRight}, {"rule"}});
  EXPECT_EQ(table.render(), "event  rule\n");
}

TEST(DisplayWidth, CountsCodePoints) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("2→1"), 3u);
  EXPECT_EQ(display_width("±"), 1u);
  EXPECT_EQ(display_width(""), 0u);
}

}  // namespace
}  // namespace attune
