// SPDX-License-Identifier: Apache-2.0
// Reading what the daemon wrote (its JSON log, its stdout): whether a text holds a part,
// how often, and the `"event":"NAME"` a log line carries.
//
//   CHECK(Has(d.err(), "daemon.exit"));
//   CHECK(Count(log, Event("forward.delivered")) == 2);
//   CHECK(EventCount(log, "forward.delivered") == 2);  // the same
//
// Threading: plain functions on strings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fwdsink::test {

// Returns whether `text` holds `part`.
inline bool Has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// Returns how many times `needle` starts in `text` (overlapping ones counted).
inline std::size_t Count(const std::string& text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Returns `"event":"NAME"`, as a log line of the daemon names its event.
inline std::string Event(std::string_view name) {
  return "\"event\":\"" + std::string(name) + "\"";
}

// Returns how many lines of `log` carry the event `event`.
inline std::size_t EventCount(const std::string& log, std::string_view event) {
  return Count(log, Event(event));
}

}  // namespace fwdsink::test
