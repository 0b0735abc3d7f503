// TextTable: rows of cells printed as aligned columns, for the text renderers.
//
// Owns column alignment only: widths count UTF-8 code points (so "2→1" is three wide), columns
// are separated by two spaces, numeric columns may be right-aligned, and the last column is never
// padded (no trailing spaces). Cells are made one line (newlines and tabs become spaces).
#pragma once

#include <string>
#include <vector>

namespace attune {

enum class Align : unsigned char { kLeft, kRight };

class TextTable {
 public:
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns);

  // REQUIRES: cells.size() equals the number of columns.
  void add_row(std::vector<std::string> cells);

  std::size_t row_count() const { return rows_.size(); }

  // The header line and every row, each ending with a newline.
  std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Text on one line: newlines, carriage returns and tabs become spaces.
std::string one_line(std::string text);

// Number of UTF-8 code points in the text.
std::size_t display_width(const std::string& text);

// The text in at most `width` code points: when it is longer, its first width - 1 and "…".
std::string cut_to_width(const std::string& text, std::size_t width);

// Each line of the text (split at '\n') broken at spaces into lines of at most `width` code
// points, continuation lines starting with `indent`; a word longer than a line is cut. No line
// ends with a space.
std::string wrap_words(const std::string& text, std::size_t width, const std::string& indent);

}  // namespace attune
