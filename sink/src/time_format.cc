// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/time_format.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

#include "spool_io.h"

namespace fwdsink {
namespace {

struct UtcParts {
  std::tm tm{};
  int millis = 0;
};

UtcParts SplitUtc(std::chrono::system_clock::time_point t) {
  const std::int64_t ms = spool_io::ToUnixMs(t);
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

namespace spool_io {

std::string FormatCompactUtcMs(std::chrono::system_clock::time_point t) {
  const UtcParts p = SplitUtc(t);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02d.%03dZ", p.tm.tm_year + 1900,
                p.tm.tm_mon + 1, p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.millis);
  return buf;
}

}  // namespace spool_io
}  // namespace fwdsink
