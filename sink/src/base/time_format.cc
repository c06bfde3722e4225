// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/time_format.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>

#include "base/unix_time.h"

namespace fwdsink {
namespace {

struct UtcParts {
  std::tm tm{};
  int millis = 0;
};

UtcParts SplitUtc(std::chrono::system_clock::time_point t) {
  const std::int64_t ms = unix_time::ToUnixMs(t);
  // Floor division so times before 1970 still format sensibly.
  std::int64_t secs = ms / 1000;
  std::int64_t rem = ms % 1000;
  if (rem < 0) {
    rem += 1000;
    --secs;
  }
  UtcParts p;
  const std::time_t tt = static_cast<std::time_t>(secs);
  gmtime_r(&tt, &p.tm);
  p.millis = static_cast<int>(rem);
  return p;
}

}  // namespace

std::string FormatRfc3339(std::chrono::system_clock::time_point t, TimePrecision precision) {
  const UtcParts p = SplitUtc(t);
  char buf[80];  // what -Wformat-truncation needs for any int fields
  if (precision == TimePrecision::kSeconds) {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", p.tm.tm_year + 1900,
                  p.tm.tm_mon + 1, p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec);
  } else {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", p.tm.tm_year + 1900,
                  p.tm.tm_mon + 1, p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.millis);
  }
  return buf;
}

namespace unix_time {

std::int64_t ToUnixMs(std::chrono::system_clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point FromUnixMs(std::int64_t ms) noexcept {
  // A record is not ours to trust: a millisecond count past what the clock's duration
  // holds (±292 years in nanoseconds) saturates instead of overflowing (found by the
  // cursor_record fuzz target, LLP 0023#fuzzing).
  using Duration = std::chrono::system_clock::duration;
  constexpr std::int64_t kPerMs =
      std::chrono::duration_cast<Duration>(std::chrono::milliseconds(1)).count();
  constexpr std::int64_t kMaxMs = std::numeric_limits<Duration::rep>::max() / kPerMs;
  ms = std::clamp<std::int64_t>(ms, -kMaxMs, kMaxMs);
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<Duration>(std::chrono::milliseconds(ms)));
}

std::string FormatCompactUtcMs(std::chrono::system_clock::time_point t) {
  const UtcParts p = SplitUtc(t);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02d.%03dZ", p.tm.tm_year + 1900,
                p.tm.tm_mon + 1, p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.millis);
  return buf;
}

}  // namespace unix_time
}  // namespace fwdsink
