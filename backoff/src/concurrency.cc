// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/concurrency.h"

#include <algorithm>
#include <cmath>

#include "fwdsink/check.h"

namespace fwdsink {

Status Validate(const ConcurrencyPolicy& p) {
  if (p.max < 1) return Status::Config("max", "must be at least 1");
  if (p.max > 1024) return Status::Config("max", "must be at most 1024");
  if (p.initial < 1) return Status::Config("initial", "must be at least 1");
  if (!(p.rtt_tolerance > 0)) return Status::Config("rtt_tolerance", "must be positive");
  if (!(p.decrease > 0 && p.decrease < 1)) return Status::Config("decrease", "must be in (0, 1)");
  if (!(p.baseline_weight > 0 && p.baseline_weight <= 1)) {
    return Status::Config("baseline_weight", "must be in (0, 1]");
  }
  if (p.min_window <= std::chrono::milliseconds::zero()) {
    return Status::Config("min_window", "must be positive");
  }
  return OkStatus();
}

// Neither 1 nor the ceiling: a known-good limit, else a small initial window that opens
// a partition's window at once and still meets a limiter's burst with a few requests.
// @ref LLP 0018#start
AdaptiveLimit::AdaptiveLimit(ConcurrencyPolicy policy, std::optional<std::size_t> stable)
    : policy_(policy),
      limit_(policy.adaptive ? std::clamp<std::size_t>(stable.value_or(policy.initial), 1,
                                                       std::max<std::size_t>(policy.max, 1))
                             : policy.max),
      slow_start_(policy.slow_start) {
  FWDSINK_DCHECK(Validate(policy_).ok());
}

std::optional<std::size_t> AdaptiveLimit::stable() const {
  std::lock_guard lock(mu_);
  return stable_;
}

std::size_t AdaptiveLimit::limit() const {
  std::lock_guard lock(mu_);
  return limit_;
}

std::chrono::microseconds AdaptiveLimit::baseline() const {
  std::lock_guard lock(mu_);
  return std::chrono::microseconds{static_cast<std::int64_t>(baseline_us_)};
}

std::chrono::microseconds AdaptiveLimit::WindowLength() const {
  const std::chrono::microseconds floor = policy_.min_window;
  return std::max(floor, std::chrono::microseconds{static_cast<std::int64_t>(baseline_us_)});
}

std::optional<LimitChange> AdaptiveLimit::Observe(MonotonicTime now, std::chrono::microseconds rtt,
                                                  RequestSignal signal, std::size_t in_flight) {
  if (!policy_.adaptive) return std::nullopt;
  std::lock_guard lock(mu_);
  // A window that saw nothing (idle between passes) starts afresh with the next answer,
  // at that request's start: it and the requests beside it were in flight since then.
  // When that request took longer than a window, the window is the round trip of the
  // requests in flight with it, and is judged when they are all in (slow start grows on
  // the first round trip's answers, as TCP's grows on its first ACKs, not on the
  // second's). @ref LLP 0018#first-window
  const bool sample = rtt.count() > 0 && rtt < std::chrono::hours{1};
  const bool fresh = !window_.started || (window_.samples == 0 && !window_.pushed_back &&
                                          now - window_.start >= WindowLength());
  // Only a latency sample says when its request started: a refusal's or a held
  // request's time includes waits, and such a window starts at its answer, as before.
  const bool timed = sample && signal == RequestSignal::kAccepted;
  if (fresh) {
    window_ = Window{.start = timed ? now - rtt : now,
                     .started = true,
                     .first_round = timed && rtt >= WindowLength(),
                     .round_trip = rtt};
  }
  // Otherwise the window closes before this request is counted: a window holds the
  // requests that ended within it. A first round trip whose answers do not all come (a
  // refused request waits to be sent again) closes after two of its round trips.
  std::optional<LimitChange> change;
  const auto length = window_.first_round ? 2 * window_.round_trip : WindowLength();
  if (!fresh && now - window_.start >= length) change = CloseWindow(now);
  window_.max_in_flight = std::max(window_.max_in_flight, in_flight);
  switch (signal) {
    case RequestSignal::kAccepted:
      // Non-positive or absurd samples (a clock oddity) are not latency. @ref LLP 0023
      if (sample) {
        window_.rtt_sum_us += static_cast<double>(rtt.count());
        window_.samples += 1;
      }
      break;
    case RequestSignal::kPaced: window_.pushed_back = true; break;
    case RequestSignal::kBackpressure:
    case RequestSignal::kError:
      // The server (or the path to it) pushes back: fall at once, not at the window's
      // end, but once per window however many senders saw it. @ref LLP 0018#signals
      window_.pushed_back = true;
      if (!window_.decreased) {
        if (auto fell = Decrease(signal == RequestSignal::kBackpressure ? "backpressure" : "error",
                                 policy_.decrease)) {
          change = fell;
        }
      }
      break;
  }
  window_.answers += 1;
  if (window_.first_round && window_.answers >= window_.max_in_flight) {
    if (auto closed = CloseWindow(now)) change = closed;
  }
  return change;
}

std::optional<LimitChange> AdaptiveLimit::Decrease(std::string_view why, double factor) {
  window_.decreased = true;
  slow_start_ = false;
  const std::size_t from = limit_;
  const auto scaled = static_cast<std::size_t>(std::floor(static_cast<double>(from) * factor));
  limit_ = std::max<std::size_t>(1, scaled);
  if (stable_) stable_ = std::min(*stable_, limit_);  // never start above a refusal
  if (limit_ == from) return std::nullopt;
  return LimitChange{.from = from, .to = limit_, .why = why};
}

// The requests in flight that carry this window's goodput at the least round trip seen
// (Little's law: throughput x minimum round trip): the path's bandwidth-delay product,
// counted in requests. Zero before there is a round trip to use.
std::size_t AdaptiveLimit::PathInFlight(MonotonicTime now) const {
  const double elapsed_us = static_cast<double>(
      std::chrono::duration_cast<std::chrono::microseconds>(now - window_.start).count());
  if (elapsed_us <= 0 || min_rtt_us_ <= 0) return 0;
  return static_cast<std::size_t>(
      std::ceil(static_cast<double>(window_.samples) * min_rtt_us_ / elapsed_us));
}

// The round trip rose past the tolerance. To the limit the tolerated round trip allows
// (limit x tolerated / mean), never by more than `decrease`: a queue that is only just
// too long costs a request or two, not half the pipe (LLP 0018#knee). And never below
// what fills the path: on a bottleneck link the queue that grows with the window is the
// link filling, and the fall stops at its bandwidth-delay product, where the queue is
// gone and the link still full (a refusal or an error still halves). @ref LLP 0018#bdp
std::optional<LimitChange> AdaptiveLimit::RttRising(MonotonicTime now, double mean) {
  const double knee = baseline_us_ * (1 + policy_.rtt_tolerance) / mean;
  const std::size_t from = limit_;
  const std::size_t path = std::min(from, PathInFlight(now));
  std::optional<LimitChange> change = Decrease("rtt_rising", std::max(policy_.decrease, knee));
  if (limit_ >= path) return change;
  limit_ = path;
  return LimitChange{.from = from, .to = path, .why = "rtt_rising_path_full"};
}

// Ends the window: compares its mean round trip with the baseline, then moves the
// baseline toward it. @ref LLP 0018#signals
std::optional<LimitChange> AdaptiveLimit::CloseWindow(MonotonicTime now) {
  std::optional<LimitChange> change;
  if (window_.samples > 0) {
    const double mean = window_.rtt_sum_us / static_cast<double>(window_.samples);
    const bool rising = baseline_us_ > 0 && mean > baseline_us_ * (1 + policy_.rtt_tolerance);
    min_rtt_us_ = min_rtt_us_ > 0 ? std::min(min_rtt_us_, mean) : mean;
    if (rising && !window_.decreased) {
      change = RttRising(now, mean);
    } else if (!rising && !window_.pushed_back && !window_.decreased &&
               window_.max_in_flight >= limit_) {
      // The limit held a whole window: stable. @ref LLP 0018#start
      stable_ = limit_;
      // Every slot was busy and the round trip held: latency-bound, more would help.
      if (limit_ < policy_.max) {
        const std::size_t to = std::min(policy_.max, slow_start_ ? 2 * limit_ : limit_ + 1);
        change = LimitChange{.from = limit_, .to = to, .why = "latency_bound"};
        limit_ = to;
      }
    }
    baseline_us_ =
        baseline_us_ > 0 ? baseline_us_ + policy_.baseline_weight * (mean - baseline_us_) : mean;
  }
  window_ = Window{.start = now, .started = true};
  return change;
}

}  // namespace fwdsink
