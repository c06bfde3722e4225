// SPDX-License-Identifier: Apache-2.0
// StartSpacing on made-up monotonic times: a window's starts spread over the least round
// trip, none before a round trip is known or when the spacing is under the floor.
// @ref LLP 0014#stagger
#include <doctest/doctest.h>

#include <chrono>

#include "engine/start_spacing.h"

using namespace std::chrono_literals;
using fwdsink::MonotonicTime;
using fwdsink::StartSpacing;
using std::chrono::microseconds;

namespace {

const MonotonicTime kT0 = MonotonicTime{} + 1h;

// Starts a request at `now` if the spacing lets it: returns the wait (zero: started).
microseconds Reserve(StartSpacing& s, MonotonicTime now) {
  const microseconds wait = s.Wait(now);
  if (wait == microseconds::zero()) s.Started(now);
  return wait;
}

}  // namespace

TEST_CASE("BeforeAnyRoundTripAWindowStartsAtOnce") {
  StartSpacing s(16);
  CHECK(s.spacing() == 0us);
  for (int i = 0; i < 16; ++i) CHECK(Reserve(s, kT0) == 0us);
}

TEST_CASE("StartsAreSpreadOverTheLeastRoundTrip") {
  StartSpacing s(16);
  s.OnAccepted(320ms);
  s.OnAccepted(160ms);
  s.OnAccepted(240ms);  // the least one counts: the path without a queue
  CHECK(s.spacing() == 10ms);
  CHECK(Reserve(s, kT0) == 0us);
  CHECK(s.Wait(kT0) == 10ms);  // asking again gives the same answer
  CHECK(Reserve(s, kT0) == 10ms);
  CHECK(Reserve(s, kT0 + 4ms) == 6ms);
  CHECK(Reserve(s, kT0 + 10ms) == 0us);
  CHECK(Reserve(s, kT0 + 10ms) == 10ms);
  // Sixteen starts take one round trip, and no less.
  MonotonicTime t = kT0 + 20ms;
  int started = 0;
  for (; t < kT0 + 180ms; t += 1ms) started += Reserve(s, t) == 0us ? 1 : 0;
  CHECK(started == 16);
}

TEST_CASE("AnIdleCallBanksNoStartsForABurst") {
  StartSpacing s(4);
  s.OnAccepted(100ms);
  CHECK(Reserve(s, kT0) == 0us);
  CHECK(Reserve(s, kT0 + 10s) == 0us);
  CHECK(Reserve(s, kT0 + 10s) == 25ms);
}

TEST_CASE("AShortRoundTripSpacesNothing") {
  // A local network: 12 ms over a window of 16 is 0.75 ms, under the 1 ms floor.
  StartSpacing s(16);
  s.OnAccepted(12ms);
  CHECK(s.spacing() == 0us);
  for (int i = 0; i < 16; ++i) CHECK(Reserve(s, kT0) == 0us);
  // Twin: at 16 ms the floor is met, and the second start waits.
  s.OnAccepted(16ms);  // not less: the least stays 12 ms
  CHECK(s.spacing() == 0us);
  StartSpacing t(16);
  t.OnAccepted(16ms);
  CHECK(t.spacing() == 1ms);
  CHECK(Reserve(t, kT0) == 0us);
  CHECK(Reserve(t, kT0) == 1ms);
}

TEST_CASE("AWindowOfOneIsSpacedByItsOwnAnswers") {
  // Each start comes after the answer before it, which took at least the least round
  // trip: the spacing never makes one wait.
  StartSpacing s(1);
  MonotonicTime t = kT0;
  CHECK(Reserve(s, t) == 0us);
  t += 50ms;
  s.OnAccepted(50ms);
  for (int i = 0; i < 5; ++i) {
    CHECK(Reserve(s, t) == 0us);
    t += 70ms;  // answered after 70 ms
    s.OnAccepted(70ms);
  }
  CHECK(s.spacing() == 50ms);
}

TEST_CASE("RoundTripsOfZeroAreNoSamples") {
  StartSpacing s(2);
  s.OnAccepted(0us);
  s.OnAccepted(-5ms);
  CHECK(s.spacing() == 0us);
  s.OnAccepted(40ms);
  s.OnAccepted(0us);
  CHECK(s.spacing() == 20ms);
}

TEST_CASE("AShorterRoundTripLearnedSinceTheLastStartCountsAtOnce") {
  // The last start went while the least was 100 ms; its answer took 60 ms. The next
  // start, right after that answer, does not wait for the old 100 ms.
  StartSpacing s(1);
  s.OnAccepted(100ms);
  CHECK(Reserve(s, kT0) == 0us);
  s.OnAccepted(60ms);
  CHECK(Reserve(s, kT0 + 60ms) == 0us);
  CHECK(Reserve(s, kT0 + 100ms) == 20ms);
}
