// SPDX-License-Identifier: Apache-2.0
// A partition's name, as the spool, its writer and its pack manifests accept it from
// outside. @ref LLP 0014#layers
#pragma once

#include <cstddef>
#include <string_view>

#include "fwdsink/status.h"

namespace fwdsink {

// Longest partition name accepted from outside (file names stay well below the
// 255-byte limit even with the dead-letter and requeue suffixes appended).
inline constexpr std::size_t kMaxPartitionNameLength = 200;

// Checks a partition name that came from outside: 1..kMaxPartitionNameLength bytes of
// [A-Za-z0-9._-], not starting with '.'. Returns kInvalidName with a message otherwise.
[[nodiscard]] Status ValidatePartitionName(std::string_view name);

}  // namespace fwdsink
