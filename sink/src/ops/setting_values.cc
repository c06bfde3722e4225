// SPDX-License-Identifier: Apache-2.0
// The value shapes of settings as text: durations, sizes, listen addresses, log levels;
// and the FWDSINK_* environment. Declared in fwdsink/settings.h. @ref LLP 0024#table
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "fwdsink/settings.h"
#include "io/http_rules.h"

namespace fwdsink {

using std::chrono::milliseconds;

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "?";
}

std::optional<LogLevel> ParseLogLevel(std::string_view text) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == to_string(l)) return l;
  }
  return std::nullopt;
}

Status Settings::LoadEnvironment(std::span<const std::string> environment,
                                 std::vector<std::string>* unknown,
                                 std::span<const std::string_view> ignore) {
  constexpr std::string_view kPrefix = "FWDSINK_";
  for (const std::string& entry : environment) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || !entry.starts_with(kPrefix)) continue;
    const std::string name = entry.substr(0, eq);
    const std::string_view value = std::string_view(entry).substr(eq + 1);
    if (std::find(ignore.begin(), ignore.end(), name) != ignore.end()) continue;
    const std::string key = http_rules::ToLower(name.substr(kPrefix.size()));
    // Upper case only (FWDSINK_chunk_bytes is not a key), and empty means unset.
    const SettingInfo* info = FindSetting(key);
    if (!info || EnvironmentVariableForKey(key) != name) {
      if (unknown) unknown->push_back(name);
      continue;
    }
    if (value.empty()) continue;
    // A repeatable key takes one value per line. @ref LLP 0024#environment
    std::size_t start = 0;
    do {
      const auto nl = info->repeatable ? value.find('\n', start) : std::string_view::npos;
      const std::string_view item = value.substr(start, nl - start);
      start = nl == std::string_view::npos ? value.size() + 1 : nl + 1;
      if (info->repeatable && item.empty()) continue;
      if (Status e = Set(key, item, SettingSource::kEnvironment, name); !e.ok()) return e;
    } while (start <= value.size());
  }
  return OkStatus();
}

std::optional<milliseconds> ParseDuration(std::string_view text) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() &&
         ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.')) {
    ++unit_at;
  }
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = text.substr(unit_at);
  if (number.empty() || number.find_first_of("0123456789") == std::string_view::npos) {
    return std::nullopt;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size()) return std::nullopt;
  double scale = 1000;  // seconds by default
  if (unit == "ms")
    scale = 1;
  else if (unit == "m")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else if (!unit.empty() && unit != "s")
    return std::nullopt;
  const double ms = std::round(value * scale);
  // Fail closed on NaN and on values that do not fit. @ref LLP 0022#options
  if (!std::isfinite(ms) || ms < 0 ||
      ms > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2)) {
    return std::nullopt;
  }
  return milliseconds{static_cast<std::int64_t>(ms)};
}

// @ref LLP 0025#metrics
std::optional<std::pair<std::string, int>> ParseListenAddress(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  int port = -1;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return std::nullopt;
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // a bare IPv6 address needs brackets
  }
  return std::pair<std::string, int>(host.empty() ? "0.0.0.0" : std::string(host), port);
}

std::string SizeProblem(std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && std::string_view("kKmMgG").find(digits.back()) != std::string_view::npos) {
    digits.remove_suffix(1);
  }
  const bool all_digits =
      !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
  // Well formed but too big: say so, not "not a byte count". @ref LLP 0023#smaller-findings
  if (all_digits) return "out of range (at most 2^64-1 bytes)";
  return "not a byte count (digits with an optional k/m/g)";
}

std::optional<std::uint64_t> ParseSize(std::string_view text) {
  std::uint64_t shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      default: break;
    }
    if (shift) text.remove_suffix(1);
  }
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (n > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return n << shift;
}

}  // namespace fwdsink
