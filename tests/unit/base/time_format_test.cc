// SPDX-License-Identifier: Apache-2.0
// FormatRfc3339: the one timestamp formatter of the library (records, daemon lines).
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "fwdsink/time_format.h"

using fwdsink::FormatRfc3339;
using fwdsink::TimePrecision;
using std::chrono::milliseconds;
using std::chrono::system_clock;

namespace {

// 2026-11-30T10:21:24.123Z
constexpr std::int64_t kSampleMs = 1796034084123;

system_clock::time_point At(std::int64_t unix_ms) {
  return system_clock::time_point(milliseconds(unix_ms));
}

}  // namespace

TEST_CASE("FormatRfc3339 writes UTC with milliseconds by default") {
  CHECK(FormatRfc3339(At(kSampleMs)) == "2026-11-30T10:21:24.123Z");
  CHECK(FormatRfc3339(At(0)) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339(At(5)) == "1970-01-01T00:00:00.005Z");  // zero-padded millis
}

TEST_CASE("FormatRfc3339 with seconds precision drops the fraction") {
  CHECK(FormatRfc3339(At(kSampleMs), TimePrecision::kSeconds) == "2026-11-30T10:21:24Z");
  SUBCASE("twin: milliseconds precision keeps it") {
    CHECK(FormatRfc3339(At(kSampleMs), TimePrecision::kMilliseconds) == "2026-11-30T10:21:24.123Z");
  }
}

TEST_CASE("FormatRfc3339 truncates towards the past, also before 1970") {
  CHECK(FormatRfc3339(At(-1)) == "1969-12-31T23:59:59.999Z");
  CHECK(FormatRfc3339(At(-1), TimePrecision::kSeconds) == "1969-12-31T23:59:59Z");
  CHECK(FormatRfc3339(At(kSampleMs) + std::chrono::microseconds(999)) ==
        "2026-11-30T10:21:24.123Z");
}
