// SPDX-License-Identifier: Apache-2.0
#include "io/single_slot_worker.h"

#include <utility>

namespace fwdsink {

SingleSlotWorker::~SingleSlotWorker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SingleSlotWorker::Post(std::function<void()> job) {
  std::lock_guard lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  queued_ = std::move(job);
  cv_.notify_all();
}

void SingleSlotWorker::WaitIdle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !queued_ && !running_; });
}

void SingleSlotWorker::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return queued_ != nullptr || stopping_; });
    if (!queued_) return;  // stopping with nothing left to run
    auto job = std::move(queued_);
    queued_ = nullptr;
    running_ = true;
    lock.unlock();
    job();
    job = nullptr;  // whatever the job holds is released before it counts as done
    lock.lock();
    running_ = false;
    cv_.notify_all();
  }
}

}  // namespace fwdsink
