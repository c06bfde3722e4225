// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/backoff.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "saturating.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kMinWait{1};  // no zero-delay spin, ever

milliseconds Scale(milliseconds base, double factor) {
  const double scaled = static_cast<double>(base.count()) * factor;
  if (!(scaled < static_cast<double>(std::numeric_limits<milliseconds::rep>::max()))) {
    return milliseconds::max();  // also catches NaN: fail towards the longer wait
  }
  return milliseconds{static_cast<milliseconds::rep>(std::llround(scaled))};
}

double ClampUnit(double u) {
  if (!(u >= 0.0)) return 0.0;  // NaN or negative from a broken generator
  if (u >= 1.0) return std::nextafter(1.0, 0.0);
  return u;
}

constexpr milliseconds kMaxLengthening{1000};

// Caps a decided wait at max_wait (never below kMinWait) and checks it against the
// budget before it is taken. @ref LLP 0002#budget-before-sleep
WaitDecision CapAndBudget(const BackpressurePolicy& policy, milliseconds elapsed, WaitDecision d) {
  if (d.wait > policy.max_wait) {
    d.wait = policy.max_wait;
    d.capped = true;
  }
  d.wait = std::max(d.wait, kMinWait);
  if (elapsed < milliseconds::zero()) {
    d.give_up = true;
    d.reason = GiveUpReason::kInvalidElapsed;
  } else if (SaturatingAdd(elapsed, d.wait) > policy.inline_budget) {
    d.give_up = true;
    d.reason = GiveUpReason::kBudgetExhausted;
  }
  return d;
}

}  // namespace

milliseconds JitterLonger(milliseconds wait, double jitter, const UniformRandom& random) {
  if (!(jitter > 0.0) || !random || wait <= milliseconds::zero()) return wait;
  const milliseconds bound = std::min(wait / 10, kMaxLengthening);
  return SaturatingAdd(wait, Scale(bound, ClampUnit(random())));
}

milliseconds JitterSpread(milliseconds wait, double jitter, const UniformRandom& random) {
  if (!(jitter > 0.0) || !random) return wait;
  return std::max(Scale(wait, 1.0 - jitter + 2.0 * jitter * ClampUnit(random())), kMinWait);
}

std::string_view to_string(WaitSource source) {
  switch (source) {
    case WaitSource::kRetryAfter: return "retry_after";
    case WaitSource::kLadder: return "ladder";
    case WaitSource::kReconnect: return "reconnect";
  }
  return "unknown";
}

std::string_view to_string(GiveUpReason reason) {
  switch (reason) {
    case GiveUpReason::kBudgetExhausted: return "budget_exhausted";
    case GiveUpReason::kInvalidElapsed: return "invalid_elapsed";
  }
  return "unknown";
}

Status Validate(const BackpressurePolicy& p) {
  if (p.ladder.empty()) {
    return Status::Config("ladder", "the ladder needs at least one rung");
  }
  for (std::size_t i = 0; i < p.ladder.size(); ++i) {
    if (p.ladder[i] <= milliseconds::zero()) {
      return Status::Config("ladder[" + std::to_string(i) + "]",
                            "every rung must be a positive duration");
    }
  }
  if (p.max_wait <= milliseconds::zero()) {
    return Status::Config("max_wait", "the maximum single wait must be positive");
  }
  if (p.inline_budget < std::min(p.ladder.front(), p.max_wait)) {
    return Status::Config("inline_budget",
                          "the inline budget is below the first rung, so no retry could "
                          "ever be taken");
  }
  for (std::size_t i = 0; i < p.reconnect.size(); ++i) {
    if (p.reconnect[i] <= milliseconds::zero()) {
      return Status::Config("reconnect[" + std::to_string(i) + "]",
                            "every reconnect wait must be a positive duration");
    }
  }
  if (!(p.jitter >= 0.0 && p.jitter < 1.0)) {
    return Status::Config("jitter", "jitter must be a fraction in [0, 1)");
  }
  return OkStatus();
}

WaitDecision DecideWait(const BackpressurePolicy& policy, std::size_t attempt,
                        std::optional<milliseconds> retry_after, milliseconds elapsed,
                        const UniformRandom& random) {
  WaitDecision d;
  const bool jitter = policy.jitter > 0.0 && random;

  if (retry_after && *retry_after > milliseconds::zero()) {
    // Never shorten what the server asked for; jitter may only lengthen it.
    d.source = WaitSource::kRetryAfter;
    // @ref LLP 0016#jitter
    d.wait = std::max(JitterLonger(*retry_after, policy.jitter, random), *retry_after);
    if (jitter && attempt == policy.outage_phase_attempt) {
      // A long outage, not a throttle: one random phase of up to one Retry-After.
      // @ref LLP 0016#herd
      d.wait = SaturatingAdd(d.wait, Scale(*retry_after, ClampUnit(random())));
    }
  } else {
    // Zero, past-date, garbage and absent Retry-After all land here.
    d.source = WaitSource::kLadder;
    const std::size_t n = std::max<std::size_t>(attempt, 1);
    d.rung = std::min(n, policy.ladder.size()) - 1;
    d.wait = policy.ladder[d.rung];
    if (jitter) d.wait = JitterSpread(d.wait, policy.jitter, random);
  }
  return CapAndBudget(policy, elapsed, d);
}

WaitDecision DecideReconnect(const BackpressurePolicy& policy, std::size_t n, milliseconds elapsed,
                             const UniformRandom& random) {
  WaitDecision d{.source = WaitSource::kReconnect, .rung = n};
  d.wait = JitterLonger(policy.reconnect.at(n), policy.jitter, random);
  return CapAndBudget(policy, elapsed, d);
}

}  // namespace fwdsink
