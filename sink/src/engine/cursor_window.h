// SPDX-License-Identifier: Apache-2.0
// Private to the engine: acknowledgements in, in any order; the cursor and the journal
// out. The window holds the ranges of a partition in flight (up to `window` chunks at
// once, each cut where the last one ended), each made of pieces: the range itself, or
// the parts a split cut it into, each sent (and after a crash re-sent) under its own
// key. It says how far the partition is acknowledged without a gap (acked_end), how far
// whole ranges are (durable_end: where a cursor may be persisted so that a restart cuts
// the same chunks under the same keys), and what must be persisted past that
// (Journal: the pieces owed and the ranges acknowledged past a gap), so that a restart
// re-sends exactly the pieces owed (Restore). It ignores bytes, keys and time.
// Sender thread only. @ref LLP 0014#cursor-window @ref LLP 0020#cursor-v2
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "fwdsink/cursor.h"

namespace fwdsink {

class CursorWindow {
 public:
  // The partition is acknowledged (and its cursor persisted) up to `base`.
  explicit CursorWindow(std::uint64_t base = 0) : base_(base) {}

  // Returns the window after a restart from a cursor at `offset` and its journal (as
  // Spool::LoadCursor gives them: gapless from `offset`): each unacknowledged journal
  // range is open as a range of its own (so it is re-sent with the same begin and end,
  // under the same key), each acknowledged one is acknowledged, and durable_end() moves
  // past a contiguous acknowledged prefix at once. A journal range that cannot be
  // opened (out of order, before the offset) is ignored.
  [[nodiscard]] static CursorWindow Restore(std::uint64_t offset,
                                            std::span<const CursorRange> journal);

  // Opens [begin, end), which starts at or after the last range opened; a range inside
  // one open already (a part of a split chunk) opens nothing. Returns false (nothing
  // opened) for a range that overlaps one open without lying inside it, or that begins
  // before the durable end.
  bool Open(std::uint64_t begin, std::uint64_t end);
  // Acknowledges [begin, end), inside an open range (a piece, or a part of one); returns
  // false (nothing changes) when no open range holds it.
  bool Ack(std::uint64_t begin, std::uint64_t end);
  // Cuts the unacknowledged piece [begin, end) (an open range, or a piece of one after
  // an earlier split) into the pieces [begin, mid) and [mid, end), each journaled and
  // re-sent on its own. Returns false (nothing changes) for anything else: no such
  // piece, a piece acknowledged whole, or mid not strictly inside.
  bool Split(std::uint64_t begin, std::uint64_t mid, std::uint64_t end);

  // The end of the contiguous acknowledged prefix (parts of an open range count).
  [[nodiscard]] std::uint64_t acked_end() const;
  // The end of the contiguous prefix of wholly acknowledged ranges.
  [[nodiscard]] std::uint64_t durable_end() const { return base_; }
  // The end of the last range opened (durable_end() when none): where new chunks are cut.
  [[nodiscard]] std::uint64_t end() const;
  // Whether an offset lies strictly inside an open range: a cursor there would cut a
  // chunk at a new place after a restart.
  [[nodiscard]] bool Inside(std::uint64_t offset) const;
  // The number of ranges open (those acknowledged past a gap included).
  [[nodiscard]] std::size_t open() const { return open_.size(); }

  // Returns what to persist past durable_end(): each unacknowledged piece (acked=false)
  // and each acknowledged piece (acked=true), sorted, disjoint, acknowledged neighbours
  // merged. A piece acknowledged only in part is owed whole. Dead-lettered pieces are
  // acknowledged by the caller with Ack(). @ref LLP 0020#cursor-v2
  [[nodiscard]] std::vector<CursorRange> Journal() const;
  // Returns the unacknowledged pieces, in order: what is still owed.
  [[nodiscard]] std::vector<CursorRange> Pending() const;

 private:
  using Span = std::pair<std::uint64_t, std::uint64_t>;  // [begin, end)
  struct Range {
    Span span;
    std::vector<Span> acked{};   // sorted, merged
    std::vector<Span> pieces{};  // sorted, covering span exactly; {span} until a split
    [[nodiscard]] bool whole() const { return acked.size() == 1 && acked[0] == span; }
    [[nodiscard]] bool Covered(const Span& piece) const;
  };
  Range* Find(std::uint64_t begin, std::uint64_t end);
  void Retire();  // moves base_ past the wholly acknowledged ranges at the front

  std::uint64_t base_;
  std::deque<Range> open_;  // by begin; disjoint
};

}  // namespace fwdsink
