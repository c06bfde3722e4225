// Parsing --metrics-listen: header-only, so the option parser (and its fuzz target)
// need not link the metrics server. @ref LLP 0025#metrics
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fwdsink_cli {

// Parses --metrics-listen: "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces); port
// 0 picks a free one. Returns nullopt for anything else.
[[nodiscard]] inline std::optional<std::pair<std::string, int>> ParseListen(std::string_view text) {
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

}  // namespace fwdsink_cli
