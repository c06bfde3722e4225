// SPDX-License-Identifier: Apache-2.0
// Private to the engine: the pacing rate in the gauges, and as a forward.pacing event
// when it changed source or moved by a quarter or more since last reported. One per
// ForwardPartition call. @ref LLP 0016#pacer
#pragma once

#include <cstdint>
#include <functional>

#include "fwdsink/clock.h"
#include "fwdsink/pacer.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

class PacingReport {
 public:
  void Report(const EndpointPacer& pacer, MonotonicTime now, Counters& counters,
              const std::function<void(Event)>& emit);

 private:
  std::uint64_t reported_bytes_ = 0;        // the rate last reported in an event
  std::uint64_t reported_interval_ms_ = 0;  // the request interval last reported
};

}  // namespace fwdsink
