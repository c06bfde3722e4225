// SPDX-License-Identifier: Apache-2.0
// Backpressure policy as plain data, and the decision "wait how long, or give up".
//
// No sockets, no clocks: DecideWait is a pure function of the policy, the attempt
// number, the server's parsed Retry-After and the time already spent on the chunk.
// Only the caller that sleeps needs "now".
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/status.h"

namespace fwdsink {

// How a sender backs off when the server pushes back (429/503, transport errors, 5xx).
//
// With the defaults, consecutive failed attempts of one chunk wait
//   30 s, 60 s, 120 s, 300 s, 300 s, 300 s, ...   (the last rung repeats)
// unless the server sends a positive Retry-After, which is honoured instead, capped
// at max_wait. Every wait counts against inline_budget, measured on the monotonic
// clock from the chunk's first attempt (request time included); the wait that would
// pass the budget is not taken: the sender gives the partition back (respool).
struct BackpressurePolicy {
  // Waits for the 1st, 2nd, ... failed attempt when the server gives no usable
  // Retry-After. The last rung repeats for every later attempt. Each must be > 0.
  std::vector<std::chrono::milliseconds> ladder = {
      std::chrono::seconds{30}, std::chrono::seconds{60}, std::chrono::seconds{120},
      std::chrono::seconds{300}};
  // The longest single wait ever taken: caps both the ladder and a positive
  // Retry-After ("wait a week" from a confused server waits max_wait).
  std::chrono::milliseconds max_wait = std::chrono::seconds{300};
  // Inline time allowed per chunk since its first attempt before the partition is
  // respooled. Must be at least the first rung, or no retry could ever happen.
  std::chrono::milliseconds inline_budget = std::chrono::seconds{300};
  // Jitter as a fraction of a ladder wait, in [0, 1): a ladder wait w becomes a value
  // uniform in [w*(1-jitter), w*(1+jitter)], still capped at max_wait. A Retry-After
  // wait (and a gate hold) is only ever lengthened, by at most min(10%, 1 s) (once per
  // outage more: outage_phase_attempt), never shortened. On by default, so a fleet
  // that failed together does not return together; 0 turns it off (tests that check
  // exact waits say so). @ref LLP 0016#jitter
  double jitter = 0.5;
  // The failed attempt of one chunk (1-based; 0 = never) whose Retry-After wait is
  // lengthened once more, by a random phase uniform in [0, Retry-After]: at the third,
  // the sender has already waited two Retry-After periods, a long outage rather than a
  // throttle, and a fleet told the same Retry-After must not return in one second when
  // the outage ends. Only with jitter on; the other waits keep the <= min(10%, 1 s)
  // bound, so a short throttle still ends within Retry-After + 1 s. @ref LLP 0016#herd
  std::size_t outage_phase_attempt = 3;
  // Waits before re-sending a chunk whose connection broke under it (a reset, an EOF, a
  // failed body write: a transport error after the connection was made), one per break
  // in a row, before the ladder takes over:
  //   break -> 250 ms -> (break or refused connect) -> 1 s -> the ladder's 30 s, ...
  // A middlebox that restarts or drops a keep-alive connection is back within a
  // second; an endpoint that cannot be reached at all still meets the ladder at once
  // (a connect that fails without an earlier break uses the ladder). Lengthened only,
  // by at most a tenth (JitterLonger). A break of a request that had run at least as
  // long as the last rung starts the streak afresh (the sender's rule). Empty: every
  // transport error uses the ladder.
  // Each must be > 0. @ref LLP 0014#reconnect
  std::vector<std::chrono::milliseconds> reconnect = {std::chrono::milliseconds{250},
                                                      std::chrono::seconds{1}};
};

// Checks a policy; returns OK when it is usable, else a kInvalidConfig status naming
// the first bad field (e.g. "ladder[2]", "inline_budget") and what is wrong with it.
[[nodiscard]] Status Validate(const BackpressurePolicy& policy);

// Where a wait came from.
enum class WaitSource {
  kRetryAfter,  // the server's positive Retry-After (possibly capped)
  kLadder,      // a rung of the ladder (no, zero or unusable Retry-After)
  kReconnect,   // a rung of `reconnect`: the connection broke under the request
};
[[nodiscard]] std::string_view to_string(WaitSource source);

// Why a sender stops retrying a chunk inline.
enum class GiveUpReason {
  kBudgetExhausted,  // the next wait would carry the chunk past inline_budget
  kInvalidElapsed,   // elapsed time was negative: a broken clock fails closed
};
[[nodiscard]] std::string_view to_string(GiveUpReason reason);

// The outcome of DecideWait.
struct WaitDecision {
  bool give_up = false;
  // The wait to take (give_up == false), or the wait that would have been taken.
  // Always strictly positive.
  std::chrono::milliseconds wait{0};
  WaitSource source = WaitSource::kLadder;
  std::size_t rung = 0;  // 0-based ladder rung used (source == kLadder)
  bool capped = false;   // the wait was cut down to max_wait
  GiveUpReason reason = GiveUpReason::kBudgetExhausted;  // meaningful when give_up
};

// Returns uniformly distributed numbers in [0, 1). Injected so tests are repeatable.
using UniformRandom = std::function<double()>;

// Returns `wait` lengthened by a uniform random amount in [0, min(wait / 10, 1 s)]
// when jitter > 0 and `random` is set; `wait` itself otherwise. Never shorter, never
// overflowing. For waits the server asked for (Retry-After, gate holds).
[[nodiscard]] std::chrono::milliseconds JitterLonger(std::chrono::milliseconds wait, double jitter,
                                                     const UniformRandom& random);
// Returns `wait` scaled by a uniform factor in [1 - jitter, 1 + jitter], at least 1 ms,
// when jitter > 0 and `random` is set; `wait` itself otherwise. For our own waits
// (ladder rungs, the driver's tick pauses).
[[nodiscard]] std::chrono::milliseconds JitterSpread(std::chrono::milliseconds wait, double jitter,
                                                     const UniformRandom& random);

// Decides what a sender does after failed attempt number `attempt` (1 for the first
// failure of this chunk) given the server's parsed Retry-After (nullopt when absent
// or unparseable) and `elapsed`, the monotonic time since the chunk's first attempt.
//
// A positive Retry-After is honoured (capped at max_wait); zero or none uses ladder
// rung min(attempt, ladder.size()) - 1. The budget check uses the wait that would
// actually be taken: give up iff elapsed + wait > inline_budget. Requires a policy
// that passes Validate(). `random` is used only when policy.jitter > 0.
[[nodiscard]] WaitDecision DecideWait(const BackpressurePolicy& policy, std::size_t attempt,
                                      std::optional<std::chrono::milliseconds> retry_after,
                                      std::chrono::milliseconds elapsed,
                                      const UniformRandom& random = {});

// Decides the wait after the `n`th break in a row (0-based) of a chunk's connection:
// rung `n` of policy.reconnect (lengthened by JitterLonger), with the same budget check
// as DecideWait. Requires n < policy.reconnect.size(). @ref LLP 0014#reconnect
[[nodiscard]] WaitDecision DecideReconnect(const BackpressurePolicy& policy, std::size_t n,
                                           std::chrono::milliseconds elapsed,
                                           const UniformRandom& random = {});

}  // namespace fwdsink
