// SPDX-License-Identifier: Apache-2.0
// Private to the driver: which ready partitions go together in a pack. A pure choice over
// the ready list, oldest first; the sending is packs.cc's. @ref LLP 0027#choice
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fwdsink/spool.h"

namespace fwdsink::internal {

// One request's worth of the ready list: a pack of several small partitions, or one
// partition sent alone (as ForwardPartition sends it).
struct PackItem {
  std::vector<std::size_t> members;  // indices into the ready list, in its order
  bool pack = false;                 // several members in one request
  // A run of small partitions closed by the list's end, not by a limit: more may join
  // it later (pack_linger may hold it back).
  bool open = false;
};

struct PackLimits {
  std::uint64_t max_bytes = 0;       // a pack's rows at most (chunk_bytes)
  std::size_t max_header_bytes = 0;  // an Idempotency-Members field line at most
  std::size_t max_header_lines = 1;  // ... and that many lines at most
};

// Splits `ready` (oldest first) into items in order: consecutive partitions for which
// `packable` is true go together while their bytes fit max_bytes and their member keys
// fit max_header_lines field lines of max_header_bytes (split as MembersHeaderLines
// splits them); every other partition is an item alone. A run of one is alone.
[[nodiscard]] std::vector<PackItem> ChoosePacks(const std::vector<ReadyPartition>& ready,
                                                const std::vector<bool>& packable,
                                                const PackLimits& limits);

}  // namespace fwdsink::internal
