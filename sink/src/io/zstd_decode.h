// SPDX-License-Identifier: Apache-2.0
// Bounded zstd decoding: private to the library, its tests and tools (not installed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "fwdsink/status.h"

namespace fwdsink {

// Decodes one or more concatenated zstd frames from `in`, never producing more than
// `max_out` bytes: input that would inflate past it fails instead (a frame that
// declares a larger size is refused before any allocation). Returns kCorrupt with a
// sentence on a corrupt, truncated or oversize input. Thread-safe (no shared state).
[[nodiscard]] Result<std::string> DecodeZstd(std::string_view in, std::size_t max_out);

}  // namespace fwdsink
