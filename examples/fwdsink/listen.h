// SPDX-License-Identifier: Apache-2.0
// Parsing --metrics-listen: the library's ParseListenAddress (the settings table checks
// the key with it), named as the daemon's metrics server uses it. @ref LLP 0025#metrics
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fwdsink/settings.h"

namespace fwdsink_cli {

// "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces); port 0 picks a free one.
[[nodiscard]] inline std::optional<std::pair<std::string, int>> ParseListen(std::string_view text) {
  return fwdsink::ParseListenAddress(text);
}

}  // namespace fwdsink_cli
