#include "projections/number_format.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string_view>

#include "events/assert.h"

namespace attune {

namespace {

constexpr int kDecimalsMax = 12;

bool is_all_zero_digits(std::string_view text) {
  for (char c : text) {
    if (c >= '1' && c <= '9') return false;
  }
  return true;
}

}  // namespace

std::string format_fixed(double value, int decimals) {
  ATTUNE_ASSERT(decimals >= 0 && decimals <= kDecimalsMax, "decimals within the supported range");
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Large enough for any finite double (309 integer digits) plus sign, point and decimals.
  std::array<char, 400> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::fixed, decimals);
  ATTUNE_ASSERT(result.ec == std::errc{}, "a double always formats");
  const char* first = buffer.data();
  const char* last = result.ptr;
  if (*first == '-' &&
      is_all_zero_digits(std::string_view(first, static_cast<std::size_t>(last - first))))
    ++first;
  return std::string(first, static_cast<std::size_t>(last - first));
}

std::string format_percent(double fraction, int decimals) {
  return format_fixed(fraction * 100.0, decimals) + "%";
}

std::string format_signed_percent(double fraction, int decimals) {
  const std::string text = format_fixed(fraction * 100.0, decimals);
  const bool needs_plus = text.front() != '-' && text != "nan";
  return (needs_plus ? "+" : "") + text + "%";
}

}  // namespace attune
