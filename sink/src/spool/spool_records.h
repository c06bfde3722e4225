// SPDX-License-Identifier: Apache-2.0
// The spool's on-disk record readers, reachable from tests and fuzz targets
// (tests/fuzz/, LLP 0023#fuzzing). Internal to the sink (not installed). Pure: no I/O.
#pragma once

#include <string_view>

#include "fwdsink/dead_letters.h"
#include "fwdsink/spool.h"
#include "fwdsink/status.h"

namespace fwdsink::internal {

// Parses one cursor record ("fwdsink-cursor v1 offset=... crc=...\n"). kCorrupt saying
// why, `out` untouched, on anything else. @ref LLP 0020#cursor-format
[[nodiscard]] Status ParseCursorRecord(std::string_view text, CursorState& out);

// Parses one dead-letter record (dead/<name>.json). kCorrupt saying why otherwise.
[[nodiscard]] Status ParseDeadRecord(std::string_view text, DeadEntry& out);

}  // namespace fwdsink::internal
