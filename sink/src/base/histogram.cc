// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/histogram.h"

#include <algorithm>

namespace fwdsink {

void LatencyHistogram::Observe(std::chrono::nanoseconds d) noexcept {
  const auto ns = std::max<std::int64_t>(0, d.count());
  const double seconds = static_cast<double>(ns) / 1e9;
  // Non-cumulative per bucket here (one increment per observation); Snapshot() sums.
  const auto it =
      std::lower_bound(kLatencyBucketsSeconds.begin(), kLatencyBucketsSeconds.end(), seconds);
  const auto index = static_cast<std::size_t>(it - kLatencyBucketsSeconds.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

HistogramSnapshot LatencyHistogram::Snapshot() const noexcept {
  HistogramSnapshot s;
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < kLatencyBucketsSeconds.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  s.count = running + buckets_.back().load(std::memory_order_relaxed);
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace fwdsink
