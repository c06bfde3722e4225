// SPDX-License-Identifier: Apache-2.0
#include "driver/sender_slots.h"

#include <algorithm>

#include "fwdsink/check.h"

namespace fwdsink {

bool SlotPool::Acquire(std::stop_token stop) {
  std::unique_lock lock(mu_);
  acquiring_ += 1;
  // A sender resuming a half-sent partition goes first. @ref LLP 0018#slots
  const bool got =
      cv_.wait(lock, stop, [this] { return resuming_ == 0 && returning_ == 0 && Free(); });
  acquiring_ -= 1;
  if (!got) return false;
  busy_ += 1;
  senders_ += 1;
  return true;
}

void SlotPool::Release() {
  {
    std::lock_guard lock(mu_);
    FWDSINK_DCHECK(busy_ > 0 && senders_ > 0);
    busy_ -= 1;
    senders_ -= 1;
  }
  cv_.notify_all();
}

bool SlotPool::TryAcquireExtra(std::size_t held) {
  std::lock_guard lock(mu_);
  if (acquiring_ > 0 || resuming_ > 0 || returning_ > 0 || !Free()) return false;
  const std::size_t fair = std::max<std::size_t>(1, limit_() / std::max<std::size_t>(1, senders_));
  if (held + 1 >= fair) return false;
  busy_ += 1;
  return true;
}

void SlotPool::ReleaseExtra() {
  {
    std::lock_guard lock(mu_);
    FWDSINK_DCHECK(busy_ > 0);
    busy_ -= 1;
  }
  cv_.notify_all();
}

bool SlotPool::Yield(std::stop_token stop) {
  std::unique_lock lock(mu_);
  // Over the limit, or at it while a sender back from a wait needs this slot.
  if (busy_ + (returning_ > 0 ? 1 : 0) <= limit_()) return true;
  busy_ -= 1;
  resuming_ += 1;
  cv_.notify_all();
  const bool got = cv_.wait(lock, stop, [this] { return returning_ == 0 && Free(); });
  resuming_ -= 1;
  if (got) busy_ += 1;
  lock.unlock();
  cv_.notify_all();  // Acquire() waits on resuming_ too
  return got;
}

void SlotPool::Lend() { ReleaseExtra(); }  // still the same sender's

bool SlotPool::Reclaim(std::stop_token stop) {
  std::unique_lock lock(mu_);
  returning_ += 1;
  const bool got = cv_.wait(lock, stop, [this] { return Free(); });
  returning_ -= 1;
  if (got) busy_ += 1;
  lock.unlock();
  cv_.notify_all();  // Acquire() and Yield() wait on returning_ too
  return got;
}

std::size_t SlotPool::busy() const {
  std::lock_guard lock(mu_);
  return busy_;
}

std::size_t SlotPool::returning() const {
  std::lock_guard lock(mu_);
  return returning_;
}

bool SenderSlot::AcquireOwn() {
  held_ = pool_.Acquire(stop_);
  return held_;
}

void SenderSlot::ReleaseOwn() {
  if (held_) pool_.Release();
  held_ = false;
}

bool SenderSlot::TryAcquire(std::size_t extras) {
  const bool got = pool_.TryAcquireExtra(extras);
  if (got) counters_.requests_in_flight.store(pool_.busy(), std::memory_order_relaxed);
  return got;
}

void SenderSlot::Release() {
  pool_.ReleaseExtra();
  counters_.requests_in_flight.store(pool_.busy(), std::memory_order_relaxed);
}

void SenderSlot::Yield() {
  if (!held_) return;
  held_ = pool_.Yield(stop_);
  if (!held_) return;  // stopped: the sink aborts next
  counters_.senders_busy.store(pool_.busy(), std::memory_order_relaxed);
}

bool SenderSlot::SleepFor(std::chrono::milliseconds duration, std::stop_token stop) {
  if (!held_ || duration < kLendFrom || !worth_lending_()) {
    return inner_.SleepFor(duration, std::move(stop));
  }
  pool_.Lend();
  held_ = false;
  const bool slept = inner_.SleepFor(duration, std::move(stop));
  // Woken early by a failover the sink goes on at once, and by Close() it aborts:
  // either way the slot comes back first, unless the driver stops.
  held_ = pool_.Reclaim(stop_);
  return slept && held_;
}

}  // namespace fwdsink
