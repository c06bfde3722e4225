// SPDX-License-Identifier: Apache-2.0
// A partition's cursor: how far it is acknowledged, its journal of ranges past that,
// the file it belongs to and its failure history, as Spool::LoadCursor reads it and
// Spool::SaveCursor writes it (spool.h). Plain data; the types the sink, the spool and
// the driver pass between them. @ref LLP 0020#cursor-v2
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fwdsink {

// What reading a partition's cursor record found (CursorState::status).
enum class CursorStatus {
  kMissing,  // no cursor file: start at 0, no failures recorded
  kOk,       // a valid record was read
  kCorrupt,  // torn or invalid record (message says why): resume safely from 0
  kError,    // could not be read (bad name, I/O error, partition gone): skip for now
  // The record belongs to another file than the one now under the partition's name
  // (replaced, truncated below the cursor, rewritten; message says which): neither
  // resumed nor restarted. @ref LLP 0020#file-identity
  kChanged,
};

// Which file a cursor record belongs to, taken when its first record is written: the
// device and inode, and a checksum of the file's first bytes (an append leaves them, a
// rewrite in place does not). @ref LLP 0020#file-identity
struct PartitionIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t head_bytes = 0;  // how many first bytes head_crc covers (<= 4096)
  std::uint32_t head_crc = 0;    // CRC-32 of them
  bool operator==(const PartitionIdentity&) const = default;
};

[[nodiscard]] std::string_view to_string(CursorStatus status) noexcept;

// One range of a partition's journal: [begin, end) past the cursor's offset, either in
// flight (acked=false: after a crash it is re-sent exactly, under its key
// `<partition>:<begin>-<end>`) or acknowledged past a gap (acked=true: never re-sent).
// @ref LLP 0020#cursor-v2
struct CursorRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool acked = false;
  friend bool operator==(const CursorRange&, const CursorRange&) = default;
};

// The persisted state of one partition.
struct CursorState {
  // Byte offset just past the last acknowledged chunk; always 0 or a line start.
  std::uint64_t offset = 0;
  // Wall-clock time of the partition's first failure, kept until it is delivered or
  // dead-lettered; the give-up horizon is measured from it.
  std::optional<std::chrono::system_clock::time_point> first_failure;
  // Failures recorded since the partition was sealed.
  std::uint32_t failures = 0;
  // The journal: the ranges past `offset` in flight or acknowledged past a gap. Sorted
  // by begin, disjoint and gapless from `offset` (the first begins at `offset`, each
  // next one where the one before ends), every end within the partition. Empty for a
  // v1 record. @ref LLP 0020#cursor-v2
  std::vector<CursorRange> ranges;
  // The file the record belongs to (v3); absent in a v1 or v2 record, which resumes as
  // before. @ref LLP 0020#file-identity
  std::optional<PartitionIdentity> identity;
  CursorStatus status = CursorStatus::kMissing;
  std::string message;  // why, when status is kCorrupt or kError
};

}  // namespace fwdsink
