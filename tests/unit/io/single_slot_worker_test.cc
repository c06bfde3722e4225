// SPDX-License-Identifier: Apache-2.0
// SingleSlotWorker: one job at a time, a newer queued job replaces an older one.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/single_slot_worker.h"
#include "support/threads.h"

namespace {

using fwdsink::test::SettledThreadCount;
using fwdsink::test::ThreadCount;
using fwdsink::test::ThreadsSettleAt;

// Records the jobs that ran, from the worker's thread.
struct Log {
  std::mutex mu;
  std::vector<std::string> ran;  // guarded by mu
  void Add(const std::string& s) {
    std::lock_guard lock(mu);
    ran.push_back(s);
  }
};

}  // namespace

TEST_CASE("APostWhileAJobWaitsInTheSlotReplacesIt") {
  fwdsink::SingleSlotWorker worker;
  Log log;
  std::promise<void> started;
  std::promise<void> release;
  auto released = release.get_future().share();
  worker.Post([&] {
    started.set_value();
    released.wait();  // hold the worker: the next posts wait in the slot
    log.Add("first");
  });
  started.get_future().wait();
  worker.Post([&] { log.Add("second"); });
  SUBCASE("a newer job replaces the queued one: only the newest runs") {
    worker.Post([&] { log.Add("third"); });
    release.set_value();
    worker.WaitIdle();
    CHECK(log.ran == std::vector<std::string>{"first", "third"});
  }
  SUBCASE("twin: nothing replaces it, so the queued job runs") {
    release.set_value();
    worker.WaitIdle();
    CHECK(log.ran == std::vector<std::string>{"first", "second"});
  }
}

TEST_CASE("WaitIdleSeesWhatTheJobWrote") {
  fwdsink::SingleSlotWorker worker;
  int result = 0;  // written by the job, read after WaitIdle()
  for (int i = 1; i <= 100; ++i) {
    worker.Post([&result, i] { result = i; });
    worker.WaitIdle();
    REQUIRE(result == i);
  }
}

TEST_CASE("TheDestructorRunsTheQueuedJob") {
  Log log;
  {
    fwdsink::SingleSlotWorker worker;
    worker.Post([&] { log.Add("queued"); });
  }
  CHECK(log.ran == std::vector<std::string>{"queued"});
  SUBCASE("twin: a worker never posted to starts no thread, and WaitIdle returns") {
    const std::size_t before = SettledThreadCount();
    {
      fwdsink::SingleSlotWorker idle;
      idle.WaitIdle();
      CHECK(ThreadCount() == before);
    }
    CHECK(ThreadCount() == before);
    SUBCASE("twin of the twin: the first Post starts one thread, which ends with the worker") {
      Log more;
      {
        fwdsink::SingleSlotWorker used;
        used.Post([&] { more.Add("posted"); });
        used.WaitIdle();
        CHECK(ThreadCount() == before + 1);
      }
      CHECK(ThreadsSettleAt(before));
      CHECK(more.ran == std::vector<std::string>{"posted"});
    }
  }
}

TEST_CASE("WorkersOnSharedThreadsRunTheirJobsOneAtATimeEach") {
  auto threads = std::make_shared<fwdsink::JobThreads>(2);
  constexpr int kWorkers = 6;
  constexpr int kPosts = 50;
  std::vector<std::unique_ptr<fwdsink::SingleSlotWorker>> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back(std::make_unique<fwdsink::SingleSlotWorker>(threads));
  }
  std::vector<std::atomic<int>> running(kWorkers);
  std::vector<std::atomic<int>> last(kWorkers);
  std::atomic<int> overlaps{0};
  for (int i = 1; i <= kPosts; ++i) {
    for (int w = 0; w < kWorkers; ++w) {
      workers[w]->Post([&, w, i] {
        if (running[w].fetch_add(1) != 0) overlaps.fetch_add(1);
        std::this_thread::yield();
        last[w].store(i);
        running[w].fetch_sub(1);
      });
    }
  }
  for (auto& w : workers) w->WaitIdle();
  CHECK(overlaps.load() == 0);
  // The newest job of each worker ran: an older one may have been replaced, never it.
  for (int w = 0; w < kWorkers; ++w) CHECK(last[w].load() == kPosts);
  CHECK(threads->threads() <= 2);
  SUBCASE("twin: the six workers' jobs do run at once, on as many threads as allowed") {
    std::atomic<int> in{0};
    std::promise<void> both;
    auto seen = both.get_future().share();
    for (int w = 0; w < 2; ++w) {
      workers[w]->Post([&] {
        if (in.fetch_add(1) == 1) both.set_value();
        // Returns once two jobs of two workers are in at once (bounded: a failure, not a hang).
        seen.wait_for(std::chrono::seconds(10));
      });
    }
    for (auto& w : workers) w->WaitIdle();
    CHECK(in.load() == 2);
    CHECK(threads->threads() == 2);
  }
}
