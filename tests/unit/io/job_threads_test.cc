// SPDX-License-Identifier: Apache-2.0
// JobThreads: jobs in order on at most N threads, started only as jobs wait.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "io/job_threads.h"
#include "support/threads.h"

namespace {

// Waits for a job that was submitted to finish and for its thread to wait for the next.
void RunAndWait(fwdsink::JobThreads& threads, std::function<void()> job) {
  std::promise<void> done;
  threads.Submit([&] {
    job();
    done.set_value();
  });
  done.get_future().wait();
  while (threads.idle() < threads.threads()) std::this_thread::yield();
}

}  // namespace

TEST_CASE("JobsOneAfterAnotherTakeOneThread") {
  fwdsink::JobThreads threads(3);
  CHECK(threads.threads() == 0);  // none used, none started
  int ran = 0;
  for (int i = 0; i < 20; ++i) RunAndWait(threads, [&] { ++ran; });
  CHECK(ran == 20);
  CHECK(threads.threads() == 1);
  SUBCASE("twin: jobs that wait at once take a thread each, up to the cap, and all run") {
    std::promise<void> release;
    auto released = release.get_future().share();
    std::atomic<int> in{0};
    std::atomic<int> done{0};
    for (int i = 0; i < 5; ++i) {
      threads.Submit([&] {
        in.fetch_add(1);
        released.wait();
        done.fetch_add(1);
      });
    }
    // Three run, two wait for a thread (bounded: a failure, not a hang).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (in.load() < 3 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    CHECK(threads.threads() == 3);
    CHECK(in.load() == 3);
    release.set_value();
    while (done.load() < 5) std::this_thread::yield();
    CHECK(threads.threads() == 3);
  }
}

TEST_CASE("TheDestructorRunsWhatIsQueuedAndJoins") {
  const std::size_t before = fwdsink::test::SettledThreadCount();
  std::atomic<int> ran{0};
  {
    std::promise<void> release;  // before the threads: it outlives their jobs
    auto released = release.get_future().share();
    fwdsink::JobThreads threads(1);
    threads.Submit([&] { released.wait(); });
    for (int i = 0; i < 10; ++i) threads.Submit([&] { ran.fetch_add(1); });
    CHECK(fwdsink::test::ThreadCount() == before + 1);
    release.set_value();
  }
  CHECK(ran.load() == 10);
  CHECK(fwdsink::test::ThreadsSettleAt(before));
}

TEST_CASE("ForFilesIsSharedWhileHeldAndGoesWithTheLastHolder") {
  std::weak_ptr<fwdsink::JobThreads> seen;
  {
    auto a = fwdsink::JobThreads::ForFiles();
    auto b = fwdsink::JobThreads::ForFiles();
    CHECK(a == b);
    seen = a;
  }
  CHECK(seen.expired());
  SUBCASE("twin: a holder keeps it, and a later call gets the same") {
    auto held = fwdsink::JobThreads::ForFiles();
    CHECK(fwdsink::JobThreads::ForFiles() == held);
  }
}
