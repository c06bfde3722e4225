// SPDX-License-Identifier: Apache-2.0
// The driver's slots for requests in flight to one endpoint. Internal to the driver.
// What limits what is in flight, one name each: @ref LLP 0018#slots
//   SlotPool        the adaptive concurrency limit: requests in flight, of all senders
//   SenderSlot      one sender's part of the pool: its own slot, its further requests
//                   (up to a fair share), the slot lent while its sink sleeps
//   RequestSlots    the contract by which a sink takes a SenderSlot's further requests
//                   and yields its own slot (fwdsink/forward_deps.h)
//   InflightBudget  bytes in flight, of all senders (fwdsink/forward_deps.h)
//   window          one partition's requests in flight (ForwardOptions::window)
//   ConnectionPool  not a limit of ours: the engine's connections, one per request in
//                   flight, shared by the senders (engine/connection_pool.h)
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

// The requests in flight of all senders: a counting semaphore whose size moves (the
// adaptive limit, read through `limit`) and which serves a sender resuming a partition it had
// started before a sender starting a new one (partitions are handed out oldest first, and a
// half-sent one is older than any not yet started). Ignores which partition a sender holds.
// @ref LLP 0018#slots
//
// Threads: every method may be called from any thread; waits end early when `stop` is
// requested (then they return false and hold nothing). State guarded by mu_.
class SlotPool {
 public:
  // `limit` is called under mu_ and must not call back into the pool.
  explicit SlotPool(std::function<std::size_t()> limit) : limit_(std::move(limit)) {}

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

// One sender's hold on the pool: its own slot, taken for the partition or pack it holds,
// and its requests beyond the first, taken by its sink through the RequestSlots contract.
// It is also the sleeper its sink waits with: a wait of kLendFrom or more (a ladder rung
// after a failure) lends the own slot to the other partitions and reclaims it afterwards,
// so a partition that waits holds no other back. It keeps the slot for shorter waits
// (the pacer's spacing) and while `worth_lending` says no (a Retry-After holds the
// endpoint: another partition would only wait in the same hold, spending its inline
// budget). Keeps the senders_busy and requests_in_flight gauges. @ref LLP 0018#lend
// @ref LLP 0021#cursor-road
//
// Threads: the sender's thread (its sink calls it there too), except that `inner` may be
// any thread-safe sleeper. Not owned: `pool`, `inner` and `counters` outlive it.
class SenderSlot final : public Sleeper, public RequestSlots {
 public:
  static constexpr std::chrono::milliseconds kLendFrom{1000};

  // `stop`: the driver's; it ends every wait for a slot (the sink's own token ends the
  // sleep, and may have been stopped by a failover, not by Close()).
  SenderSlot(SlotPool& pool, Sleeper& inner, std::stop_token stop,
             std::function<bool()> worth_lending, DriverCounters& counters)
      : pool_(pool),
        inner_(inner),
        stop_(std::move(stop)),
        worth_lending_(std::move(worth_lending)),
        counters_(counters) {}

  // Takes the own slot to start a partition or a pack (SlotPool::Acquire); false when
  // stopped (then not held).
  [[nodiscard]] bool AcquireOwn();
  // Gives the own slot back if it is held.
  void ReleaseOwn();
  [[nodiscard]] bool held() const { return held_; }

  // RequestSlots: a request beyond the sender's first (SlotPool::TryAcquireExtra), and
  // its slot back.
  [[nodiscard]] bool TryAcquire(std::size_t extras) override;
  void Release() override;
  // RequestSlots: between two chunks, gives the own slot up and waits for it while over
  // the limit (SlotPool::Yield). A stop that cuts the wait short leaves it not held: the
  // sink aborts its next request.
  void Yield() override;

  // Sleeper: sleeps on `inner`; a long wait lends the own slot meanwhile. False when
  // stopped.
  [[nodiscard]] bool SleepFor(std::chrono::milliseconds duration, std::stop_token stop) override;

 private:
  SlotPool& pool_;
  Sleeper& inner_;
  const std::stop_token stop_;
  const std::function<bool()> worth_lending_;
  DriverCounters& counters_;
  bool held_ = false;  // sender thread only
};

}  // namespace fwdsink
