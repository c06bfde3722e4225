// SPDX-License-Identifier: Apache-2.0
// Adaptive concurrency: how many requests to one endpoint may be in flight at once.
// @ref LLP 0018#limit
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string_view>

#include "fwdsink/clock.h"
#include "fwdsink/status.h"

namespace fwdsink {

// How the limit moves. With the defaults it starts at the endpoint's last stable limit
// when one is known, else at 4 (the initial window; never above the ceiling); at the
// end of each window (one baseline round trip, at least 100 ms) in which every slot was
// used, nothing was refused and the mean round trip stayed within 1.5 x the baseline,
// it grows: doubling until the first fall (slow start: 4, 8, 16, 32), then by one
// (additive increase: 16, 17, 18, ... 32, no increase past the ceiling). A 429/503, a
// transport error or a window whose mean round trip passed 1.5 x the baseline halves it
// (8, 4, 2, 1, 1: never below one), at most once per window; a round trip only a little
// past that falls less, to limit x 1.5 x baseline / mean (LLP 0018#knee).
// @ref LLP 0018#signals @ref LLP 0018#start
struct ConcurrencyPolicy {
  // true: AIMD between 1 and `max` (--concurrency adaptive). false: always `max`
  // (--concurrency N; 1 is one request in flight, as before this existed). It counts
  // requests, every partition's window together. @ref LLP 0014#window
  bool adaptive = true;
  // The ceiling (adaptive) or the fixed limit (--max-concurrency, --concurrency N).
  std::size_t max = 32;
  // Where an adaptive limit starts when the endpoint has no stable limit yet (capped by
  // `max`): TCP's initial window in requests. >= 1. @ref LLP 0018#start
  std::size_t initial = 4;
  // A window's mean round trip above baseline x (1 + rtt_tolerance) is "rising
  // latency": the requests queue somewhere, more of them would not go faster. > 0.
  double rtt_tolerance = 0.5;
  // Multiplicative decrease, in (0, 1).
  double decrease = 0.5;
  // Double per latency-bound window until the first decrease (a backlog at 100 ms of
  // round trip reaches 8 in three windows, not seven), then add one.
  bool slow_start = true;
  // Weight of a window's mean round trip in the baseline's moving average, in (0, 1].
  double baseline_weight = 0.3;
  // Shortest window; a window lasts one baseline round trip, never less than this. Long
  // enough that a limiter's initial burst, sent at link speed by one sender, runs out
  // inside the first window (its refusal then holds the limit at 1) rather than just
  // after the limit grew (two senders refused by one burst). @ref LLP 0018#signals
  std::chrono::milliseconds min_window = std::chrono::milliseconds{100};
};

// Checks the policy; the field is named ("max", "decrease", ...).
[[nodiscard]] Status Validate(const ConcurrencyPolicy& policy);

// What one request said about the endpoint.
enum class RequestSignal {
  kAccepted,      // a 2xx: its round trip is a latency sample
  kBackpressure,  // a 429/503 (or an engine's overload code)
  kError,         // a transport error (no HTTP response) or another 5xx
  kPaced,         // accepted, but the pacer held it: no latency sample, no growth
};

// A change of the limit, for the event and the counters.
struct LimitChange {
  std::size_t from = 0;
  std::size_t to = 0;
  // "latency_bound" | "backpressure" | "error" | "rtt_rising" | "rtt_rising_path_full"
  // (a fall on rising latency held at what fills the path, LLP 0018#bdp)
  std::string_view why;
};

// An AIMD controller of the number of requests in flight to one endpoint, driven by
// observed round trips and refusals (the scheme of Vector's adaptive request
// concurrency, written afresh). Pure bookkeeping on monotonic time: callers pass "now"
// and the round trip they measured. Ignores which partition or sender observed what,
// and never waits. Thread-safe: shared by every sender to the endpoint; all state
// guarded by mu_. @ref LLP 0018#limit
class AdaptiveLimit {
 public:
  // `policy` must pass Validate() (checked by FWDSINK_DCHECK). An adaptive limit starts
  // at `stable` (the endpoint's last stable limit, from an earlier limit's stable())
  // when given, else at policy.initial; either way within 1..max. @ref LLP 0018#start
  explicit AdaptiveLimit(ConcurrencyPolicy policy, std::optional<std::size_t> stable = {});

  // Records one request's outcome at `now`: its round trip and what it said, and how
  // many requests were in flight when it went (itself included). Returns the change
  // of the limit this caused, if any.
  std::optional<LimitChange> Observe(MonotonicTime now, std::chrono::microseconds rtt,
                                     RequestSignal signal, std::size_t in_flight);
  // Returns the limit now: 1..max (adaptive), or max (fixed).
  [[nodiscard]] std::size_t limit() const;
  // Returns the last limit that held a whole window (every slot used, nothing refused,
  // the round trip within the tolerance), lowered by any fall since; nullopt before one
  // did, and for a fixed limit. Where a later limit for the endpoint starts.
  // @ref LLP 0018#start
  [[nodiscard]] std::optional<std::size_t> stable() const;
  // Returns the baseline round trip (zero before the first window closed).
  [[nodiscard]] std::chrono::microseconds baseline() const;
  [[nodiscard]] const ConcurrencyPolicy& policy() const { return policy_; }

 private:
  struct Window {
    MonotonicTime start{};
    bool started = false;
    double rtt_sum_us = 0;
    std::size_t samples = 0;
    std::size_t max_in_flight = 0;
    bool pushed_back = false;  // a refusal, an error or a pacer hold: no increase
    bool decreased = false;    // the limit fell in this window already
    // Opened by an answer slower than a window: it closes when as many answers as were
    // in flight are in (the first round trip), not after its length. @ref LLP 0018#first-window
    bool first_round = false;
    std::chrono::microseconds round_trip{0};  // of the request that opened it
    std::size_t answers = 0;                  // of any signal
  };
  // Scales the limit by `factor` in (0, 1), never below one.
  std::optional<LimitChange> Decrease(std::string_view why, double factor);
  std::optional<LimitChange> CloseWindow(MonotonicTime now);
  std::optional<LimitChange> RttRising(MonotonicTime now, double mean);
  [[nodiscard]] std::size_t PathInFlight(MonotonicTime now) const;
  [[nodiscard]] std::chrono::microseconds WindowLength() const;

  const ConcurrencyPolicy policy_;
  mutable std::mutex mu_;
  std::size_t limit_;       // guarded by mu_
  double baseline_us_ = 0;  // guarded by mu_; 0: none yet
  double min_rtt_us_ = 0;   // the least window mean round trip; guarded by mu_; 0: none yet
  bool slow_start_;         // guarded by mu_; until the first decrease
  std::optional<std::size_t> stable_;  // guarded by mu_
  Window window_;                      // guarded by mu_
};

}  // namespace fwdsink
