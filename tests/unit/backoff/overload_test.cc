// SPDX-License-Identifier: Apache-2.0
// OverloadLevel and EndpointGate: pure bookkeeping, checked step by step.
#include <doctest/doctest.h>

#include <chrono>

#include "fwdsink/gate.h"
#include "fwdsink/overload.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;

namespace {
constexpr bool kThrottled = true;
constexpr bool kProgress = true;
}  // namespace

TEST_CASE("OverloadEscalatesUnderRealRepeatedOverloadAndStopsAtTheLastStep") {
  fwdsink::OverloadLevel level;
  CHECK(level.Pause() == 1s);
  CHECK(level.Record(kThrottled, !kProgress) == 1);
  CHECK(level.Pause() == 5s);
  CHECK(level.Record(kThrottled, !kProgress) == 2);
  CHECK(level.Pause() == 15s);
  CHECK(level.Record(kThrottled, !kProgress) == 3);
  CHECK(level.Pause() == 30s);
  CHECK(level.Record(kThrottled, !kProgress) == 4);
  CHECK(level.Pause() == 60s);
  for (int i = 0; i < 100; ++i) level.Record(kThrottled, !kProgress);
  CHECK(level.level() == 4);  // no increase past the last step
  CHECK(level.Pause() == 60s);
}

TEST_CASE("OverloadDecaysWithPartialProgressNotOnlyAfterACleanTick") {
  fwdsink::OverloadLevel level;
  level.Record(kThrottled, !kProgress);
  level.Record(kThrottled, !kProgress);
  REQUIRE(level.level() == 2);
  // Throttled *and* some chunks acknowledged: partial progress still decays.
  CHECK(level.Record(kThrottled, kProgress) == 1);
  CHECK(level.Record(!kThrottled, kProgress) == 0);
  CHECK(level.Record(!kThrottled, kProgress) == 0);  // never below zero
  SUBCASE("twin: an idle tick (no progress, no throttling) neither rises nor decays") {
    level.Record(kThrottled, !kProgress);
    CHECK(level.Record(!kThrottled, !kProgress) == 1);
  }
}

TEST_CASE("GateHoldIsNeverShortened") {
  fwdsink::FakeClock clock;
  fwdsink::EndpointGate gate;
  const auto now = clock.MonotonicNow();
  CHECK(gate.Remaining(now).remaining == 0ms);
  gate.HoldUntil(now + 10s, "byte_rate");
  CHECK(gate.Remaining(now).remaining == 10s);
  CHECK(gate.Remaining(now).reason == "byte_rate");
  gate.HoldUntil(now + 5s, "req_rate");  // shorter: ignored
  CHECK(gate.Remaining(now).remaining == 10s);
  CHECK(gate.Remaining(now).reason == "byte_rate");
  gate.HoldUntil(now + 20s, "concurrency");  // longer: extends
  CHECK(gate.Remaining(now).remaining == 20s);
  CHECK(gate.Remaining(now).reason == "concurrency");
  CHECK(gate.holds() == 2);
  CHECK(gate.Remaining(now + 20s).remaining == 0ms);  // open again
  CHECK(gate.Remaining(now + 20s).reason.empty());
}
