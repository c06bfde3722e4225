// SPDX-License-Identifier: Apache-2.0
// LatencyHistogram: request latency in fixed buckets, for the Prometheus histogram
// fwdsink_request_duration_seconds. @ref LLP 0025#metrics
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace fwdsink {

// Upper bounds of the latency buckets, in seconds (the last bucket is +Inf, implied).
// Chosen for HTTP ingest: a local receiver answers in a few ms, a loaded one over
// seconds, and a request is cut at its deadline (tens of seconds).
inline constexpr std::array<double, 12> kLatencyBucketsSeconds = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

// A plain copy of a LatencyHistogram: cumulative counts per bucket, as Prometheus
// wants them.
struct HistogramSnapshot {
  std::array<std::uint64_t, kLatencyBucketsSeconds.size()> cumulative{};  // count <= bound
  std::uint64_t count = 0;  // every observation (the +Inf bucket)
  double sum_seconds = 0;
};

// Counts observed durations into kLatencyBucketsSeconds. Observe() and Snapshot() may
// be called from any thread (relaxed atomics: each count is exact, a snapshot is not a
// transaction). Shared by every sender of one endpoint through ForwardDeps::latency.
// Ignores negative durations (counted as 0).
class LatencyHistogram {
 public:
  // Records one request's duration.
  void Observe(std::chrono::nanoseconds d) noexcept;
  // Copies the counts, cumulative per bucket.
  [[nodiscard]] HistogramSnapshot Snapshot() const noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, kLatencyBucketsSeconds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace fwdsink
