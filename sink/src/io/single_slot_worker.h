// SPDX-License-Identifier: Apache-2.0
// A thread that runs one job at a time, with one queue slot. Internal to the sink.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace fwdsink {

// Runs posted jobs, one at a time, on a thread of its own: started on the first Post()
// (so a worker never used costs no thread) and kept for the worker's lifetime, because
// a thread per job cost a thread creation each time and spread buffers over glibc's
// per-thread arenas (LLP 0014#read-ahead). Holds at most one queued job: a Post()
// while a job waits in the slot replaces it (only the newest matters). Used for the
// sink's read-ahead (which never posts while a job is queued or running) and for the
// driver's cursor saves (where a newer cursor of a partition replaces a queued one).
// It ignores results and errors: a job records its own, and the poster reads them
// after WaitIdle(). @ref LLP 0014#single-slot-worker
//
// Threads: Post() and WaitIdle() may be called from any thread; state guarded by mu_.
// The destructor runs a queued job, waits for the running one, then joins.
class SingleSlotWorker {
 public:
  SingleSlotWorker() = default;
  ~SingleSlotWorker();
  SingleSlotWorker(const SingleSlotWorker&) = delete;
  SingleSlotWorker& operator=(const SingleSlotWorker&) = delete;

  // Queues `job` in the slot, replacing a queued job that has not started yet.
  void Post(std::function<void()> job);
  // Waits until the slot is empty and no job runs. Everything a finished job wrote
  // is visible to the caller afterwards.
  void WaitIdle();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> queued_;  // guarded by mu_
  bool running_ = false;          // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  std::thread thread_;            // started by the first Post(), under mu_
};

}  // namespace fwdsink
