// SPDX-License-Identifier: Apache-2.0
// Timestamps as the library writes them (dead-letter records, event lines): RFC 3339
// in UTC. Pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <string>

namespace fwdsink {

enum class TimePrecision {
  kSeconds,       // "2026-11-30T10:21:24Z"
  kMilliseconds,  // "2026-11-30T10:21:24.123Z"
};

// Formats `t` as RFC 3339 in UTC with a "Z" suffix, truncated (towards the past, also
// before 1970) to `precision`.
[[nodiscard]] std::string FormatRfc3339(std::chrono::system_clock::time_point t,
                                        TimePrecision precision = TimePrecision::kMilliseconds);

}  // namespace fwdsink
