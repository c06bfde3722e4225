// SPDX-License-Identifier: Apache-2.0
#include "progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

namespace fwdsink_cli {

std::string HumanRate(double v, std::string_view unit) {
  char buf[48];
  const int n = static_cast<int>(unit.size());
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f M%.*s/s", v / 1e6, n, unit.data());
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k%.*s/s", v / 1e3, n, unit.data());
  } else {
    std::snprintf(buf, sizeof buf, "%.0f %.*s/s", v, n, unit.data());
  }
  return buf;
}

std::string PacingText(const fwdsink::PaceRate& r) {
  if (r.source == fwdsink::PaceSource::kNone) return "";
  std::string rate;
  if (r.bytes_per_s > 0) rate = HumanRate(r.bytes_per_s, "B");
  if (r.bytes_per_s <= 0 && r.requests_per_s > 0) rate = HumanRate(r.requests_per_s, "req");
  if (rate.empty()) return "";
  return " | pacing " + rate + " (" + std::string(fwdsink::to_string(r.source)) + ")";
}

std::string SendersText(const std::vector<fwdsink::ForwardSink::State>& states, std::uint64_t busy,
                        std::uint64_t limit, fwdsink::MonotonicTime now) {
  using Phase = fwdsink::ForwardSink::State::Phase;
  const fwdsink::ForwardSink::State* shown = nullptr;
  for (const auto& st : states) {
    const bool better = !shown ||
                        (st.phase == Phase::kWaiting &&
                         (shown->phase != Phase::kWaiting || st.until > shown->until)) ||
                        (st.phase == Phase::kSending && shown->phase == Phase::kIdle);
    if (better) shown = &st;
  }
  std::string s;
  switch (shown ? shown->phase : Phase::kIdle) {
    case Phase::kWaiting: {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(shown->until - now);
      const long long secs = std::max<long long>(0, (left.count() + 999) / 1000);
      s += "waiting " + std::to_string(secs) +
           "s: " + (shown->reason.empty() ? std::string("backpressure") : shown->reason);
      if (shown->status) s += " (" + std::to_string(shown->status) + ")";
      break;
    }
    case Phase::kSending: s += "sending " + shown->partition; break;
    case Phase::kIdle: s += "idle"; break;
  }
  if (states.size() > 1) {
    s += " | " + std::to_string(busy) + " in flight, limit " + std::to_string(limit);
  }
  return s;
}

}  // namespace fwdsink_cli
