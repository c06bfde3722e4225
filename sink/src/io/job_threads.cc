// SPDX-License-Identifier: Apache-2.0
#include "io/job_threads.h"

#include <algorithm>
#include <utility>

#include "base/shared_while_held.h"
#include "fwdsink/check.h"

namespace fwdsink {

JobThreads::JobThreads(std::size_t max_threads)
    : max_threads_(std::max<std::size_t>(max_threads, 1)) {}

JobThreads::~JobThreads() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (const std::thread& t : threads_) FWDSINK_CHECK(t.get_id() != std::this_thread::get_id());
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void JobThreads::Submit(std::function<void()> job) {
  std::lock_guard lock(mu_);
  jobs_.push_back(std::move(job));
  // A thread more only when the jobs waiting outnumber the threads waiting for them.
  if (jobs_.size() > idle_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { Loop(); });
  } else {
    cv_.notify_one();
  }
}

std::size_t JobThreads::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

std::size_t JobThreads::idle() const {
  std::lock_guard lock(mu_);
  return idle_;
}

void JobThreads::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return !jobs_.empty() || stopping_; });
    --idle_;
    if (jobs_.empty()) return;  // stopping with nothing left to run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what the job holds is released before the next one starts
    lock.lock();
  }
}

std::shared_ptr<JobThreads> JobThreads::ForFiles() {
  return SharedWhileHeld<JobThreads>(kFileThreads);
}

}  // namespace fwdsink
