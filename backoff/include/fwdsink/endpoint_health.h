// SPDX-License-Identifier: Apache-2.0
// Endpoint health: which of several endpoints (a primary and its fallbacks) the next
// request goes to, when to leave one and when to take the primary back.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fwdsink/clock.h"
#include "fwdsink/status.h"

namespace fwdsink {

// When to leave an endpoint and when to come back. Plain data. @ref LLP 0019#leave
struct FailoverPolicy {
  // Consecutive failures (transport errors, 5xx, a 503 without a usable Retry-After)
  // after which the endpoint in use is left. With the default ladder (30 s, 60 s, ...)
  // the first failure waits 30 s, the second leaves: a dead primary costs about
  // failover_after before the fallback takes over.
  std::size_t failures_to_leave = 2;
  // An endpoint whose next wait (its gate, a Retry-After, a ladder rung) would be
  // longer than this is left at once. A 429 with a shorter Retry-After is
  // backpressure: the sender waits and stays.
  std::chrono::milliseconds failover_after = std::chrono::seconds{30};
  // Least time on a fallback before the primary is probed again (with the next real
  // chunk), and least time between two probes: the primary is never taken back sooner,
  // so the endpoint in use cannot flap faster than this.
  std::chrono::milliseconds failback_after = std::chrono::seconds{60};
};

// Checks every field; a kInvalidConfig status names the bad one ("failback_after").
[[nodiscard]] Status Validate(const FailoverPolicy& policy);

enum class EndpointState {
  kUp,    // answering, or not tried yet
  kDown,  // left after failures or a long hold, or a probe failed; up again on a 2xx
};
[[nodiscard]] std::string_view to_string(EndpointState state);

// What one request to an endpoint came to, as far as its health goes.
struct HealthReport {
  enum class Kind {
    kAccepted,  // a 2xx: the endpoint works
    kFailed,    // a transport error, a 5xx, a 503 without a usable Retry-After
    kHeld,      // backpressure: a 429/503 with Retry-After, a 429 alone, a gate hold
  };
  std::size_t endpoint = 0;
  Kind kind = Kind::kAccepted;
  bool probe = false;  // the request was the probe Choose() handed out
  // kFailed/kHeld: the wait this endpoint imposes before the next try.
  std::chrono::milliseconds wait{0};
};

// What a report changed.
struct HealthDecision {
  enum class Move {
    kStay,         // the endpoint in use stays
    kFailover,     // the endpoint in use was left for `active`
    kFailback,     // a probe of the primary succeeded: `active` is the primary again
    kProbeFailed,  // the probe failed: the fallback in use stays
  } move = Move::kStay;
  std::size_t active = 0;  // the endpoint in use after the report
  // A failed or held request may go again at once to `active` (it is a different
  // endpoint, not known to be down), without the ladder's wait.
  bool resend_now = false;
};
[[nodiscard]] std::string_view to_string(HealthDecision::Move move);

// The endpoint-health state machine over endpoints 0 (the primary) .. n-1 (the
// fallbacks, tried in order). Pure: no clock of its own, no I/O; callers pass "now"
// (monotonic) and carry the decisions out. With one endpoint it never moves.
//
// Leaves the endpoint in use after failures_to_leave consecutive failures, or when its
// next wait would pass failover_after; goes to the next endpoint in order that is not
// down (or simply the next one when all are). Probes the primary with one request no
// sooner than failback_after after the last switch and the last probe; a probe that
// gets a 2xx takes the primary back. Ignores what a response means beyond the report
// kinds (the verdict decides that), and does not wait: Choose() only says where.
//
// Not thread-safe: the sink's Endpoints holds it under a mutex. @ref LLP 0019#states
class EndpointHealth {
 public:
  EndpointHealth(FailoverPolicy policy, std::size_t endpoints);

  struct Choice {
    std::size_t endpoint = 0;
    bool probe = false;  // a probe of the primary: report it with probe = true
  };
  // Returns the endpoint for the next request at `now`: the one in use, or the primary
  // when a probe is due (then no other probe is handed out for failback_after).
  [[nodiscard]] Choice Choose(MonotonicTime now);
  // Takes the outcome of one request and returns what it changed.
  HealthDecision Report(const HealthReport& report, MonotonicTime now);

  [[nodiscard]] std::size_t active() const { return active_; }
  [[nodiscard]] std::size_t size() const { return endpoints_.size(); }
  [[nodiscard]] EndpointState state(std::size_t endpoint) const;
  [[nodiscard]] std::size_t failures(std::size_t endpoint) const;
  [[nodiscard]] const FailoverPolicy& policy() const { return policy_; }

 private:
  struct Entry {
    EndpointState state = EndpointState::kUp;
    std::size_t failures = 0;  // consecutive, since the last 2xx or switch to it
  };
  HealthDecision Leave(MonotonicTime now);
  HealthDecision Probed(const HealthReport& report, MonotonicTime now);
  [[nodiscard]] bool MustLeave(const HealthReport& report, const Entry& entry) const;

  const FailoverPolicy policy_;
  std::vector<Entry> endpoints_;
  std::size_t active_ = 0;
  MonotonicTime switched_{};    // the last change of active_
  MonotonicTime last_probe_{};  // the last probe handed out
};

}  // namespace fwdsink
