// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/endpoint_health.h"

#include <algorithm>

#include "fwdsink/check.h"

namespace fwdsink {

using std::chrono::milliseconds;

Status Validate(const FailoverPolicy& p) {
  if (p.failures_to_leave == 0) return Status::Config("failures_to_leave", "must be at least 1");
  if (p.failover_after <= milliseconds::zero()) {
    return Status::Config("failover_after", "must be positive");
  }
  if (p.failback_after <= milliseconds::zero()) {
    return Status::Config("failback_after", "must be positive");
  }
  return OkStatus();
}

std::string_view to_string(EndpointState s) {
  switch (s) {
    case EndpointState::kUp: return "up";
    case EndpointState::kDown: return "down";
  }
  return "unknown";
}

std::string_view to_string(HealthDecision::Move m) {
  switch (m) {
    case HealthDecision::Move::kStay: return "stay";
    case HealthDecision::Move::kFailover: return "failover";
    case HealthDecision::Move::kFailback: return "failback";
    case HealthDecision::Move::kProbeFailed: return "probe_failed";
  }
  return "unknown";
}

EndpointHealth::EndpointHealth(FailoverPolicy policy, std::size_t endpoints)
    : policy_(policy), endpoints_(std::max<std::size_t>(endpoints, 1)) {
  FWDSINK_DCHECK(endpoints >= 1);
}

EndpointState EndpointHealth::state(std::size_t endpoint) const {
  FWDSINK_CHECK(endpoint < endpoints_.size());
  return endpoints_[endpoint].state;
}

std::size_t EndpointHealth::failures(std::size_t endpoint) const {
  FWDSINK_CHECK(endpoint < endpoints_.size());
  return endpoints_[endpoint].failures;
}

EndpointHealth::Choice EndpointHealth::Choose(MonotonicTime now) {
  if (active_ == 0 || endpoints_.size() < 2) return {.endpoint = active_, .probe = false};
  // The primary is tried again no sooner than failback_after after the switch away
  // from it and after the last probe: the endpoint in use cannot flap faster.
  // @ref LLP 0019#failback
  const MonotonicTime since = std::max(switched_, last_probe_);
  if (now - since < policy_.failback_after) return {.endpoint = active_, .probe = false};
  last_probe_ = now;
  return {.endpoint = 0, .probe = true};
}

bool EndpointHealth::MustLeave(const HealthReport& r, const Entry& e) const {
  if (endpoints_.size() < 2 || r.kind == HealthReport::Kind::kAccepted) return false;
  // A short hold is backpressure, not a reason to leave. @ref LLP 0019#leave
  if (r.wait > policy_.failover_after) return true;
  return r.kind == HealthReport::Kind::kFailed && e.failures >= policy_.failures_to_leave;
}

HealthDecision EndpointHealth::Report(const HealthReport& r, MonotonicTime now) {
  FWDSINK_CHECK(r.endpoint < endpoints_.size());
  if (r.probe && r.endpoint != active_) return Probed(r, now);
  Entry& e = endpoints_[r.endpoint];
  if (r.kind == HealthReport::Kind::kAccepted) {
    e.state = EndpointState::kUp;
    e.failures = 0;
  } else if (r.kind == HealthReport::Kind::kFailed) {
    ++e.failures;
  }
  if (r.endpoint == active_ && MustLeave(r, e)) return Leave(now);
  // A late answer from an endpoint no longer in use (another sender's request in
  // flight at the switch): counted, but it moves nothing.
  const bool elsewhere = r.endpoint != active_ && r.kind != HealthReport::Kind::kAccepted;
  return {.move = HealthDecision::Move::kStay,
          .active = active_,
          .resend_now = elsewhere && endpoints_[active_].state == EndpointState::kUp};
}

HealthDecision EndpointHealth::Probed(const HealthReport& r, MonotonicTime now) {
  Entry& primary = endpoints_[r.endpoint];
  if (r.kind == HealthReport::Kind::kAccepted) {
    primary = Entry{};
    endpoints_[active_].failures = 0;
    active_ = r.endpoint;
    switched_ = now;
    return {.move = HealthDecision::Move::kFailback, .active = active_, .resend_now = false};
  }
  // A probe that fails, or is merely throttled, does not take the primary back; only a
  // failure marks it down. The chunk goes on to the endpoint in use at once.
  if (r.kind == HealthReport::Kind::kFailed || r.wait > policy_.failover_after) {
    primary.state = EndpointState::kDown;
    ++primary.failures;
  }
  return {.move = HealthDecision::Move::kProbeFailed,
          .active = active_,
          .resend_now = endpoints_[active_].state == EndpointState::kUp};
}

HealthDecision EndpointHealth::Leave(MonotonicTime now) {
  const std::size_t n = endpoints_.size();
  endpoints_[active_].state = EndpointState::kDown;
  // The next endpoint in order that is not down; the next one at all when every one is
  // (then the ladder paces the tries, as with a single endpoint). @ref LLP 0019#leave
  std::size_t next = (active_ + 1) % n;
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t i = (active_ + k) % n;
    if (endpoints_[i].state == EndpointState::kUp) {
      next = i;
      break;
    }
  }
  active_ = next;
  endpoints_[active_].failures = 0;
  switched_ = now;
  return {.move = HealthDecision::Move::kFailover,
          .active = active_,
          .resend_now = endpoints_[active_].state == EndpointState::kUp};
}

}  // namespace fwdsink
