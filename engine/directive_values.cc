#include "engine/directive_values.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "engine/directives.h"

namespace msgq {
namespace {

size_t SkipDigits(absl::string_view s, size_t i) {
  while (i < s.size() &&
         absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) {
    ++i;
  }
  return i;
}

// SimpleAtod also accepts "inf", "nan" and hex floats, none of which is a
// number of seconds anyone means to write, so the text must first look like a
// plain decimal (with an optional exponent, which Vitess's ParseFloat allows).
bool IsPlainDecimal(absl::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const size_t int_start = i;
  i = SkipDigits(s, i);
  size_t digits = i - int_start;
  if (i < s.size() && s[i] == '.') {
    const size_t frac_start = ++i;
    i = SkipDigits(s, i);
    digits += i - frac_start;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t exp_start = i;
    i = SkipDigits(s, i);
    if (i == exp_start) return false;
  }
  return i == s.size();
}

}  // namespace

absl::StatusOr<double> ParseRate(absl::string_view name,
                                 absl::string_view value, double max) {
  double v = 0;
  if (!IsPlainDecimal(value) || !absl::SimpleAtod(value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is not a number", name, value));
  }
  if (!(v > 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" must be positive", name, value));
  }
  if (!std::isfinite(v) || v > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is more than %g", name, value, max));
  }
  return v;
}

absl::StatusOr<absl::Duration> ParseSeconds(absl::string_view name,
                                            absl::string_view value) {
  double seconds = 0;
  if (!IsPlainDecimal(value) || !absl::SimpleAtod(value, &seconds)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is not a number of seconds", name, value));
  }
  if (seconds <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: \"%s\" must be a positive number of seconds", name, value));
  }
  // SimpleAtod turns overflow into infinity, and absl::Seconds saturates.
  if (!std::isfinite(seconds) ||
      absl::Seconds(seconds) == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: \"%s\" is too large a number of seconds", name, value));
  }
  if (seconds > static_cast<double>(kMaxDurationSeconds)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is more than %d seconds (100 years)", name,
                        value, kMaxDurationSeconds));
  }
  // Values below absl::Duration's resolution would otherwise become zero.
  const absl::Duration duration = absl::Seconds(seconds);
  if (duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: \"%s\" must be a positive number of seconds", name, value));
  }
  return duration;
}

absl::StatusOr<int> ParseCount(absl::string_view name, absl::string_view value,
                               int max) {
  int64_t count = 0;
  if (!absl::SimpleAtoi(value, &count) || count <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: \"%s\" must be a positive integer no larger than %d", name, value,
        max));
  }
  if (count > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is more than %d", name, value, max));
  }
  return static_cast<int>(count);
}

absl::StatusOr<std::string> ParseColumnName(absl::string_view name,
                                            absl::string_view col) {
  const bool plain = !col.empty() && col.size() <= 64 &&
                     std::all_of(col.begin(), col.end(), [](char c) {
                       return absl::ascii_isalnum(c) || c == '_' || c == '$';
                     });
  if (!plain) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: \"%s\" is not a column name (letters, digits, _ and $)", name,
        col));
  }
  return std::string(col);
}

}  // namespace msgq
