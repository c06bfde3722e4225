// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/endpoints.h"

#include "fwdsink/check.h"
#include "fwdsink/transport.h"

namespace fwdsink {

Endpoints::Endpoints(FailoverPolicy policy, std::size_t n) : health_(policy, n) {}

std::shared_ptr<Endpoints> Endpoints::Make(const ForwardOptions& options, const ForwardDeps& deps) {
  const std::vector<std::string> urls = EndpointUrls(options);
  std::shared_ptr<Endpoints> made(new Endpoints(options.failover, urls.size()));
  PacingPolicy pacing = options.pacing;
  pacing.max_wait = options.backpressure.max_wait;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    auto e = std::make_unique<EndpointEntry>();
    e->url = urls[i];
    e->name = RedactUrl(urls[i]);
    e->gate = i == 0 && deps.gate ? deps.gate : std::make_shared<EndpointGate>();
    e->pacer = i == 0 && deps.pacer ? deps.pacer : std::make_shared<EndpointPacer>(pacing);
    e->tokens = deps.tokens;
    made->entries_.push_back(std::move(e));
  }
  return made;
}

EndpointEntry& Endpoints::at(std::size_t i) {
  FWDSINK_CHECK(i < entries_.size());
  return *entries_[i];
}

const EndpointEntry& Endpoints::at(std::size_t i) const {
  FWDSINK_CHECK(i < entries_.size());
  return *entries_[i];
}

EndpointHealth::Choice Endpoints::Choose(MonotonicTime now, std::uint64_t* moves) {
  std::lock_guard lock(mu_);
  if (moves) *moves = moves_;
  return health_.Choose(now);
}

HealthDecision Endpoints::Report(const HealthReport& report, MonotonicTime now,
                                 std::uint64_t* moves) {
  std::lock_guard lock(mu_);
  const std::size_t before = health_.active();
  HealthDecision d = health_.Report(report, now);
  // A sender asleep on the endpoint just left would re-send late, after a deduplication
  // window may have forgotten its chunk: it goes now, as the reporting sender does
  // (resend_now: the new endpoint is up; when all are down the ladder paces everyone).
  // @ref LLP 0019#wake
  if (d.active != before && d.resend_now) {
    ++moves_;
    WakeWaitersOn(before);
  }
  if (moves) *moves = moves_;
  return d;
}

Endpoints::Waiting Endpoints::WaitOn(std::size_t i, std::uint64_t moves, std::stop_token stop) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_waiting_++;
  Wake wake;
  // Left between the sender's last look and its wait: it goes at once.
  if (moves != moves_ && health_.active() != i) wake.source.request_stop();
  waiting_.emplace(id, std::make_pair(i, wake.source));
  return Waiting(this, id, wake, std::move(stop));
}

void Endpoints::Forget(std::uint64_t id) {
  std::lock_guard lock(mu_);
  waiting_.erase(id);
}

void Endpoints::WakeWaitersOn(std::size_t i) {
  for (auto& [id, waiter] : waiting_) {
    if (waiter.first == i) waiter.second.request_stop();
  }
}

std::size_t Endpoints::active() const {
  std::lock_guard lock(mu_);
  return health_.active();
}

EndpointState Endpoints::state(std::size_t i) const {
  std::lock_guard lock(mu_);
  return health_.state(i);
}

bool Endpoints::Matches(const std::vector<std::string>& urls) const {
  if (urls.size() != entries_.size()) return false;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (entries_[i]->url != urls[i]) return false;
  }
  return true;
}

}  // namespace fwdsink
