// SPDX-License-Identifier: Apache-2.0
// When a request should carry "Expect: 100-continue": only while a refusal is likely,
// and never to an endpoint that ignores the header. @ref LLP 0017#expect-when
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>

#include "fwdsink/clock.h"

namespace fwdsink {

// How long what an endpoint said about Expect is remembered. With the defaults: a
// refusal (429, 503, 413, 401) keeps Expect on until a minute after the wait it asked
// for ends (a 429 with Retry-After: 1 at t: until t + 61 s; a 413 at t: until t + 60 s),
// the minute the pacer keeps a learned limit without a refusal (PacingPolicy::
// forget_after); two requests in a row whose wait for 100 Continue ran out turn it off
// for 10 minutes, then it is on again whenever a refusal is likely.
// @ref LLP 0017#expect-when
struct ExpectPolicy {
  // A refusal keeps Expect on this long after the end of the wait it caused. > 0.
  std::chrono::milliseconds refusal_memory = std::chrono::seconds{60};
  // Requests in a row whose wait for 100 Continue ran out with neither a 100 nor a
  // final status: the endpoint ignores the header (a front that does not forward it, a
  // server that reads the body without a word). >= 1.
  std::size_t ignored_in_a_row = 2;
  // ... and then no request to it carries Expect for this long. > 0.
  std::chrono::milliseconds ignored_pause = std::chrono::minutes{10};
};

// What else says that the next request may be refused, besides recent refusals.
struct ExpectSignals {
  bool gate_closed = false;       // a Retry-After holds the endpoint now
  bool pacer_near_limit = false;  // EndpointPacer::NearLimit: no room for another request
};

// One endpoint's memory of refusals and of how it answered Expect, and the rule that
// reads it: Expect while a refusal is likely (a refusal within the memory, a closed
// gate, a pacer at its limit), unless the endpoint ignored the header lately. Ignores
// the size threshold (the transport's) and a 417 (the endpoint's own flag, which turns
// Expect off for good). Pure bookkeeping on monotonic time: callers pass "now".
// Thread-safe: shared by every sender to the endpoint; state guarded by mu_.
// @ref LLP 0017#expect-when
class ExpectAdvisor {
 public:
  explicit ExpectAdvisor(ExpectPolicy policy = {});

  // Records a refusal at `now` and the wait the sender takes before it sends again
  // (Retry-After or a ladder rung; zero for a 413 or a 401). A later refusal never
  // shortens what an earlier one set.
  void OnRefused(MonotonicTime now, std::chrono::milliseconds wait);
  // Records how a request that carried Expect went: `waited_out` when its wait for 100
  // Continue ran out with neither a 100 nor a final status, false when the endpoint
  // answered the head (a 100 or a final status). Returns true when this answer turned
  // Expect off (the ignored_in_a_row-th in a row): the caller says so once.
  [[nodiscard]] bool OnExpectAnswered(MonotonicTime now, bool waited_out);
  // Returns whether a request at `now` should carry Expect.
  [[nodiscard]] bool Expect(MonotonicTime now, const ExpectSignals& signals) const;
  // Returns whether Expect is off at `now` because the endpoint ignored it.
  [[nodiscard]] bool Ignored(MonotonicTime now) const;
  [[nodiscard]] const ExpectPolicy& policy() const { return policy_; }

 private:
  const ExpectPolicy policy_;
  mutable std::mutex mu_;
  bool refused_ = false;           // guarded by mu_
  MonotonicTime refused_until_{};  // Expect on until then; guarded by mu_
  std::size_t waited_out_ = 0;     // in a row; guarded by mu_
  bool paused_ = false;            // guarded by mu_
  MonotonicTime paused_until_{};   // no Expect until then; guarded by mu_
};

}  // namespace fwdsink
