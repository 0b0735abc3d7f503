#include "adapters/model/recipe_values.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include "events/arg_catalog.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

std::optional<double> read_number(std::string_view text) {
  if (text.starts_with('+')) text.remove_prefix(1);
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string first_word(std::string_view text) {
  std::vector<std::string> words = split_words(text);
  return words.empty() ? std::string() : words.front();
}

}  // namespace

std::optional<std::string> recipe_flag(const Recipe& recipe, std::string_view flag) {
  const auto it = recipe.flags.find(std::string(flag));
  if (it == recipe.flags.end()) return std::nullopt;
  return it->second;
}

double recipe_number(const Recipe& recipe, std::string_view flag, double fallback) {
  if (std::optional<std::string> value = recipe_flag(recipe, flag)) {
    return read_number(first_word(*value)).value_or(fallback);
  }
  const ArgInfo* info = ArgCatalog::megatron().find(flag);
  if (info == nullptr) return fallback;
  return read_number(first_word(info->default_text)).value_or(fallback);
}

std::string recipe_text(const Recipe& recipe, std::string_view flag) {
  if (std::optional<std::string> value = recipe_flag(recipe, flag)) return first_word(*value);
  const ArgInfo* info = ArgCatalog::megatron().find(flag);
  return info == nullptr ? std::string("None") : first_word(info->default_text);
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  char buffer[64];
  const auto written =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  ATTUNE_ASSERT(written.ec == std::errc(), "a double always formats");
  const std::string_view text(buffer, static_cast<std::size_t>(written.ptr - buffer));
  const std::size_t e = text.find('e');
  std::string_view mantissa = text.substr(0, e);
  const int exponent = std::atoi(std::string(text.substr(e + 1)).c_str());
  std::string sign;
  if (mantissa.starts_with('-')) {
    sign = "-";
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (exponent < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else {
      const std::size_t integer_digits = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() < integer_digits) digits.append(integer_digits - digits.size(), '0');
      std::string fraction = digits.substr(integer_digits);
      out = digits.substr(0, integer_digits) + "." + (fraction.empty() ? "0" : fraction);
    }
    return sign + out;
  }
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int magnitude = exponent < 0 ? -exponent : exponent;
  out += exponent < 0 ? "e-" : "e+";
  if (magnitude < 10) out += "0";
  out += std::to_string(magnitude);
  return sign + out;
}

}  // namespace attune::sim
