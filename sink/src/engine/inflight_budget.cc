// SPDX-License-Identifier: Apache-2.0
// The cap on bytes in flight that every call of a process shares (fwdsink/forward_deps.h).
// @ref LLP 0014#inflight-cap
#include <mutex>

#include "fwdsink/forward_deps.h"

namespace fwdsink {

bool InflightBudget::TryTake(std::uint64_t bytes, std::uint64_t /*held*/) {
  // @ref LLP 0014#inflight-cap
  // Sequentially consistent, with Give(): a giver that sees no taker waiting has its
  // bytes seen by the taker's next check.
  std::uint64_t used = used_.load();
  for (;;) {
    if (used > 0 && used + bytes > limit_) return false;
    if (used_.compare_exchange_weak(used, used + bytes)) break;
  }
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (used + bytes > peak &&
         !peak_.compare_exchange_weak(peak, used + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

bool InflightBudget::Take(std::uint64_t bytes, const std::stop_token& stop) {
  if (TryTake(bytes)) return true;
  waits_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock lock(mu_);
  waiting_.fetch_add(1);
  const bool took = room_.wait(lock, stop, [&] { return TryTake(bytes); });
  waiting_.fetch_sub(1);
  return took;
}

void InflightBudget::Give(std::uint64_t bytes) {
  used_.fetch_sub(bytes);
  if (waiting_.load() == 0) return;
  // Under the lock: a taker between its failed check and its sleep cannot miss this.
  { const std::lock_guard lock(mu_); }
  room_.notify_all();
}

}  // namespace fwdsink
