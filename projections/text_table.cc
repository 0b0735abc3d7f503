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

namespace attune {
namespace {

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The byte length of the first `points` code points of `text` (all of it when shorter).
std::size_t prefix_bytes(const std::string& text, std::size_t points) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < text.size(); ++i) {
    if (!continuation_byte(text[i])) {
      if (seen == points) break;
      ++seen;
    }
  }
  return i;
}

void wrap_line(const std::string& line, std::size_t width, const std::string& indent,
               std::string& out) {
  if (display_width(line) <= width) {
    out += line + "\n";
    return;
  }
  const std::size_t lead = line.find_first_not_of(' ');
  if (lead == std::string::npos) {  // only spaces: an empty line
    out += "\n";
    return;
  }
  std::string current = line.substr(0, lead);
  if (display_width(current) >= width) current = indent;  // an indent wider than the line
  // Continuations keep the line's own indent, as far as the width leaves room for a word.
  std::string next = current + indent;
  if (display_width(next) >= width) next = indent;
  bool empty = true;  // `current` holds no word yet
  for (std::size_t start = lead; start < line.size();) {
    // The word and the spaces before it, kept as written within a line.
    const std::size_t word_start = line.find_first_not_of(' ', start);
    if (word_start == std::string::npos) break;
    const std::string gap = line.substr(start, word_start - start);
    std::size_t end = line.find(' ', word_start);
    if (end == std::string::npos) end = line.size();
    std::string word = line.substr(word_start, end - word_start);
    start = end;
    if (!empty && display_width(current) + display_width(gap) + display_width(word) > width) {
      out += current + "\n";
      current = next;
      empty = true;
    }
    while (!word.empty() && display_width(current) + display_width(word) > width) {  // too long
      const std::size_t used = display_width(current);
      const std::size_t fits = prefix_bytes(word, width > used ? width - used : 1);
      current += word.substr(0, fits);
      word = word.substr(fits);
      out += current + "\n";
      current = next;
      empty = true;
    }
    if (word.empty()) continue;
    if (!empty) current += gap;
    current += word;
    empty = false;
  }
  if (!empty) out += current + "\n";
}

}  // namespace

std::string cut_to_width(const std::string& text, std::size_t width) {
  if (display_width(text) <= width) return text;
  if (width == 0) return "";
  return text.substr(0, prefix_bytes(text, width - 1)) + "…";
}

std::string wrap_words(const std::string& text, std::size_t width, const std::string& indent) {
  ATTUNE_ASSERT(width > display_width(indent), "a wrapped line has room after its indent");
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    wrap_line(text.substr(start, end - start), width, indent, out);
    start = end + 1;
  }
  out.pop_back();  // the last line's '\n'
  return out;
}

}  // namespace attune
