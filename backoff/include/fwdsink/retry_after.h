// SPDX-License-Identifier: Apache-2.0
// Parsing of the HTTP Retry-After header (RFC 9110 §10.2.3).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace fwdsink {

// The largest delay ParseRetryAfter returns: a huge delay-seconds saturates here
// (about 31.7 years) rather than overflowing. Callers cap it further (max_wait).
inline constexpr std::chrono::milliseconds kRetryAfterSaturation =
    std::chrono::seconds{1'000'000'000};

// Parses a Retry-After field value into a delay relative to `now` (wall-clock time,
// used only for HTTP-dates).
//
// Accepts, with optional whitespace (SP / HTAB) around the value:
//   delay-seconds  1*DIGIT                         "120"
//   IMF-fixdate    Sun, 06 Nov 1994 08:49:37 GMT    (the preferred format)
//   rfc850-date    Sunday, 06-Nov-94 08:49:37 GMT   (obsolete; two-digit year)
//   asctime-date   Sun Nov  6 08:49:37 1994         (obsolete)
// A date gives max(0, date - now), rounded up to whole milliseconds; a date in the
// past therefore gives zero, which callers treat like an absent header.
// Returns nullopt for anything else: empty, signs, fractions, trailing garbage,
// wrong case, impossible dates (Feb 30, hour 24). Never throws; total for all input.
[[nodiscard]] std::optional<std::chrono::milliseconds> ParseRetryAfter(
    std::string_view value, std::chrono::system_clock::time_point now);

// Parses an HTTP-date alone (any of the three formats) into whole seconds since the
// epoch; nullopt if it is not one. Two-digit RFC 850 years resolve against the current
// year. Seconds precision, so years up to 9999 fit.
[[nodiscard]] std::optional<std::chrono::sys_seconds> ParseHttpDate(std::string_view value);

}  // namespace fwdsink
