// SPDX-License-Identifier: Apache-2.0
#include "driver/long_row.h"

#include "fwdsink/chunker.h"

namespace fwdsink::internal {

bool StoppedAtLongRow(const ForwardResult& r) {
  return r.outcome == Outcome::kPartitionError && r.reason == to_string(ChunkerError::kLineTooLong);
}

Result<DeadEntry> SetLongRowAside(Spool& spool, std::string_view name, const ForwardResult& r,
                                  std::uint64_t max_line_bytes,
                                  std::chrono::system_clock::time_point now) {
  // Every row before the long one was acknowledged (the chunker hands them out first),
  // so the cursor is at its first byte; DeadLetterLongRow checks that it is a row start
  // and that the row is indeed over the limit. @ref LLP 0023#row-too-long
  Result<DeadEntry> dead =
      spool.DeadLetterLongRow(name, r.resume_offset, max_line_bytes, kRowTooLong, now);
  if (!dead) return dead;
  // Rows in dead/ first, cursor second: a crash in between sets the row aside again
  // under the same dead name.
  if (Status st = spool.SaveCursor(name, dead->end); !st.ok()) return st;
  return dead;
}

}  // namespace fwdsink::internal
