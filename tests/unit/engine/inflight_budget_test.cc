// SPDX-License-Identifier: Apache-2.0
// InflightBudget: a cap on the bodies in flight (LLP 0014#inflight-cap). A body fits or
// waits; one larger than the whole budget goes only when nothing else is in flight.
#include <doctest/doctest.h>

#include <atomic>
#include <stop_token>
#include <thread>

#include "fwdsink/forward_sink.h"

using fwdsink::InflightBudget;

namespace {

// Until the taker is waiting; false if it never does (a budget that let it through).
bool UntilWaiting(const InflightBudget& budget, const std::atomic<bool>& done) {
  while (budget.waits() == 0) {
    if (done.load()) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("A body that does not fit is refused, whoever asks") {
  InflightBudget budget(100);
  CHECK(budget.TryTake(60));
  CHECK_FALSE(budget.TryTake(60));  // a sender's first body too (held == 0)
  CHECK_FALSE(budget.TryTake(60, /*held=*/0));
  CHECK(budget.TryTake(40));  // the twin: one that fits goes
  CHECK(budget.in_use() == 100);
  CHECK(budget.peak() == 100);
  budget.Give(100);
  CHECK(budget.in_use() == 0);
}

TEST_CASE("A body larger than the whole budget goes alone, and only then") {
  InflightBudget budget(100);
  CHECK(budget.TryTake(10));
  CHECK_FALSE(budget.TryTake(500));
  budget.Give(10);
  CHECK(budget.TryTake(500));      // nothing in flight: it goes
  CHECK_FALSE(budget.TryTake(1));  // and nothing goes beside it
  budget.Give(500);
  CHECK(budget.TryTake(1));
}

TEST_CASE("Take waits for room and is woken by Give") {
  InflightBudget budget(100);
  REQUIRE(budget.TryTake(80));
  std::atomic<bool> took{false}, done{false};
  std::jthread taker([&] {
    took = budget.Take(50, std::stop_token{});
    done = true;
  });
  REQUIRE(UntilWaiting(budget, done));
  CHECK_FALSE(took.load());
  budget.Give(80);
  taker.join();
  CHECK(took.load());
  CHECK(budget.in_use() == 50);
  CHECK(budget.waits() == 1);
}

TEST_CASE("Take gives up when its stop is requested") {
  InflightBudget budget(100);
  REQUIRE(budget.TryTake(80));
  std::stop_source stop;
  std::atomic<int> took{-1};
  std::atomic<bool> done{false};
  std::jthread taker([&] {
    took = budget.Take(50, stop.get_token()) ? 1 : 0;
    done = true;
  });
  REQUIRE(UntilWaiting(budget, done));
  stop.request_stop();
  taker.join();
  CHECK(took.load() == 0);
  CHECK(budget.in_use() == 80);  // nothing taken
  SUBCASE("twin: room at once needs no wait, even with a stop requested") {
    CHECK(budget.Take(20, stop.get_token()));
  }
}
