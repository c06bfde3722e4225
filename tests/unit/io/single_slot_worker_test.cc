// SPDX-License-Identifier: Apache-2.0
// SingleSlotWorker: one job at a time, a newer queued job replaces an older one.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/single_slot_worker.h"

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

// The threads of this process now (Linux: one entry per thread in /proc/self/task).
std::size_t ThreadCount() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// A joined thread may stay listed for a moment after join() returns: waits (yielding,
// at most 5 s of real time) until the count is `n`, and says whether it got there.
bool ThreadsSettleAt(std::size_t n) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ThreadCount() != n) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// The count once no thread is on its way out: the same over many looks.
std::size_t SettledThreadCount() {
  std::size_t n = ThreadCount();
  for (int same = 0; same < 200; ++same) {
    std::this_thread::yield();
    if (const std::size_t now = ThreadCount(); now != n) {
      n = now;
      same = 0;
    }
  }
  return n;
}

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
