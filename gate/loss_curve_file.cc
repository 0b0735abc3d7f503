#include "gate/loss_curve_file.h"

#include <charconv>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <system_error>

namespace attune {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Error messages quote at most this many characters of an offending token.
constexpr std::size_t kQuotedTokenMax = 40;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string quoted(std::string_view token) {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "'" + std::string(...).
  std::string out(1, '\'');
  out.append(token.substr(0, kQuotedTokenMax));
  out.append(token.size() <= kQuotedTokenMax ? "'" : "...'");
  return out;
}

std::string located(std::string_view source, std::size_t line, const std::string& message) {
  return std::string(source) + ":" + std::to_string(line) + ": " + message;
}

// One number, the whole token: decimal or exponent notation, nan, inf, infinity (any case), with
// an optional sign. Returns an error message on failure.
std::optional<std::string> parse_number(std::string_view token, double& value) {
  std::string_view digits = token;
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-' && digits[1] != '+') {
    digits.remove_prefix(1);  // from_chars takes no '+'
  }
  const char* end = digits.data() + digits.size();
  const auto result = std::from_chars(digits.data(), end, value, std::chars_format::general);
  if (result.ec == std::errc::result_out_of_range) {
    return "loss " + quoted(token) + " is out of the range of a double";
  }
  if (result.ec != std::errc{} || result.ptr != end) {
    return "expected a loss (a number, nan or inf), got " + quoted(token);
  }
  return std::nullopt;
}

Result<std::vector<double>> parse_lines(std::string_view text, std::string_view source) {
  std::vector<double> losses;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const std::size_t comment = line.find('#');
    if (comment != std::string_view::npos) line = line.substr(0, comment);
    line = trim(line);
    if (line.empty()) continue;
    double value = 0.0;
    if (std::optional<std::string> error = parse_number(line, value)) {
      return make_error(located(source, line_number, *error));
    }
    losses.push_back(value);
  }
  return losses;
}

// A JSON array of numbers (plus NaN, Infinity, -Infinity and null), nothing after it.
class JsonArrayParser {
 public:
  JsonArrayParser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Result<std::vector<double>> parse() {
    std::vector<double> losses;
    skip_space();
    if (!consume('[')) return error("expected '[' to open a JSON array");
    skip_space();
    if (!consume(']')) {
      while (true) {
        skip_space();
        double value = 0.0;
        if (std::optional<std::string> message = read_value(value)) return error(*message);
        losses.push_back(value);
        skip_space();
        if (consume(']')) break;
        if (!consume(',')) {
          return error(at_end()
                           ? "the JSON array is not closed with ']'"
                           : "expected ',' or ']' in the JSON array, got " + quoted(peek_token()));
        }
      }
    }
    skip_space();
    if (!at_end()) return error("unexpected text after the JSON array: " + quoted(peek_token()));
    return losses;
  }

 private:
  bool at_end() const { return position_ >= text_.size(); }

  bool consume(char c) {
    if (at_end() || text_[position_] != c) return false;
    ++position_;
    return true;
  }

  void skip_space() {
    while (!at_end() && is_space(text_[position_])) {
      if (text_[position_] == '\n') ++line_;
      ++position_;
    }
  }

  // The run of characters up to the next separator, for values and messages.
  std::string_view peek_token() const {
    std::size_t end = position_;
    while (end < text_.size() && !is_space(text_[end]) && text_[end] != ',' && text_[end] != ']' &&
           text_[end] != '[') {
      ++end;
    }
    if (end == position_ && end < text_.size()) ++end;  // a lone separator
    return text_.substr(position_, end - position_);
  }

  std::optional<std::string> read_value(double& value) {
    if (at_end()) return "the JSON array is not closed with ']'";
    const std::string_view token = peek_token();
    if (token == "null") {
      value = kNaN;  // JavaScript writes NaN and infinities as null: a loss that was not finite
    } else if (token == "NaN") {
      value = kNaN;
    } else if (token == "Infinity") {
      value = std::numeric_limits<double>::infinity();
    } else if (token == "-Infinity") {
      value = -std::numeric_limits<double>::infinity();
    } else if (std::optional<std::string> message = parse_number(token, value)) {
      return message;
    }
    position_ += token.size();
    return std::nullopt;
  }

  Error error(const std::string& message) const {
    return make_error(located(source_, line_, message));
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t position_ = 0;
  std::size_t line_ = 1;
};

}  // namespace

Result<std::vector<double>> parse_loss_curve(std::string_view text, std::string_view source_name) {
  constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";
  if (text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
  const std::size_t first = text.find_first_not_of(" \t\r\n\f");
  if (first != std::string_view::npos && text[first] == '[') {
    return JsonArrayParser(text, source_name).parse();
  }
  return parse_lines(text, source_name);
}

}  // namespace attune
