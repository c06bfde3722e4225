// SPDX-License-Identifier: Apache-2.0
// The records of the spool parsed back (spool/spool_records.h): the cursor record and the
// dead-letter record, with their times converted by spool_io::FromUnixMs, where a time past
// the clock's range saturates instead of overflowing. The v2 cursor's journal is in
// spool_journal_test.cc. @ref LLP 0020#cursor-v2
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "spool/spool_io.h"
#include "spool/spool_records.h"

// Regressions found by the fuzz targets (tests/fuzz/, LLP 0023#fuzzing).
TEST_CASE("FuzzRegression: a cursor or dead-letter time past the clock's range saturates") {
  // cursor_record: first_failure_ms=INT64_MAX overflowed converting to nanoseconds (UB;
  // a plain build wrapped it to 1969, which would make the horizon fire at once).
  const std::string body =
      "fwdsink-cursor v1 offset=5 first_failure_ms=9223372036854775807 failures=1";
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", static_cast<unsigned>(fwdsink::spool_io::Crc32(body)));
  fwdsink::CursorState state;
  REQUIRE(fwdsink::internal::ParseCursorRecord(body + " crc=" + crc + "\n", state).ok());
  REQUIRE(state.first_failure.has_value());
  const auto year_2200 = std::chrono::system_clock::time_point(std::chrono::hours(24 * 365 * 230));
  CHECK(*state.first_failure > year_2200);
  // Twin: an ordinary time is kept exactly.
  CHECK(fwdsink::spool_io::FromUnixMs(1'780'000'000'123) ==
        std::chrono::system_clock::time_point(std::chrono::milliseconds(1'780'000'000'123)));
  CHECK(fwdsink::spool_io::FromUnixMs(INT64_MIN) < std::chrono::system_clock::time_point{});

  // dead_record: the same conversion for dead_at_ms.
  fwdsink::DeadEntry entry;
  REQUIRE(fwdsink::internal::ParseDeadRecord(
              R"({"partition":"p","begin":0,"end":1,"rows":1,"status":400,"reason":"r",)"
              R"("kind":"poison","dead_at_ms":-9223372036854775807,"data_offset":0})",
              entry)
              .ok());
  CHECK(entry.dead_at < std::chrono::system_clock::time_point{});
}
