// SPDX-License-Identifier: Apache-2.0
// The road a partition's cursor takes from the sink to disk: what the sink tells while
// it sends (the journal before new ranges leave, each acknowledged chunk after) and the
// interface that takes it (CursorLog), handed to the sink at the start of a partition
// (ForwardStart::cursor_log, forward_result.h). The spool's cursor writer implements it
// (spool/cursor_writer.h); the sink calls it. Plain data and one interface, apart from
// both, so that the spool needs no header of the engine above it. @ref LLP 0021#cursor-road
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fwdsink/cursor.h"

namespace fwdsink {

// An acknowledged chunk, passed to the cursor log and the ack callback before the next
// chunk is sent. Also passed for a poisoned chunk once the poison callback has put it in
// dead letters (dead_lettered): the cursor then moves past it by the same route.
struct AckedChunk {
  std::string_view partition;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
  bool duplicate = false;      // the server said it had this key already
  bool final = false;          // the partition is acknowledged to its end with this chunk
  bool dead_lettered = false;  // the rows went to dead letters, not to the server
  // Part of a split chunk whose other parts are not all acknowledged yet. A cursor
  // persisted here would make a restart chunk differently from the halves the server
  // may already hold (new keys, rows stored twice): the driver persists the cursor at
  // the split chunk's end instead. @ref LLP 0023#split-window
  bool inside_split = false;
  // Where the cursor may be persisted now: the end of the contiguous prefix of wholly
  // acknowledged chunks (never inside a split chunk, never past a gap). @ref LLP 0014#window
  std::uint64_t cursor = 0;
  // Requests of the partition still in flight after this one.
  std::size_t in_flight = 0;
  // The journal past `cursor` (CursorWindow::Journal): the ranges in flight and those
  // acknowledged past a gap, to persist with the cursor. @ref LLP 0014#journal
  std::span<const CursorRange> journal{};
};

// The journal of a partition's call, handed over before the first byte of new ranges
// (chunks, split pieces) leaves. @ref LLP 0014#journal
struct JournalState {
  std::string_view partition;
  std::uint64_t cursor = 0;               // as AckedChunk::cursor
  std::span<const CursorRange> ranges{};  // gapless from `cursor`
};

// Where a sink writes a partition's cursor while it sends it: the journal before new
// ranges leave, the cursor after each acknowledgement. It decides how and when the
// records reach the disk, within the two rules below; the sink only calls it, and stops
// the partition (kCursorNotSaved, nothing new sent) when a call returns false. It
// ignores slots, dead letters and outcomes: those are the driver's.
// @ref LLP 0021#cursor-road
//
// Threads: called on the sink's sending thread, during ForwardPartition(), never
// concurrently for one sink. Not owned by the sink: it must outlive the call.
class CursorLog {
 public:
  virtual ~CursorLog() = default;
  // Makes `state` durable before it returns: the sink sends no byte of the new ranges
  // until it has. Returns false if it could not.
  [[nodiscard]] virtual bool Journal(const JournalState& state) = 0;
  // Takes the cursor and journal after `chunk` was acknowledged (or dead-lettered); it
  // may return before they are on disk (the journal already bounds what a crash
  // re-sends). Returns false if an earlier write failed.
  [[nodiscard]] virtual bool Acked(const AckedChunk& chunk) = 0;
};

}  // namespace fwdsink
