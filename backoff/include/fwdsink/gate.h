// SPDX-License-Identifier: Apache-2.0
// One backoff per resource: a gate shared by every sender to one endpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "fwdsink/clock.h"

namespace fwdsink {

// When the server answers one sender with a positive Retry-After, every sender to that
// endpoint holds until then, so the next partition does not hammer a throttled server.
// A hold is never shortened by a later, shorter one (Chromium's "never reduce the
// release horizon"). Pure bookkeeping on monotonic time: callers pass "now" and sleep
// themselves. Thread-safe: any thread may call any method (state guarded by mu_).
// @ref LLP 0021#shared-gate
class EndpointGate {
 public:
  struct Hold {
    std::chrono::milliseconds remaining{0};  // zero when the gate is open
    std::string reason;                      // why it was closed (e.g. "byte_rate")
  };

  // Closes the gate until `until` with `reason`, unless it is already closed longer.
  void HoldUntil(MonotonicTime until, std::string reason);
  // Returns how long a sender must still wait at `now`, and why.
  [[nodiscard]] Hold Remaining(MonotonicTime now) const;
  // Returns how many times HoldUntil extended the gate.
  [[nodiscard]] std::uint64_t holds() const;

 private:
  mutable std::mutex mu_;
  MonotonicTime until_{};    // guarded by mu_
  std::string reason_;       // guarded by mu_
  std::uint64_t holds_ = 0;  // guarded by mu_
};

}  // namespace fwdsink
