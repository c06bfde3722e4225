// SPDX-License-Identifier: Apache-2.0
// Private: wall-clock times as the on-disk records hold them (milliseconds since the
// Unix epoch) and as file names carry them. Pure functions, defined in time_format.cc
// beside FormatRfc3339, with which they share the UTC split.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fwdsink::unix_time {

// Milliseconds since the Unix epoch, and back (saturating: a record is not ours to trust).
[[nodiscard]] std::int64_t ToUnixMs(std::chrono::system_clock::time_point t) noexcept;
[[nodiscard]] std::chrono::system_clock::time_point FromUnixMs(std::int64_t ms) noexcept;

// "20261130T102124.123Z": sortable, file-name safe.
[[nodiscard]] std::string FormatCompactUtcMs(std::chrono::system_clock::time_point t);

}  // namespace fwdsink::unix_time
