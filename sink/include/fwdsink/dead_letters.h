// SPDX-License-Identifier: Apache-2.0
// Dead letters: poisoned chunks and partitions that ran past their give-up horizon,
// kept in SPOOL/dead/ for an operator to list, search, requeue or purge.
// The operations live on fwdsink::Spool (spool.h); this header holds their types.
//
// Each dead letter is two files sharing a "dead name":
//   dead/<dead name>.ndjson  the rows (for kind horizon: the whole partition file,
//                            the dead rows starting at data_offset)
//   dead/<dead name>.json    the record: {partition, begin, end, rows, status, reason,
//                            kind, dead_at, dead_at_ms, data_offset[, requeued_at,
//                            requeued_at_ms, requeued_as, requeues]}
// @ref LLP 0020#dead-letters
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/status.h"

namespace fwdsink {

// Stop reading a dead letter's files for a search past this many bytes each.
inline constexpr std::uint64_t kDeadSearchMaxBytes = 64ull << 20;

enum class DeadKind {
  kPoison,   // one chunk the server refused as malformed (400/422)
  kHorizon,  // the rest of a partition that kept failing past its give-up horizon
};

// Returns "poison" or "horizon", the spelling used in the record.
[[nodiscard]] std::string_view to_string(DeadKind kind) noexcept;

// One dead letter, as read from its record.
struct DeadEntry {
  std::string name;         // the dead name: <partition>.<begin>-<end>
  std::string partition;    // the partition the rows came from
  std::uint64_t begin = 0;  // byte range of the dead rows in the original partition
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
  int status = 0;      // HTTP status of the last refusal (0 if none)
  std::string reason;  // the server's details.reason, or the driver's reason
  DeadKind kind = DeadKind::kPoison;
  std::chrono::system_clock::time_point dead_at;
  // Where the dead rows start inside rows_path (0 for poison, begin for horizon).
  std::uint64_t data_offset = 0;
  std::optional<std::chrono::system_clock::time_point> requeued_at;
  std::optional<std::string> requeued_as;  // the latest requeued partition's name
  std::uint32_t requeues = 0;
  std::filesystem::path rows_path;
  std::filesystem::path record_path;
};

// Which dead letters to list or purge. Every set field must match (AND).
struct DeadFilter {
  std::optional<std::string> reason;  // exact match
  std::optional<int> status;          // exact match
  std::optional<DeadKind> kind;
  // Dead at or before now - older_than.
  std::optional<std::chrono::milliseconds> older_than;
  // Dead after now - newer_than.
  std::optional<std::chrono::milliseconds> newer_than;
  // Substring (case-sensitive) of the record's text or of the dead rows; each file is
  // read up to kDeadSearchMaxBytes.
  std::optional<std::string> search;
  std::size_t offset = 0;   // page start, in the oldest-first order
  std::size_t limit = 100;  // page size; 0 means no limit
};

// One page of dead letters.
struct DeadList {
  std::vector<DeadEntry> entries;  // oldest first (dead_at, then name)
  std::size_t total = 0;           // matches before paging
  // Records that could not be parsed (named, so an operator can look at them).
  std::vector<std::string> unreadable;
};

// Caps on the dead-letter area (unset: no cap). @ref LLP 0025#caps
struct DeadCaps {
  // Delete the oldest dead letters while the area holds more than this many bytes (the
  // rows file and the record of each dead letter, as on disk).
  std::optional<std::uint64_t> max_bytes{};
  // Delete the dead letters that died at or before now - max_age.
  std::optional<std::chrono::milliseconds> max_age{};
  [[nodiscard]] bool any() const noexcept { return max_bytes || max_age; }
};

// One dead letter deleted by a cap.
struct PurgedDeadLetter {
  DeadEntry entry;          // as its record said (the files are gone)
  std::uint64_t bytes = 0;  // rows file + record, as on disk
  std::string_view cap;     // "max_dead_age" or "max_dead_bytes"
};

class Spool;

// Deletes dead letters over `caps`, oldest first (dead_at, then name): first those
// older than max_age, then more of the oldest until the area is within max_bytes.
// Unreadable records are neither counted nor deleted (an operator looks at them).
// Returns what was deleted, in order; on an I/O error, the error (what was deleted
// before it stays deleted). Call it from the thread that owns `spool` (the driver's,
// once per tick). `now` anchors the age cap.
[[nodiscard]] Result<std::vector<PurgedDeadLetter>> EnforceDeadCaps(
    Spool& spool, const DeadCaps& caps, std::chrono::system_clock::time_point now);

}  // namespace fwdsink
