// SPDX-License-Identifier: Apache-2.0
// Private to the engine: spreads one call's request starts over a round trip, so that a
// window of chunks does not go, and come back, as one burst. @ref LLP 0014#stagger
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "fwdsink/clock.h"

namespace fwdsink {

// A window of W requests that starts at once over a link shared by the requests (one
// bottleneck, as a real link has) comes back at once: the link shares itself among them,
// so they end together, and then it idles for a round trip while the answers travel
// back and the next window's first bytes travel out. Requests that start one after
// another end one after another, and a started one is always on the link. So a start
// waits until `spacing()` has passed since the last one: the least round trip an
// accepted request took, divided by W, which spreads W starts over one round trip, the
// time the window takes anyway. A spacing under `floor` is none: a round trip of a few
// milliseconds (a local network) has no idle time worth a timer, and waits shorter
// than the sleeps' resolution would slow the window down. Pure bookkeeping on
// monotonic time; one call's, not thread-safe. @ref LLP 0014#stagger
class StartSpacing {
 public:
  // `window`: requests of the call that may be in flight at once (>= 1).
  explicit StartSpacing(std::size_t window,
                        std::chrono::microseconds floor = std::chrono::milliseconds{1});

  // Records an accepted request's round trip (from its post to its answer).
  void OnAccepted(std::chrono::microseconds round_trip);
  // How long from `now` until a request may start; zero: now.
  [[nodiscard]] std::chrono::microseconds Wait(MonotonicTime now) const;
  // A request started at `now` (the next may start a spacing later).
  void Started(MonotonicTime now);
  // The gap between starts now; zero: none (no round trip yet, or under the floor).
  [[nodiscard]] std::chrono::microseconds spacing() const;

 private:
  const std::size_t window_;
  const std::chrono::microseconds floor_;
  std::chrono::microseconds least_{0};  // the least round trip accepted; 0: none yet
  std::optional<MonotonicTime> last_;   // the last start
};

}  // namespace fwdsink
