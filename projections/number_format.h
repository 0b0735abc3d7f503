// Number text for byte-deterministic output: fixed precision, independent of the locale, and
// never a negative zero ("-0.00" prints as "0.00"). Used by the audit's findings and the
// renderers, so the same projection always prints the same bytes.
#pragma once

#include <string>

namespace attune {

// 1234.5 with 2 decimals -> "1234.50"; NaN -> "nan"; infinities -> "inf", "-inf".
std::string format_fixed(double value, int decimals);

// A fraction as a percentage: 0.0345 with 2 decimals -> "3.45%".
std::string format_percent(double fraction, int decimals);

// A fraction as a signed percentage: 0.0345 -> "+3.45%", -0.012 -> "-1.20%", 0 -> "+0.00%".
std::string format_signed_percent(double fraction, int decimals);

}  // namespace attune
