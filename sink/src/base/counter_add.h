// SPDX-License-Identifier: Apache-2.0
// Adds to one of the telemetry counters (fwdsink/telemetry.h). Internal to the sink.
#pragma once

#include <atomic>
#include <cstdint>

namespace fwdsink {

// Counters are read by any thread for telemetry, never to order other memory: relaxed.
inline void Add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace fwdsink
