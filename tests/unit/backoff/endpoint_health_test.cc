// SPDX-License-Identifier: Apache-2.0
// Endpoint health on the fake clock: leave on failures and on long holds, stay on a
// short Retry-After, come back after recovery, never flap faster than failback_after.
#include "fwdsink/endpoint_health.h"

#include <doctest/doctest.h>

#include "support/fake_clock.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Kind = HealthReport::Kind;
using Move = HealthDecision::Move;

constexpr FailoverPolicy kPolicy{
    .failures_to_leave = 2, .failover_after = seconds{30}, .failback_after = seconds{60}};
constexpr std::size_t kPrimary = 0;
constexpr std::size_t kFallback = 1;

HealthReport Failed(std::size_t endpoint, milliseconds wait = seconds{1}, bool probe = false) {
  return {.endpoint = endpoint, .kind = Kind::kFailed, .probe = probe, .wait = wait};
}
HealthReport Held(std::size_t endpoint, milliseconds wait, bool probe = false) {
  return {.endpoint = endpoint, .kind = Kind::kHeld, .probe = probe, .wait = wait};
}
HealthReport Accepted(std::size_t endpoint, bool probe = false) {
  return {.endpoint = endpoint, .kind = Kind::kAccepted, .probe = probe};
}

// Drives the primary down: two failures in a row.
void FailPrimary(EndpointHealth& h, FakeClock& clock) {
  CHECK(h.Report(Failed(kPrimary), clock.MonotonicNow()).move == Move::kStay);
  const HealthDecision d = h.Report(Failed(kPrimary), clock.MonotonicNow());
  REQUIRE(d.move == Move::kFailover);
  REQUIRE(d.active == kFallback);
}

TEST_CASE("EndpointHealth leaves the endpoint in use after consecutive failures") {
  FakeClock clock;
  EndpointHealth h(kPolicy, 2);
  CHECK(h.Choose(clock.MonotonicNow()).endpoint == kPrimary);

  SUBCASE("two failures in a row: over to the fallback, at once") {
    CHECK(h.Report(Failed(kPrimary), clock.MonotonicNow()).move == Move::kStay);
    const HealthDecision d = h.Report(Failed(kPrimary), clock.MonotonicNow());
    CHECK(d.move == Move::kFailover);
    CHECK(d.active == kFallback);
    CHECK(d.resend_now);  // the fallback is not known down: no ladder wait
    CHECK(h.state(kPrimary) == EndpointState::kDown);
    CHECK(h.Choose(clock.MonotonicNow()).endpoint == kFallback);
  }
  SUBCASE("twin: a 2xx between two failures resets the count; no move") {
    CHECK(h.Report(Failed(kPrimary), clock.MonotonicNow()).move == Move::kStay);
    CHECK(h.Report(Accepted(kPrimary), clock.MonotonicNow()).move == Move::kStay);
    CHECK(h.Report(Failed(kPrimary), clock.MonotonicNow()).move == Move::kStay);
    CHECK(h.active() == kPrimary);
    CHECK(h.failures(kPrimary) == 1);
  }
  SUBCASE("twin: a single endpoint never moves, however it fails") {
    EndpointHealth one(kPolicy, 1);
    for (int i = 0; i < 100; ++i) {
      const HealthDecision d = one.Report(Failed(0, seconds{300}), clock.MonotonicNow());
      CHECK(d.move == Move::kStay);
      CHECK_FALSE(d.resend_now);
    }
    CHECK(one.Choose(clock.MonotonicNow()).endpoint == 0);
  }
  SUBCASE("both down: the next one anyway, with no immediate re-send (the ladder paces)") {
    FailPrimary(h, clock);
    CHECK(h.Report(Failed(kFallback), clock.MonotonicNow()).move == Move::kStay);
    const HealthDecision d = h.Report(Failed(kFallback), clock.MonotonicNow());
    CHECK(d.move == Move::kFailover);
    CHECK(d.active == kPrimary);
    CHECK_FALSE(d.resend_now);
  }
}

TEST_CASE("EndpointHealth leaves on a long hold and stays on a short Retry-After") {
  FakeClock clock;
  EndpointHealth h(kPolicy, 2);

  SUBCASE("a 429 with Retry-After 5 s is backpressure: stay, however often") {
    for (int i = 0; i < 10; ++i) {
      const HealthDecision d = h.Report(Held(kPrimary, seconds{5}), clock.MonotonicNow());
      CHECK(d.move == Move::kStay);
      CHECK_FALSE(d.resend_now);
    }
    CHECK(h.active() == kPrimary);
    CHECK(h.state(kPrimary) == EndpointState::kUp);
  }
  SUBCASE("a hold of exactly failover_after still stays") {
    CHECK(h.Report(Held(kPrimary, seconds{30}), clock.MonotonicNow()).move == Move::kStay);
  }
  SUBCASE("a hold longer than failover_after (Retry-After 120 s, a gate) leaves at once") {
    const HealthDecision d = h.Report(Held(kPrimary, seconds{120}), clock.MonotonicNow());
    CHECK(d.move == Move::kFailover);
    CHECK(d.active == kFallback);
  }
  SUBCASE("a single failure whose ladder wait passes failover_after leaves at once") {
    const HealthDecision d = h.Report(Failed(kPrimary, seconds{60}), clock.MonotonicNow());
    CHECK(d.move == Move::kFailover);
  }
}

