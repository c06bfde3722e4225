// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/expect_continue.h"

#include <algorithm>

#include "fwdsink/check.h"
#include "saturating.h"

namespace fwdsink {

ExpectAdvisor::ExpectAdvisor(ExpectPolicy policy) : policy_(policy) {
  FWDSINK_DCHECK(policy_.refusal_memory > std::chrono::milliseconds::zero());
  FWDSINK_DCHECK(policy_.ignored_in_a_row >= 1);
  FWDSINK_DCHECK(policy_.ignored_pause > std::chrono::milliseconds::zero());
}

void ExpectAdvisor::OnRefused(MonotonicTime now, std::chrono::milliseconds wait) {
  // A minute of sending after the wait: a 5-minute Retry-After does not use the memory
  // up while nothing is sent. A wait past a day (none is: max_wait caps them) counts as
  // a day, so the time point cannot overflow. @ref LLP 0017#expect-when
  constexpr std::chrono::milliseconds kLongest = std::chrono::hours{24};
  const auto after = SaturatingAdd(std::clamp(wait, std::chrono::milliseconds::zero(), kLongest),
                                   std::min(policy_.refusal_memory, kLongest));
  std::lock_guard lock(mu_);
  const MonotonicTime until = now + after;
  if (!refused_ || until > refused_until_) refused_until_ = until;
  refused_ = true;
}

bool ExpectAdvisor::OnExpectAnswered(MonotonicTime now, bool waited_out) {
  std::lock_guard lock(mu_);
  if (!waited_out) {
    waited_out_ = 0;  // it answered the head: it does Expect
    return false;
  }
  if (paused_ && now < paused_until_) return false;  // already off (sent before it was)
  if (++waited_out_ < policy_.ignored_in_a_row) return false;
  waited_out_ = 0;
  paused_ = true;
  paused_until_ = now + policy_.ignored_pause;
  return true;
}

bool ExpectAdvisor::Ignored(MonotonicTime now) const {
  std::lock_guard lock(mu_);
  return paused_ && now < paused_until_;
}

bool ExpectAdvisor::Expect(MonotonicTime now, const ExpectSignals& signals) const {
  std::lock_guard lock(mu_);
  if (paused_ && now < paused_until_) return false;
  const bool recently_refused = refused_ && now < refused_until_;
  return recently_refused || signals.gate_closed || signals.pacer_near_limit;
}

}  // namespace fwdsink
