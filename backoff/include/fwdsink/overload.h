// SPDX-License-Identifier: Apache-2.0
// The driver's overload level: how far to stretch the pause between ticks.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace fwdsink {

// A ratchet over ticks. Each tick reports whether it was throttled (some partition was
// respooled under backpressure) and whether it made progress (any chunk acknowledged).
//
//   throttled, no progress  -> level + 1 (up to the last step): real repeated overload
//   any progress            -> level - 1 (down to 0): decays with *partial* progress,
//                              not only after a perfectly clean tick
//   neither                 -> unchanged (idle ticks say nothing about the server)
//
// The pause before the next tick is steps[level]; with the defaults
//   1 s, 5 s, 15 s, 30 s, 60 s, 60 s, ...  (no increase past the last step)
// Not thread-safe: owned by the driver's thread.
// @ref LLP 0021#overload-level
class OverloadLevel {
 public:
  explicit OverloadLevel(std::vector<std::chrono::milliseconds> steps = {
                             std::chrono::seconds{1}, std::chrono::seconds{5},
                             std::chrono::seconds{15}, std::chrono::seconds{30},
                             std::chrono::seconds{60}});

  // Records one tick's result and returns the new level.
  std::size_t Record(bool throttled, bool progress);
  // Returns the current level, 0 = not overloaded.
  [[nodiscard]] std::size_t level() const { return level_; }
  // Returns the pause before the next tick at the current level.
  [[nodiscard]] std::chrono::milliseconds Pause() const { return steps_[level_]; }

 private:
  std::vector<std::chrono::milliseconds> steps_;  // never empty
  std::size_t level_ = 0;
};

}  // namespace fwdsink
