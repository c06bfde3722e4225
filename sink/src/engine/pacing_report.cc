// SPDX-License-Identifier: Apache-2.0
#include "engine/pacing_report.h"

#include <cmath>
#include <string>

namespace fwdsink {

void PacingReport::Report(const EndpointPacer& pacer, MonotonicTime now, Counters& counters,
                          const std::function<void(Event)>& emit) {
  const PaceRate r = pacer.Current(now);
  const auto bytes = static_cast<std::uint64_t>(r.bytes_per_s);
  const auto requests = static_cast<std::uint64_t>(std::ceil(r.requests_per_s));
  counters.pacing_bytes_per_s.store(bytes, std::memory_order_relaxed);
  counters.pacing_requests_per_s.store(requests, std::memory_order_relaxed);
  const auto previous = counters.pacing_source.exchange(static_cast<std::uint64_t>(r.source),
                                                        std::memory_order_relaxed);
  // The request rate exactly, also under one a second. @ref LLP 0023#rate-limit-remaining
  const auto interval =
      r.requests_per_s > 0 ? static_cast<std::uint64_t>(std::llround(1000 / r.requests_per_s)) : 0;
  const auto moved_by_a_quarter = [](std::uint64_t now_value, std::uint64_t then) {
    return now_value > then * 5 / 4 || now_value < then * 3 / 4;
  };
  const bool moved = moved_by_a_quarter(bytes, reported_bytes_) ||
                     moved_by_a_quarter(interval, reported_interval_ms_);
  if (previous == static_cast<std::uint64_t>(r.source) && !moved) return;
  reported_bytes_ = bytes;
  reported_interval_ms_ = interval;
  if (!emit) return;
  emit({.name = events::kForwardPacing,
        .reason = std::string(to_string(r.source)),
        .message = "pacing rate changed",
        .rate_bytes_per_s = bytes,
        .rate_requests_per_s = requests,
        .request_interval_ms = interval});
}

}  // namespace fwdsink
