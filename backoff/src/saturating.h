// SPDX-License-Identifier: Apache-2.0
// Private arithmetic helpers of the backoff and sink libraries (not installed).
#pragma once

#include <chrono>

namespace fwdsink {

// Adds two non-negative durations, saturating at milliseconds::max() instead of
// overflowing. Pure; safe from any thread.
[[nodiscard]] inline std::chrono::milliseconds SaturatingAdd(std::chrono::milliseconds a,
                                                             std::chrono::milliseconds b) {
  if (b > std::chrono::milliseconds::zero() && a > std::chrono::milliseconds::max() - b) {
    return std::chrono::milliseconds::max();
  }
  return a + b;
}

}  // namespace fwdsink
