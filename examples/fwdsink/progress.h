// SPDX-License-Identifier: Apache-2.0
// The pieces of the daemon's progress line (and of systemd's STATUS=): pure text from
// the driver's gauges, so that their format is tested. @ref LLP 0018#visible
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/clock.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/pacer.h"

namespace fwdsink_cli {

// "1.2 MB/s", "3.4 krows/s", "17 req/s": one decimal with k or M, none below 1000.
[[nodiscard]] std::string HumanRate(double v, std::string_view unit);

// " | pacing 7.9 MB/s (learned)" (requests/s when only a request rate is known), or ""
// when nothing limits. @ref LLP 0016#visible
[[nodiscard]] std::string PacingText(const fwdsink::PaceRate& r);

// What the senders do: the one waiting longest ("waiting 3s: pacing (learned) (429)"),
// else the first sending ("sending p7"), else "idle"; with more than one sender,
// " | 3 in flight, limit 4". `now` measures the wait left. @ref LLP 0018#visible
[[nodiscard]] std::string SendersText(const std::vector<fwdsink::ForwardSink::State>& states,
                                      std::uint64_t busy, std::uint64_t limit,
                                      fwdsink::MonotonicTime now);

}  // namespace fwdsink_cli
