// SPDX-License-Identifier: Apache-2.0
// What the two halves of the dead-letter area share (dead_letter_upkeep.cc lists,
// requeues and purges; dead_letter_writes.cc writes): file names and the record's text,
// defined in dead_records.cc. Internal to the sink (not installed). @ref LLP 0020#dead-letters
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fwdsink/dead_letters.h"
#include "fwdsink/status.h"

namespace fwdsink::internal {

inline constexpr std::string_view kDeadRowsExt = ".ndjson";
inline constexpr std::string_view kDeadRecordExt = ".json";
inline constexpr std::size_t kDeadReadBlock = 64 * 1024;  // copies and scans, a block at a time

// Checks a dead-letter name (a partition name with ".<begin>-<end>" and requeue
// suffixes): kInvalidName saying why.
[[nodiscard]] Status ValidateDeadName(std::string_view name);
// Returns "<partition>.<begin>-<end>".
[[nodiscard]] std::string DeadName(std::string_view partition, std::uint64_t begin,
                                   std::uint64_t end);
// Returns the record's text (dead/<name>.json), JSON, one field a line.
[[nodiscard]] std::string DumpDeadRecord(const DeadEntry& e);

}  // namespace fwdsink::internal
