// SPDX-License-Identifier: Apache-2.0
// The fake clock: sleeps advance time at once, a stopped sleep does not, a wall-clock
// step leaves monotonic time alone. The real WaitFor and RealSleeper, which wait on the
// real clock, are in tests/integration/abortable_wait_test.cc.
#include <doctest/doctest.h>

#include <chrono>
#include <stop_token>

#include "support/fake_clock.h"

using namespace std::chrono_literals;

TEST_CASE("FakeClockSleepsAdvanceTimeInstantly") {
  fwdsink::FakeClock clock;
  const auto m0 = clock.MonotonicNow();
  const auto s0 = clock.SystemNow();
  CHECK(clock.SleepFor(300s, {}));
  CHECK(clock.MonotonicNow() - m0 == 300s);
  CHECK(clock.SystemNow() - s0 == 300s);
  REQUIRE(clock.sleeps().size() == 1);
  CHECK(clock.sleeps()[0] == 300s);

  SUBCASE("a stopped sleep does not advance time") {
    std::stop_source src;
    src.request_stop();
    CHECK_FALSE(clock.SleepFor(30s, src.get_token()));
    CHECK(clock.MonotonicNow() - m0 == 300s);
  }
  SUBCASE("a wall-clock step leaves monotonic time alone") {
    clock.StepSystem(-1h);
    CHECK(clock.MonotonicNow() - m0 == 300s);
    CHECK(clock.SystemNow() - s0 == 300s - 1h);
  }
}
