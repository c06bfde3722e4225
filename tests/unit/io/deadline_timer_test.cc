// SPDX-License-Identifier: Apache-2.0
// DeadlineTimer: one thread fires every armed deadline once, and a cancelled one never.
// No test waits for time to pass: the deadlines are in the past or far ahead.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "io/deadline_timer.h"
#include "support/threads.h"

using Clock = std::chrono::steady_clock;

TEST_CASE("APassedDeadlineFiresOnceAndACancelledOneNever") {
  fwdsink::DeadlineTimer timer;
  std::promise<void> fired;
  std::atomic<int> late{0};
  std::atomic<int> cancelled{0};
  const auto far = timer.Arm(Clock::now() + std::chrono::hours(1), [&] { cancelled.fetch_add(1); });
  const auto past = timer.Arm(Clock::now() - std::chrono::seconds(1), [&] {
    late.fetch_add(1);
    fired.set_value();
  });
  fired.get_future().wait();
  CHECK(late.load() == 1);
  CHECK_FALSE(timer.Cancel(past));  // it fired: nothing to cancel
  CHECK(timer.Cancel(far));         // armed still: cancelled
  CHECK_FALSE(timer.Cancel(far));   // and only once
  CHECK(cancelled.load() == 0);
}

TEST_CASE("CancelWaitsForAFunctionThatRunsNow") {
  fwdsink::DeadlineTimer timer;
  std::promise<void> in;
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<bool> returned{false};
  const auto id = timer.Arm(Clock::now(), [&] {
    in.set_value();
    released.wait();
    returned.store(true);
  });
  in.get_future().wait();
  auto cancel = std::async(std::launch::async, [&] { return timer.Cancel(id); });
  // The cancel cannot return while the function runs.
  CHECK(cancel.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  release.set_value();
  CHECK_FALSE(cancel.get());
  CHECK(returned.load());
}

TEST_CASE("OneThreadServesEveryDeadline") {
  const std::size_t before = fwdsink::test::SettledThreadCount();
  {
    std::atomic<int> fired{0};
    std::promise<void> all;  // before the timer: it outlives the functions that set it
    auto a = fwdsink::DeadlineTimer::Shared();
    auto b = fwdsink::DeadlineTimer::Shared();
    CHECK(a == b);
    for (int i = 0; i < 50; ++i) {
      (void)a->Arm(Clock::now(), [&] {
        if (fired.fetch_add(1) == 49) all.set_value();
      });
    }
    all.get_future().wait();
    CHECK(fwdsink::test::ThreadCount() == before + 1);
  }
  CHECK(fwdsink::test::ThreadsSettleAt(before));  // gone with the last holder
}

// The loop waits for the soonest deadline; cancelling that one while it waits must leave
// it waiting for the next (under ASan, the CI's --sanitize run, a loop that kept a
// reference to the erased entry's time is a use after free).
TEST_CASE("CancellingTheDeadlineTheTimerWaitsForLeavesItServingTheNext") {
  fwdsink::DeadlineTimer timer;
  for (int i = 0; i < 100; ++i) {
    std::atomic<bool> cancelled_ran{false};
    const auto far = timer.Arm(Clock::now() + std::chrono::hours(1), [&] { cancelled_ran = true; });
    std::this_thread::yield();  // the loop takes it as the soonest
    CHECK(timer.Cancel(far));
    std::promise<void> fired;
    const auto now = timer.Arm(Clock::now(), [&] { fired.set_value(); });
    CHECK(fired.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    timer.Cancel(now);  // waits until its function has returned: `fired` may go
    CHECK_FALSE(cancelled_ran.load());
  }
}
