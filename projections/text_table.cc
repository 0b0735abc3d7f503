#include "projections/text_table.h"

#include <algorithm>

#include "events/assert.h"

namespace attune {

namespace {

constexpr const char* kColumnGap = "  ";

void append_cell(std::string& out, const std::string& cell, std::size_t width, Align align,
                 bool last) {
  const std::size_t padding = width - display_width(cell);
  if (align == Align::kRight) out.append(padding, ' ');
  out += cell;
  if (align == Align::kLeft && !last) out.append(padding, ' ');
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {
  ATTUNE_ASSERT(!columns_.empty(), "a table has columns");
}

void TextTable::add_row(std::vector<std::string> cells) {
  ATTUNE_ASSERT(cells.size() == columns_.size(), "a row has one cell per column");
  for (std::string& cell : cells) cell = one_line(std::move(cell));
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<std::size_t> widths;
  for (const Column& column : columns_) widths.push_back(display_width(column.header));
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::string out;
  const auto append_line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += kColumnGap;
      append_cell(out, cells[i], widths[i], columns_[i].align, i + 1 == cells.size());
    }
    out += '\n';
  };
  std::vector<std::string> headers;
  for (const Column& column : columns_) headers.push_back(column.header);
  append_line(headers);
  for (const auto& row : rows_) append_line(row);
  return out;
}

std::string one_line(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return text;
}

std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace attune
