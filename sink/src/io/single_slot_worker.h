// SPDX-License-Identifier: Apache-2.0
// A worker that runs one job at a time, with one queue slot. Internal to the sink.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "io/job_threads.h"

namespace fwdsink {

// Runs posted jobs, one at a time, and holds at most one queued job: a Post() while a
// job waits in the slot replaces it (only the newest matters). Its jobs run on a
// JobThreads: its own single thread (the default: started on the first Post(), so a
// worker never used costs no thread, and kept, because a thread per job cost a thread
// creation each time and spread buffers over glibc's per-thread arenas, LLP
// 0014#read-ahead), or threads it shares with other workers (the sink's read-ahead and
// the cursor saves share JobThreads::ForFiles(): @ref LLP 0014#threads). Used for the
// sink's read-ahead (which never posts while a job is queued or running), for the
// driver's cursor saves (where a newer cursor of a partition replaces a queued one) and
// for a connection's posts. It ignores results and errors: a job records its own, and
// the poster reads them after WaitIdle(). @ref LLP 0014#single-slot-worker
//
// Threads: Post() and WaitIdle() may be called from any thread; state guarded by mu_.
// The destructor runs a queued job and waits for the running one.
class SingleSlotWorker {
 public:
  SingleSlotWorker();
  explicit SingleSlotWorker(std::shared_ptr<JobThreads> threads);
  ~SingleSlotWorker();
  SingleSlotWorker(const SingleSlotWorker&) = delete;
  SingleSlotWorker& operator=(const SingleSlotWorker&) = delete;

  // Queues `job` in the slot, replacing a queued job that has not started yet.
  void Post(std::function<void()> job);
  // Waits until the slot is empty and no job runs. Everything a finished job wrote
  // is visible to the caller afterwards.
  void WaitIdle();

 private:
  // Runs the slot's jobs until it is empty; on one of threads_.
  void Drain();

  std::shared_ptr<JobThreads> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> queued_;  // guarded by mu_
  bool scheduled_ = false;        // a Drain() is submitted or running; guarded by mu_
};

}  // namespace fwdsink
