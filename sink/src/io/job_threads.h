// SPDX-License-Identifier: Apache-2.0
// A few threads that run jobs in turn, shared by the workers that post to them.
// Internal to the sink.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fwdsink {

// Runs submitted jobs in order of submission on at most `max_threads` threads, started
// one at a time as jobs wait with no thread free (so threads never used cost nothing)
// and kept for the object's lifetime. A job must not wait for another job of the same
// JobThreads: with every thread taken the other would never start.
//
// The file work of every sink in the process (read-ahead, cursor saves) runs on one
// shared set, ForFiles(): a thread each per sender was two threads per partition in
// flight for work that is short and bound by one disk. @ref LLP 0014#threads
//
// Threads: Submit() from any thread. The destructor runs what is queued, then joins;
// it must not run on one of its own threads.
class JobThreads {
 public:
  explicit JobThreads(std::size_t max_threads);
  ~JobThreads();
  JobThreads(const JobThreads&) = delete;
  JobThreads& operator=(const JobThreads&) = delete;

  void Submit(std::function<void()> job);
  // The threads started so far, and those of them waiting for a job now.
  [[nodiscard]] std::size_t threads() const;
  [[nodiscard]] std::size_t idle() const;

  // The process's threads for file work, shared by every holder: made by the first
  // call after none was held, gone (joined) with the last holder.
  static std::shared_ptr<JobThreads> ForFiles();
  static constexpr std::size_t kFileThreads = 4;

 private:
  void Loop();

  const std::size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  std::size_t idle_ = 0;                    // threads waiting for a job; guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;        // grown under mu_
};

}  // namespace fwdsink
