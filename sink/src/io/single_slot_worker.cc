// SPDX-License-Identifier: Apache-2.0
#include "io/single_slot_worker.h"

#include <utility>

namespace fwdsink {

SingleSlotWorker::SingleSlotWorker() : SingleSlotWorker(std::make_shared<JobThreads>(1)) {}

SingleSlotWorker::SingleSlotWorker(std::shared_ptr<JobThreads> threads)
    : threads_(std::move(threads)) {}

SingleSlotWorker::~SingleSlotWorker() { WaitIdle(); }

void SingleSlotWorker::Post(std::function<void()> job) {
  std::lock_guard lock(mu_);
  queued_ = std::move(job);
  if (!scheduled_) {
    scheduled_ = true;
    threads_->Submit([this] { Drain(); });
  }
}

void SingleSlotWorker::WaitIdle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !scheduled_; });
}

void SingleSlotWorker::Drain() {
  std::unique_lock lock(mu_);
  while (queued_) {
    std::function<void()> job = std::move(queued_);
    queued_ = nullptr;
    lock.unlock();
    job();
    job = nullptr;  // whatever the job holds is released before it counts as done
    lock.lock();
  }
  scheduled_ = false;
  cv_.notify_all();
}

}  // namespace fwdsink
