// SPDX-License-Identifier: Apache-2.0
// Private to ops/: the value shapes of the settings table (sizes, counts, durations,
// switches, ladders, statuses, headers) and the redactions of its secrets, each parsing
// one value or saying its bare problem. Included by settings.cc only. @ref LLP 0024#table
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/codec.h"
#include "fwdsink/http_header.h"
#include "fwdsink/settings.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/transport.h"
#include "io/http_rules.h"

namespace fwdsink::setting_shapes {

using std::chrono::milliseconds;

inline Status Bad(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline std::string Quoted(std::string_view v) { return "'" + std::string(v) + "'"; }

// ---- value shapes
inline Status PositiveSize(std::string_view v, std::uint64_t& out) {
  const auto n = ParseSize(v);
  if (!n) return Bad(Quoted(v) + " is " + SizeProblem(v));
  if (*n == 0) return Bad("must be greater than 0");
  out = *n;
  return OkStatus();
}

inline Status Count(std::string_view v, std::uint64_t& out, std::uint64_t min) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size()) {
    return Bad(Quoted(v) + " is not a non-negative integer");
  }
  if (n < min) return Bad("must be at least " + std::to_string(min));
  out = n;
  return OkStatus();
}

inline Status PositiveDuration(std::string_view v, milliseconds& out) {
  const auto d = ParseDuration(v);
  if (!d) return Bad(Quoted(v) + " is not a duration (e.g. 30, 1.5s, 250ms, 5m)");
  if (*d <= milliseconds::zero()) return Bad("must be positive");
  out = *d;
  return OkStatus();
}

template <typename T>
inline Status Text(std::string_view v, T& out) {
  if (v.empty()) return Bad("must not be empty");
  out = T(std::string(v));
  return OkStatus();
}

inline Status Switch(std::string_view v, bool& out) {
  out = v == "true";
  return OkStatus();
}

inline Status Ladder(std::string_view v, std::vector<milliseconds>& out) {
  std::vector<milliseconds> rungs;
  std::size_t start = 0;
  for (;;) {
    const auto comma = v.find(',', start);
    const std::string_view item = v.substr(start, comma - start);
    const auto d = ParseDuration(item);
    if (!d || *d <= milliseconds::zero()) {
      return Bad("rung " + std::to_string(rungs.size() + 1) + " (" + Quoted(item) +
                 ") is not a positive duration; expected e.g. 30,60,120,300");
    }
    rungs.push_back(*d);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  out = std::move(rungs);
  return OkStatus();
}

inline Status Jitter(std::string_view v, double& out) {
  double j = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), j);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size()) {
    return Bad(Quoted(v) + " is not a number");
  }
  out = j;
  return OkStatus();
}

// "408,425,500,502,504"; "5xx" stands for every 5xx.
inline Status RetryStatuses(std::string_view v, ResponseRules& rules) {
  rules.retry_statuses.clear();
  rules.retry_all_5xx = false;
  std::size_t start = 0;
  for (;;) {
    const auto comma = v.find(',', start);
    const std::string_view item = v.substr(start, comma - start);
    int n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item == "5xx") {
      rules.retry_all_5xx = true;
    } else if (item.empty() || ec != std::errc{} || end != item.data() + item.size()) {
      return Bad(Quoted(item) + " is not a status (e.g. 408,425,5xx)");
    } else {
      rules.retry_statuses.push_back(n);
    }
    if (comma == std::string_view::npos) return OkStatus();
    start = comma + 1;
  }
}

inline Status HeaderFile(std::string_view v, RequestFiles& r) {
  const auto colon = v.find(':');
  std::string path =
      colon == std::string_view::npos ? std::string() : std::string(v.substr(colon + 1));
  path.erase(0, path.find_first_not_of(" \t"));
  if (colon == std::string_view::npos || path.empty()) return Bad("expected 'Name: /path/to/file'");
  const std::string name(v.substr(0, colon));
  // The name is checked now; the value when the file is read.
  if (Status e = ValidateHeaderField(name, "", "header_file"); !e.ok()) return Bad(e.message());
  r.header_files.emplace_back(name, path);
  return OkStatus();
}

inline Status Header(std::string_view v, SinkSettings& s) {
  auto header = ParseHeaderFlag(v, "header");
  if (!header.ok()) return Bad(header.status().message());
  s.driver.forward.headers.push_back(std::move(*header));
  return OkStatus();
}

inline std::string RedactHeader(std::string_view v) {
  const auto colon = v.find(':');
  return std::string(v.substr(0, colon)) + ": <redacted>";
}
inline std::string RedactUrlValue(std::string_view v) { return RedactUrl(v); }

}  // namespace fwdsink::setting_shapes
