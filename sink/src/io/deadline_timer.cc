// SPDX-License-Identifier: Apache-2.0
#include "io/deadline_timer.h"

#include "base/shared_while_held.h"

namespace fwdsink {

DeadlineTimer::~DeadlineTimer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

DeadlineTimer::Id DeadlineTimer::Arm(Time at, std::function<void()> fire) {
  std::lock_guard lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  const Id id = next_++;
  armed_.emplace(std::pair{at, id}, std::move(fire));
  at_.emplace(id, at);
  cv_.notify_all();
  return id;
}

bool DeadlineTimer::Cancel(Id id) {
  std::unique_lock lock(mu_);
  if (const auto it = at_.find(id); it != at_.end()) {
    armed_.erase(std::pair{it->second, id});
    at_.erase(it);
    cv_.notify_all();  // the loop may be waiting for it: it waits for the next instead
    return true;
  }
  cv_.wait(lock, [&] { return firing_ != id; });
  return false;
}

void DeadlineTimer::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (armed_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto first = armed_.begin();
    // A copy: wait_until reads its deadline again after waking, and a Cancel() while
    // the lock is released may have erased the entry it came from.
    const Time at = first->first.first;
    if (std::chrono::steady_clock::now() < at) {
      cv_.wait_until(lock, at);
      continue;
    }
    const Id id = first->first.second;
    std::function<void()> fire = std::move(first->second);
    armed_.erase(first);
    at_.erase(id);
    firing_ = id;
    lock.unlock();
    fire();
    fire = nullptr;
    lock.lock();
    firing_ = 0;
    cv_.notify_all();
  }
}

std::shared_ptr<DeadlineTimer> DeadlineTimer::Shared() { return SharedWhileHeld<DeadlineTimer>(); }

}  // namespace fwdsink
