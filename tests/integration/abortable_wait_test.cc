// SPDX-License-Identifier: Apache-2.0
// WaitFor and RealSleeper on the real clock (so not a unit test: these wait, if only a
// millisecond). They only bound how long an abort takes (generously); they never
// assert that a sleep lasted a given time.
#include <doctest/doctest.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "fwdsink/abortable_wait.h"
#include "fwdsink/clock.h"

using namespace std::chrono_literals;

TEST_CASE("WaitForReturnsAtOnceWhenStopWasRequestedBeforeItBegan") {
  std::stop_source src;
  src.request_stop();
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(fwdsink::WaitFor(src.get_token(), 300s));
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
}

TEST_CASE("WaitForIsAbortedFromAnotherThread") {
  // Whether the stop lands before or during the 300 s wait, the waiter must report an
  // abort and the join must not hang. How fast a blocked waiter wakes is measured on the
  // real clock in integration_close_test.
  std::stop_source src;
  bool completed = true;
  std::thread waiter([&] { completed = fwdsink::WaitFor(src.get_token(), 300s); });
  src.request_stop();
  waiter.join();
  CHECK_FALSE(completed);
}

TEST_CASE("WaitForCompletesWhenNobodyStopsIt") {
  std::stop_source src;
  CHECK(fwdsink::WaitFor(src.get_token(), 1ms));
  CHECK(fwdsink::WaitFor(src.get_token(), 0ms));
  CHECK(fwdsink::WaitFor(std::stop_token{}, 1ms));  // a token with no source never stops
}

TEST_CASE("RealSleeperHonoursStop") {
  std::stop_source src;
  src.request_stop();
  CHECK_FALSE(fwdsink::RealSleeper().SleepFor(300s, src.get_token()));
}
