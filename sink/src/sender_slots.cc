// SPDX-License-Identifier: Apache-2.0
#include "sender_slots.h"

#include "fwdsink/check.h"

namespace fwdsink {

bool SenderSlots::Acquire(std::stop_token stop) {
  std::unique_lock lock(mu_);
  // A sender resuming a half-sent partition goes first. @ref LLP 0018#slots
  if (!cv_.wait(lock, stop, [this] { return resuming_ == 0 && Free(); })) return false;
  busy_ += 1;
  return true;
}

void SenderSlots::Release() {
  {
    std::lock_guard lock(mu_);
    FWDSINK_DCHECK(busy_ > 0);
    busy_ -= 1;
  }
  cv_.notify_all();
}

bool SenderSlots::Yield(std::stop_token stop) {
  std::unique_lock lock(mu_);
  if (busy_ <= limit_()) return true;
  busy_ -= 1;
  resuming_ += 1;
  cv_.notify_all();
  const bool got = cv_.wait(lock, stop, [this] { return Free(); });
  resuming_ -= 1;
  if (got) busy_ += 1;
  lock.unlock();
  cv_.notify_all();  // Acquire() waits on resuming_ too
  return got;
}

std::size_t SenderSlots::busy() const {
  std::lock_guard lock(mu_);
  return busy_;
}

}  // namespace fwdsink
