// SPDX-License-Identifier: Apache-2.0
// The driver's slots for requests in flight to one endpoint. Internal to the driver.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <stop_token>

namespace fwdsink {

// A counting semaphore whose size moves (the adaptive limit, read through `limit`)
// and which serves a sender resuming a partition it had started before a sender
// starting a new one (partitions are handed out oldest first, and a half-sent one is
// older than any not yet started). Ignores which partition a sender holds.
// @ref LLP 0018#slots
//
// Threads: every method may be called from any thread; waits end early when `stop` is
// requested (then they return false and hold nothing). State guarded by mu_.
class SenderSlots {
 public:
  // `limit` is called under mu_ and must not call back into the slots.
  explicit SenderSlots(std::function<std::size_t()> limit) : limit_(std::move(limit)) {}

  // Waits for a free slot to start a partition; false when stopped (no slot held).
  [[nodiscard]] bool Acquire(std::stop_token stop);
  // Gives a slot back.
  void Release();
  // Between two chunks: while more slots are held than the limit allows, gives this
  // one back and waits for it again, ahead of senders waiting in Acquire(). Returns
  // false when stopped (the slot is then not held). Returns at once when within it.
  [[nodiscard]] bool Yield(std::stop_token stop);
  // Wakes waiters after the limit moved.
  void LimitChanged() { cv_.notify_all(); }
  // Returns the slots held now.
  [[nodiscard]] std::size_t busy() const;

 private:
  [[nodiscard]] bool Free() const { return busy_ < limit_(); }  // mu_ held

  std::function<std::size_t()> limit_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::size_t busy_ = 0;      // guarded by mu_
  std::size_t resuming_ = 0;  // senders waiting in Yield(); guarded by mu_
};

}  // namespace fwdsink
