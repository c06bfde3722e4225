// SPDX-License-Identifier: Apache-2.0
// The spool's on-disk record readers, reachable from tests and fuzz targets
// (tests/fuzz/, LLP 0023#fuzzing). Internal to the sink (not installed). Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fwdsink/cursor.h"
#include "fwdsink/dead_letters.h"
#include "fwdsink/status.h"

namespace fwdsink::internal {

// Most ranges a cursor journal holds: a window of 64 chunks, their split pieces and
// the acknowledged runs between them stay far below it. @ref LLP 0020#cursor-v2
inline constexpr std::size_t kMaxJournalRanges = 4096;
// Largest cursor file read: a v2 record with kMaxJournalRanges ranges of 20-digit
// offsets, and room to spare; anything bigger is garbage, not a cursor.
inline constexpr std::size_t kMaxCursorFileBytes = 256 * 1024;

// Parses one cursor record: "fwdsink-cursor v1 offset=... crc=...\n" (no journal) or
// "fwdsink-cursor v2 offset=... ranges=... crc=...\n" (its journal checked by
// CheckJournal). kCorrupt saying why, `out` untouched, on anything else.
// @ref LLP 0020#cursor-format
[[nodiscard]] Status ParseCursorRecord(std::string_view text, CursorState& out);

// Formats `state` as a v2 record (its status and message are not part of it).
[[nodiscard]] std::string FormatCursorRecord(const CursorState& state);

// Checks a journal against its offset: at most kMaxJournalRanges ranges, none empty,
// the first beginning at `offset` and each next one where the one before ends (so
// sorted, disjoint and gapless). kCorrupt saying why otherwise. @ref LLP 0020#cursor-v2
[[nodiscard]] Status CheckJournal(std::uint64_t offset, std::span<const CursorRange> ranges);

// Parses one dead-letter record (dead/<name>.json). kCorrupt saying why otherwise.
[[nodiscard]] Status ParseDeadRecord(std::string_view text, DeadEntry& out);

}  // namespace fwdsink::internal
