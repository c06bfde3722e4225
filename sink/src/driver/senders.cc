// SPDX-License-Identifier: Apache-2.0
// The driver: several partitions in flight, and the concurrency limit learning from
// each attempt. @ref LLP 0018
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "driver/driver_impl.h"
#include "driver/long_row.h"
#include "engine/resolve_deps.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"

namespace fwdsink {
namespace {

void Merge(TickReport& into, const TickReport& r) {
  into.partitions += r.partitions;
  into.delivered += r.delivered;
  into.respooled += r.respooled;
  into.poisoned_chunks += r.poisoned_chunks;
  into.horizon_dead += r.horizon_dead;
  into.torn += r.torn;
  into.errors += r.errors;
  into.quarantined += r.quarantined;
  into.chunks_acked += r.chunks_acked;
  into.rows_acked += r.rows_acked;
  into.bytes_acked += r.bytes_acked;
  into.throttled = into.throttled || r.throttled;
  into.aborted = into.aborted || r.aborted;
  if (r.last_error != Outcome::kDelivered) into.last_error = r.last_error;
}

}  // namespace

// Hands `count` items out in order to up to `limit` senders, each item to `work` on the
// sender that took it, with that sender's slot held. The driver thread is the first
// sender; the others are threads of this call, joined before it returns, so nothing
// runs between ticks. @ref LLP 0018#senders
void Driver::Impl::HandOut(std::size_t count, const SenderWork& work, TickReport& report) {
  next.store(0);
  const std::size_t n = std::min(senders.size(), count);
  if (n == 0) return;
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 1; i < n; ++i) {
      threads.emplace_back(
          [this, i, count, &work, &report] { SenderLoop(senders[i], count, work, report); });
    }
    SenderLoop(senders[0], count, work, report);
  }  // joined here
  counters.senders_busy.store(0, std::memory_order_relaxed);
  counters.requests_in_flight.store(0, std::memory_order_relaxed);
}

void Driver::Impl::SenderLoop(Sender& sender, std::size_t count, const SenderWork& work,
                              TickReport& report) {
  TickReport mine;
  while (!stop_tick.load()) {
    if (next.load() >= count) break;  // nothing left to hand out: no slot taken
    if (stop.stop_requested() || !sender.slot->AcquireOwn()) {
      mine.aborted = true;
      break;
    }
    const std::size_t i = next.fetch_add(1);
    if (i < count && !stop_tick.load()) {
      counters.senders_busy.store(pool.busy(), std::memory_order_relaxed);
      counters.requests_in_flight.store(pool.busy(), std::memory_order_relaxed);
      work(sender, i, mine);
    }
    sender.slot->ReleaseOwn();
    if (i >= count) break;
  }
  std::lock_guard guard(report_mu);
  Merge(report, mine);
}

void Driver::Impl::SendAll(const std::vector<ReadyPartition>& ready, TickReport& report) {
  HandOut(
      ready.size(),
      [this, &ready](Sender& sender, std::size_t i, TickReport& mine) {
        ForwardOne(sender, ready[i], mine);
      },
      report);
}

// The limit counts requests, and learns from each one's own round trip (several of a
// partition are in flight at once). A request that waited (pacer, gate, ladder,
// Retry-After) is no sign of room: the limit does not grow on it. Refusals reach the
// limit as they happen, not only when their chunk is finally acknowledged.
// @ref LLP 0018#signals @ref LLP 0014#window
void Driver::Impl::OnAttempt(const AttemptRecord& r) {
  switch (r.kind) {
    case AttemptRecord::Kind::kAccepted: {
      // A round trip under the floor is the host's noise, not a path to fill: a request
      // of a few hundred bytes to a local server takes ~0.3 ms, and a 2 ms fsync spike at
      // the server read as "rising" and held the limit at 1. @ref LLP 0018#signals
      constexpr std::chrono::microseconds kFloor{10'000};
      Observe(std::max(r.round_trip, kFloor),
              r.pushed_back ? RequestSignal::kPaced : RequestSignal::kAccepted, r.endpoint);
      break;
    }
    case AttemptRecord::Kind::kRefused:
      Observe(std::chrono::microseconds{0}, RequestSignal::kBackpressure, r.endpoint);
      break;
    case AttemptRecord::Kind::kFailed:
      Observe(std::chrono::microseconds{0}, RequestSignal::kError, r.endpoint);
      break;
    case AttemptRecord::Kind::kOther: break;
  }
}

void Driver::Impl::Observe(std::chrono::microseconds rtt, RequestSignal signal, std::size_t ep) {
  const auto change = limit.Observe(deps.time->MonotonicNow(), rtt, signal, pool.busy());
  if (change) LimitMoved(*change);
  // A driver made later for this endpoint starts where this limit held.
  // @ref LLP 0018#start
  if (const std::optional<std::size_t> stable = limit.stable();
      stable && ep < deps.endpoints->size()) {
    deps.endpoints->at(ep).stable_limit->store(*stable, std::memory_order_relaxed);
  }
}

void Driver::Impl::LimitMoved(const LimitChange& c) {
  counters.concurrency_limit.store(c.to, std::memory_order_relaxed);
  if (c.to > c.from) {
    counters.concurrency_increases.fetch_add(1, std::memory_order_relaxed);
  } else if (c.to < c.from) {
    counters.concurrency_decreases.fetch_add(1, std::memory_order_relaxed);
  }
  pool.LimitChanged();
  // Every fall is said, and a fall the path held at the limit (LLP 0018#bdp); a rise
  // only when it reaches the ceiling (the ramp is counted).
  if (c.to <= c.from || c.to == options.concurrency.max) {
    Emit({.name = events::kDriverConcurrency,
          .reason = std::string(c.why),
          .begin = c.from,
          .end = c.to,
          .message = "concurrency " + std::to_string(c.from) + " -> " + std::to_string(c.to) +
                     " (" + std::string(c.why) + ")"});
  }
}

}  // namespace fwdsink
