// SPDX-License-Identifier: Apache-2.0
// The driver's slots for requests in flight to one endpoint. Internal to the driver.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <stop_token>
#include <utility>

#include "fwdsink/clock.h"
#include "fwdsink/forward_deps.h"

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
  // A sender's second or later request in flight: takes a slot if one is free now and
  // nobody waits for one (a partition to start, a sender back from a wait), and the
  // sender holds fewer than its fair share of the limit (`held` extras besides its own
  // slot). Never waits. @ref LLP 0014#window
  [[nodiscard]] bool TryAcquireExtra(std::size_t held);
  // Gives an extra slot back.
  void ReleaseExtra();
  // Between two chunks: while more slots are held than the limit allows, gives this
  // one back and waits for it again, ahead of senders waiting in Acquire(). Returns
  // false when stopped (the slot is then not held). Returns at once when within it.
  [[nodiscard]] bool Yield(std::stop_token stop);
  // Gives a slot back for a wait: others may use it until Reclaim().
  void Lend();
  // After a wait: waits for a slot ahead of every other sender, who gives its slot up
  // at its next Yield(). False when stopped (no slot held). @ref LLP 0018#lend
  [[nodiscard]] bool Reclaim(std::stop_token stop);
  // Wakes waiters after the limit moved.
  void LimitChanged() { cv_.notify_all(); }
  // Returns the slots held now.
  [[nodiscard]] std::size_t busy() const;
  // Returns the senders waiting in Reclaim() now.
  [[nodiscard]] std::size_t returning() const;

 private:
  [[nodiscard]] bool Free() const { return busy_ < limit_(); }  // mu_ held

  std::function<std::size_t()> limit_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::size_t busy_ = 0;       // guarded by mu_
  std::size_t senders_ = 0;    // slots held by Acquire() (partitions); guarded by mu_
  std::size_t acquiring_ = 0;  // senders waiting in Acquire(); guarded by mu_
  std::size_t resuming_ = 0;   // senders waiting in Yield(); guarded by mu_
  std::size_t returning_ = 0;  // senders waiting in Reclaim(); guarded by mu_
};

// One sender's hold on a slot of `slots`, and the sleeper its sink waits with: a wait of
// kLendFrom or more (a ladder rung after a failure) lends the slot to the other
// partitions and reclaims it afterwards, so a partition that waits holds no other back.
// It keeps the slot for shorter waits (the pacer's spacing) and while `worth_lending`
// says no (a Retry-After holds the endpoint: another partition would only wait in the
// same hold, spending its inline budget). @ref LLP 0018#lend
//
// Threads: the sender's thread, except that `inner` may be any thread-safe sleeper.
// Not owned: `slots` and `inner` outlive it.
class LaneSlot final : public Sleeper {
 public:
  static constexpr std::chrono::milliseconds kLendFrom{1000};

  // `stop`: the driver's; it ends a wait for the slot back (the sink's own token ends
  // the sleep, and may have been stopped by a failover, not by Close()).
  LaneSlot(SenderSlots& slots, Sleeper& inner, std::stop_token stop,
           std::function<bool()> worth_lending)
      : slots_(slots),
        inner_(inner),
        stop_(std::move(stop)),
        worth_lending_(std::move(worth_lending)) {}

  // Takes a slot to start a partition (SenderSlots::Acquire).
  [[nodiscard]] bool Acquire(std::stop_token stop);
  // Gives the slot back if it is held.
  void Release();
  // Between two chunks (SenderSlots::Yield); false when stopped (then not held).
  [[nodiscard]] bool Yield(std::stop_token stop);
  [[nodiscard]] bool held() const { return held_; }

  // Sleeps on `inner`; a long wait lends the slot meanwhile. False when stopped.
  [[nodiscard]] bool SleepFor(std::chrono::milliseconds duration, std::stop_token stop) override;

 private:
  SenderSlots& slots_;
  Sleeper& inner_;
  const std::stop_token stop_;
  const std::function<bool()> worth_lending_;
  bool held_ = false;  // sender thread only
};

// The driver's RequestSlots for one sender: its extra requests from `slots`, and its own
// slot (`own`) given up between two chunks while over the limit; keeps the
// requests_in_flight and senders_busy gauges. @ref LLP 0021#cursor-road
//
// Threads: TryAcquire() and Release() any thread; Yield() the sender's thread (as `own`).
// Not owned: `slots`, `own` and `counters` outlive it.
class LaneRequests final : public RequestSlots {
 public:
  // `stop`: the driver's; it ends a wait in Yield().
  LaneRequests(SenderSlots& slots, LaneSlot& own, std::stop_token stop, DriverCounters& counters)
      : slots_(slots), own_(own), stop_(std::move(stop)), counters_(counters) {}
  [[nodiscard]] bool TryAcquire(std::size_t held) override;
  void Release() override;
  // Gives the sender's own slot up and waits for it while over the limit
  // (SenderSlots::Yield). A stop that cuts the wait short leaves it not held: the sink
  // aborts its next request.
  void Yield() override;

 private:
  SenderSlots& slots_;
  LaneSlot& own_;
  const std::stop_token stop_;
  DriverCounters& counters_;
};

}  // namespace fwdsink
