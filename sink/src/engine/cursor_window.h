// SPDX-License-Identifier: Apache-2.0
// Private to the engine: acknowledgements in, in any order; the cursor out. The window
// holds the ranges of a partition in flight (a chunk, or a refused chunk's whole range
// while its parts go out), and says how far the partition is acknowledged without a gap
// (acked_end) and how far whole ranges are (durable_end: where a cursor may be persisted
// so that a restart cuts the same chunks under the same keys). Today one range is open
// at a time, or a split one; the window of chunks per partition widens it.
// Sender thread only. @ref LLP 0014#cursor-window
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace fwdsink {

class CursorWindow {
 public:
  // The partition is acknowledged (and its cursor persisted) up to `base`.
  explicit CursorWindow(std::uint64_t base = 0) : base_(base) {}

  // Opens [begin, end), which starts at or after the last range opened; a range inside
  // one open already (a part of a split chunk) opens nothing. Returns false (nothing
  // opened) for a range that overlaps one open without lying inside it, or that begins
  // before the durable end.
  bool Open(std::uint64_t begin, std::uint64_t end);
  // Acknowledges [begin, end), inside an open range; returns false (nothing changes)
  // when no open range holds it.
  bool Ack(std::uint64_t begin, std::uint64_t end);

  // The end of the contiguous acknowledged prefix (parts of an open range count).
  [[nodiscard]] std::uint64_t acked_end() const;
  // The end of the contiguous prefix of wholly acknowledged ranges.
  [[nodiscard]] std::uint64_t durable_end() const { return base_; }
  // Whether an offset lies strictly inside an open range: a cursor there would cut a
  // chunk at a new place after a restart.
  [[nodiscard]] bool Inside(std::uint64_t offset) const;
  [[nodiscard]] std::size_t open() const { return open_.size(); }

 private:
  struct Range {
    std::pair<std::uint64_t, std::uint64_t> span;                  // [begin, end)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> acked{};  // sorted, merged
    [[nodiscard]] bool whole() const { return acked.size() == 1 && acked[0] == span; }
  };
  Range* Find(std::uint64_t begin, std::uint64_t end);
  void Retire();  // moves base_ past the wholly acknowledged ranges at the front

  std::uint64_t base_;
  std::deque<Range> open_;  // by begin; disjoint
};

}  // namespace fwdsink
