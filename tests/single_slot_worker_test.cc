// SPDX-License-Identifier: Apache-2.0
// SingleSlotWorker: one job at a time, a newer queued job replaces an older one.
#include <doctest/doctest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "single_slot_worker.h"

namespace {

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
  SUBCASE("twin: a worker never posted to runs nothing and joins nothing") {
    fwdsink::SingleSlotWorker idle;
    idle.WaitIdle();
    CHECK(log.ran.size() == 1);
  }
}
