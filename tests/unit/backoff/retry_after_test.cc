// SPDX-License-Identifier: Apache-2.0
// ParseRetryAfter: one test per class of input, named for the case (RFC 9110 §10.2.3).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "fwdsink/retry_after.h"

using namespace std::chrono_literals;
using fwdsink::ParseRetryAfter;
using std::chrono::milliseconds;

namespace {
// Sun, 06 Nov 1994 08:49:37 GMT — the RFC's own example date.
const std::chrono::sys_seconds kRfcExample =
    std::chrono::sys_days{std::chrono::year{1994} / 11 / 6} + 8h + 49min + 37s;
// "now" for the date tests: 10 s before the example date.
const std::chrono::system_clock::time_point kNow = kRfcExample - 10s;
}  // namespace

TEST_CASE("DelaySecondsSimple") {
  CHECK(ParseRetryAfter("5", kNow) == milliseconds{5000});
  CHECK(ParseRetryAfter("120", kNow) == milliseconds{120'000});
  CHECK(ParseRetryAfter("007", kNow) == milliseconds{7000});
}

TEST_CASE("DelaySecondsZeroIsZeroNotAbsent") {
  // Zero parses (the caller treats non-positive like absent and uses the ladder).
  CHECK(ParseRetryAfter("0", kNow) == milliseconds{0});
}

TEST_CASE("DelaySecondsWithSurroundingWhitespace") {
  CHECK(ParseRetryAfter("  5\t", kNow) == milliseconds{5000});
  CHECK(ParseRetryAfter("\t 30 ", kNow) == milliseconds{30'000});
}

TEST_CASE("DelaySecondsHugeSaturatesInsteadOfOverflowing") {
  CHECK(ParseRetryAfter("99999999999999999999999999999999", kNow) ==
        fwdsink::kRetryAfterSaturation);
  CHECK(ParseRetryAfter("9223372036854775807", kNow) == fwdsink::kRetryAfterSaturation);
  // Just below the saturation point is exact.
  CHECK(ParseRetryAfter("999999999", kNow) == std::chrono::seconds{999'999'999});
}

TEST_CASE("UnsupportedFormatNegative") {
  CHECK_FALSE(ParseRetryAfter("-1", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("+5", kNow).has_value());
}

TEST_CASE("UnsupportedFormatFloat") {
  CHECK_FALSE(ParseRetryAfter("1.5", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("1e3", kNow).has_value());
}

TEST_CASE("UnsupportedFormatTrailingGarbage") {
  CHECK_FALSE(ParseRetryAfter("5s", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("5 seconds", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("1 2", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMTx", kNow).has_value());
}

TEST_CASE("UnsupportedFormatEmptyOrBlank") {
  CHECK_FALSE(ParseRetryAfter("", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("   ", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("garbage", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter(std::string("5\0", 2), kNow).has_value());
}

TEST_CASE("HeaderMatchesImfFixdateInTheFuture") {
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kNow) == milliseconds{10'000});
}

TEST_CASE("HeaderMatchesRfc850DateInTheFuture") {
  CHECK(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", kNow) == milliseconds{10'000});
}

TEST_CASE("HeaderMatchesAsctimeDateInTheFuture") {
  CHECK(ParseRetryAfter("Sun Nov  6 08:49:37 1994", kNow) == milliseconds{10'000});
  // Two-digit day in asctime.
  CHECK(ParseRetryAfter("Thu Nov 10 08:49:37 1994", kNow) ==
        std::chrono::milliseconds{(4 * 24h + 10s)});
}

TEST_CASE("HeaderMatchesSupportedFormatTimestampButInThePast") {
  const auto later = kRfcExample + 1h;
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", later) == milliseconds{0});
  CHECK(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", later) == milliseconds{0});
  CHECK(ParseRetryAfter("Sun Nov  6 08:49:37 1994", later) == milliseconds{0});
  // Exactly now is not in the future either.
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kRfcExample) == milliseconds{0});
}

TEST_CASE("HttpDateSubSecondNowRoundsUpToWholeMilliseconds") {
  const auto now = kRfcExample - 1500us;  // 1.5 ms before
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now) == milliseconds{2});
}

TEST_CASE("Rfc850TwoDigitYearResolvesToRecentPast") {
  // In 2026, "94" is 1994 (2094 would be > 50 years ahead), "30" is 2030.
  const auto now2026 = std::chrono::sys_days{std::chrono::year{2026} / 1 / 1};
  const auto d94 = fwdsink::ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT");
  REQUIRE(d94.has_value());
  CHECK(*d94 == kRfcExample);
  const auto ra = ParseRetryAfter("Wednesday, 01-Jan-30 00:00:00 GMT", now2026);
  REQUIRE(ra.has_value());
  CHECK(*ra == std::chrono::duration_cast<milliseconds>(
                   std::chrono::sys_days{std::chrono::year{2030} / 1 / 1} - now2026));
}

TEST_CASE("HttpDateFarFutureSaturatesWithoutOverflow") {
  CHECK(ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", kNow) == fwdsink::kRetryAfterSaturation);
}

TEST_CASE("InvalidDateImpossibleCalendarDay") {
  CHECK_FALSE(ParseRetryAfter("Mon, 30 Feb 2026 00:00:00 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Thu, 31 Apr 2026 00:00:00 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 29 Feb 2026 00:00:00 GMT", kNow).has_value());
  CHECK(ParseRetryAfter("Thu, 29 Feb 2024 00:00:00 GMT", kNow).has_value());  // leap year
  CHECK_FALSE(ParseRetryAfter("Sun, 00 Nov 1994 08:49:37 GMT", kNow).has_value());
}

TEST_CASE("InvalidDateImpossibleTimeOfDay") {
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 24:00:00 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:60:00 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:49:61 GMT", kNow).has_value());
}

TEST_CASE("InvalidDateWrongCaseOrZone") {
  CHECK_FALSE(ParseRetryAfter("sun, 06 Nov 1994 08:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 nov 1994 08:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 gmt", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 UTC", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 +0000", kNow).has_value());
}

TEST_CASE("InvalidDateMangledFields") {
  CHECK_FALSE(ParseRetryAfter("Sun, 6 Nov 1994 08:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 94 08:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun,06 Nov 1994 08:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 8:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sun Nov 6 08:49:37 1994", kNow).has_value());  // one SP
  CHECK_FALSE(ParseRetryAfter("Sun, 06-Nov-94 08:49:37 GMT", kNow).has_value());
  CHECK_FALSE(ParseRetryAfter("Sunday, 06 Nov 1994 08:49:37 GMT", kNow).has_value());
}

TEST_CASE("EveryPrefixAndByteFlipIsTotal") {
  // No input may crash, throw or overflow: feed every prefix and every single-byte
  // corruption of each format (the sanitizer build turns UB into a failure). What does
  // parse must be right: a date gives its distance from now (zero only once it is
  // past), delay-seconds a positive wait.
  const std::string samples[] = {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
                                 "Sun Nov  6 08:49:37 1994", "123456789012345678901234"};
  int parsed = 0, flips_parsed = 0, flips_zero = 0;
  for (const auto& s : samples) {
    for (std::size_t n = 0; n <= s.size(); ++n) {
      if (ParseRetryAfter(s.substr(0, n), kNow)) ++parsed;
    }
    for (std::size_t i = 0; i < s.size(); ++i) {
      for (int c : {0, int{' '}, int{'9'}, int{'Z'}, 0xff}) {
        std::string t = s;
        t[i] = static_cast<char>(c);
        const auto r = ParseRetryAfter(t, kNow);
        if (!r) continue;
        CAPTURE(t);
        ++flips_parsed;
        std::string_view bare = t;  // without the optional whitespace around it
        while (!bare.empty() && bare.front() == ' ') bare.remove_prefix(1);
        while (!bare.empty() && bare.back() == ' ') bare.remove_suffix(1);
        if (const auto date = fwdsink::ParseHttpDate(bare)) {
          // In whole seconds (kNow is whole), saturating like the parser: year 9994.
          const auto ahead = *date - std::chrono::floor<std::chrono::seconds>(kNow);
          CHECK(*r ==
                std::clamp<milliseconds>(ahead, milliseconds{0}, fwdsink::kRetryAfterSaturation));
        } else {
          CHECK(*r > milliseconds{0});  // delay-seconds: these digits are never all zeros
          CHECK(*r <= fwdsink::kRetryAfterSaturation);
        }
        if (*r == milliseconds{0}) ++flips_zero;
      }
    }
  }
  // Full strings parse; and the digits prefixes ("1", "12", ...) do too.
  CHECK(parsed == 4 + 23);
  // Counted by hand: of the digits, '9' anywhere (24) and a space at either end (2); of
  // the dates, a space put over a space (5 + 3 + 5) and the digit flips to '9' that
  // stay a valid date (8 + 6 + 8). None lands in the past: no flip waits zero.
  CHECK(flips_parsed == 26 + 13 + 9 + 13);
  CHECK(flips_zero == 0);
}
