// SPDX-License-Identifier: Apache-2.0
// @ref LLP 0014#stagger
#include "engine/start_spacing.h"

#include <algorithm>

namespace fwdsink {

using std::chrono::microseconds;

StartSpacing::StartSpacing(std::size_t window, microseconds floor)
    : window_(std::max<std::size_t>(window, 1)), floor_(floor) {}

void StartSpacing::OnAccepted(microseconds round_trip) {
  if (round_trip <= microseconds::zero()) return;
  if (least_ == microseconds::zero() || round_trip < least_) least_ = round_trip;
}

microseconds StartSpacing::spacing() const {
  const microseconds gap = least_ / static_cast<microseconds::rep>(window_);
  return gap < floor_ ? microseconds::zero() : gap;
}

// From the last start with the spacing now: a round trip learned since then (a shorter
// one) counts at once, so a start never waits longer than a window of the least.
microseconds StartSpacing::Wait(MonotonicTime now) const {
  const microseconds gap = spacing();
  if (gap == microseconds::zero() || !last_ || now >= *last_ + gap) return microseconds::zero();
  return std::chrono::ceil<microseconds>(*last_ + gap - now);
}

// An idle call banks no starts for a burst: the next one is a spacing after this one.
void StartSpacing::Started(MonotonicTime now) { last_ = now; }

}  // namespace fwdsink
