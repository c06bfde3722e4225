// SPDX-License-Identifier: Apache-2.0
// Private to the driver: a row longer than the line limit is set aside alone, and the
// partition goes on after it. @ref LLP 0023#row-too-long
#pragma once

#include <chrono>
#include <cstdint>

#include "fwdsink/dead_letters.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/spool.h"

namespace fwdsink::internal {

// The reason a row too long to send is dead-lettered under.
inline constexpr std::string_view kRowTooLong = "row_too_long";

// Returns whether `r` ended its partition at a row over the line limit.
[[nodiscard]] bool StoppedAtLongRow(const ForwardResult& r);

// Moves the row at r.resume_offset of partition `name` (over `max_line_bytes`) into
// dead/ alone (reason row_too_long) and saves the cursor just past it, so that the next
// ForwardPartition sends the rows after it. Returns the dead letter, or the error that
// kept it (then nothing moved: the caller handles the partition as torn).
[[nodiscard]] Result<DeadEntry> SetLongRowAside(Spool& spool, std::string_view name,
                                                const ForwardResult& r,
                                                std::uint64_t max_line_bytes,
                                                std::chrono::system_clock::time_point now);

}  // namespace fwdsink::internal