TEST_CASE("EndpointHealth takes the primary back after recovery, no sooner than failback") {
  FakeClock clock;
  EndpointHealth h(kPolicy, 2);
  FailPrimary(h, clock);

  SUBCASE("no probe before failback_after") {
    clock.Advance(seconds{59});
    CHECK(h.Choose(clock.MonotonicNow()).endpoint == kFallback);
    CHECK_FALSE(h.Choose(clock.MonotonicNow()).probe);
  }
  SUBCASE("a probe at failback_after; its 2xx takes the primary back") {
    clock.Advance(seconds{60});
    const auto probe = h.Choose(clock.MonotonicNow());
    CHECK(probe.endpoint == kPrimary);
    CHECK(probe.probe);
    // Other senders keep the fallback while the probe is out.
    CHECK(h.Choose(clock.MonotonicNow()).endpoint == kFallback);
    const HealthDecision d = h.Report(Accepted(kPrimary, true), clock.MonotonicNow());
    CHECK(d.move == Move::kFailback);
    CHECK(d.active == kPrimary);
    CHECK(h.state(kPrimary) == EndpointState::kUp);
    CHECK(h.Choose(clock.MonotonicNow()).endpoint == kPrimary);
  }
  SUBCASE("a failed probe keeps the fallback; the next probe a full interval later") {
    clock.Advance(seconds{60});
    REQUIRE(h.Choose(clock.MonotonicNow()).probe);
    const HealthDecision d = h.Report(Failed(kPrimary, seconds{1}, true), clock.MonotonicNow());
    CHECK(d.move == Move::kProbeFailed);
    CHECK(d.active == kFallback);
    CHECK(d.resend_now);  // the chunk goes on to the fallback without a wait
    clock.Advance(seconds{59});
    CHECK_FALSE(h.Choose(clock.MonotonicNow()).probe);
    clock.Advance(seconds{1});
    CHECK(h.Choose(clock.MonotonicNow()).probe);
  }
  SUBCASE("twin: a throttled probe does not take the primary back, nor mark it down") {
    clock.Advance(seconds{60});
    REQUIRE(h.Choose(clock.MonotonicNow()).probe);
    const HealthDecision d = h.Report(Held(kPrimary, seconds{5}, true), clock.MonotonicNow());
    CHECK(d.move == Move::kProbeFailed);
    CHECK(h.active() == kFallback);
  }
  SUBCASE("twin: a late 2xx from the primary that was no probe takes nothing back") {
    const HealthDecision d = h.Report(Accepted(kPrimary), clock.MonotonicNow());
    CHECK(d.move == Move::kStay);
    CHECK(h.active() == kFallback);
  }
}

TEST_CASE("EndpointHealth never flaps faster than failback_after") {
  FakeClock clock;
  EndpointHealth h(kPolicy, 2);
  // A primary that answers one request and then fails: every cycle primary -> fallback
  // -> primary must take at least failback_after.
  int switches = 0;
  MonotonicTime last_failback{};
  for (int second = 0; second < 3600; ++second) {
    const auto now = clock.MonotonicNow();
    const auto choice = h.Choose(now);
    HealthDecision d;
    if (choice.endpoint == kPrimary) {
      d = h.Report(choice.probe ? Accepted(kPrimary, true) : Failed(kPrimary), now);
    } else {
      d = h.Report(Accepted(kFallback), now);
    }
    if (d.move == Move::kFailback) {
      if (switches > 0) CHECK(now - last_failback >= kPolicy.failback_after);
      last_failback = now;
      ++switches;
    }
    clock.Advance(seconds{1});
  }
  CHECK(switches > 10);          // it does come back, again and again
  CHECK(switches <= 3600 / 60);  // and never more often than once a minute
}

TEST_CASE("EndpointHealth tries the fallbacks in order, skipping those down") {
  FakeClock clock;
  EndpointHealth h(kPolicy, 3);
  REQUIRE(h.Report(Held(0, seconds{300}), clock.MonotonicNow()).active == 1);
  REQUIRE(h.Report(Held(1, seconds{300}), clock.MonotonicNow()).active == 2);
  // 0 and 1 are down: from 2, the next one up is... none; wraps to 0 with no re-send.
  const HealthDecision d = h.Report(Held(2, seconds{300}), clock.MonotonicNow());
  CHECK(d.active == 0);
  CHECK_FALSE(d.resend_now);
}

TEST_CASE("FailoverPolicy validation names the field") {
  CHECK(Validate(FailoverPolicy{}).ok());
  CHECK(Validate(FailoverPolicy{.failures_to_leave = 0}).field() == "failures_to_leave");
  CHECK(Validate(FailoverPolicy{.failover_after = milliseconds{0}}).field() == "failover_after");
  CHECK(Validate(FailoverPolicy{.failback_after = milliseconds{-1}}).field() == "failback_after");
}

}  // namespace
}  // namespace fwdsink
