// SPDX-License-Identifier: Apache-2.0
// The v2 cursor record: the journal of ranges in flight, saved and loaded with the
// cursor; v1 records still load; a torn or invalid journal is a corrupt cursor.
// @ref LLP 0020#cursor-v2
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fwdsink/spool.h"
#include "spool/spool_io.h"
#include "spool/spool_records.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using fwdsink::CursorRange;
using fwdsink::CursorStatus;
using fwdsink::Spool;
using fwdsink::StatusCode;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;
using Ranges = std::vector<CursorRange>;

namespace {

constexpr std::string_view kSuite = "spool_journal_test";
constexpr const char* kName = "p";
// Ten lines of 8 bytes: lines start at 0, 8, 16, ..., 72; the file ends at 80.
const std::string kRows = [] {
  std::string s;
  for (int i = 0; i < 10; ++i) s += "{\"a\":" + std::to_string(i) + "}\n";
  return s;
}();
const std::chrono::system_clock::time_point kT1 =
    std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'498'084'123));

CursorRange Owed(std::uint64_t b, std::uint64_t e) { return {.begin = b, .end = e}; }
CursorRange Acked(std::uint64_t b, std::uint64_t e) {
  return {.begin = b, .end = e, .acked = true};
}

Spool OpenWithPartition(std::string_view tag) {
  auto spool = Spool::Open(FreshDir(kSuite, tag));
  REQUIRE(spool.ok());
  REQUIRE(WriteFile(spool->PartitionPath(kName), kRows));
  return std::move(spool).value();
}

fs::path CursorFile(const Spool& spool) { return spool.state_dir() / "p.cursor"; }

// A record body with its checksum, written by hand (not by the code under test).
std::string Sealed(const std::string& body) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", static_cast<unsigned>(fwdsink::spool_io::Crc32(body)));
  return body + " crc=" + crc + "\n";
}

}  // namespace

TEST_CASE("A v3 record round-trips the offset, the journal, the failure history and the file") {
  Spool spool = OpenWithPartition("roundtrip");
  REQUIRE(spool.RecordFailure(kName, kT1).ok());
  const Ranges journal{Owed(16, 24), Acked(24, 40), Owed(40, 48), Owed(48, 80)};
  REQUIRE(spool.SaveCursor(kName, 16, journal).ok());
  const std::string text = ReadFile(CursorFile(spool));
  CHECK(text.rfind("fwdsink-cursor v3 offset=16 first_failure_ms=1764498084123 failures=1 "
                   "ranges=16-24:f,24-40:a,40-48:f,48-80:f file=",
                   0) == 0);
  auto c = spool.LoadCursor(kName);
  CHECK(c.status == CursorStatus::kOk);
  CHECK(c.offset == 16);
  CHECK(c.ranges == journal);
  CHECK(c.first_failure == kT1);
  CHECK(c.failures == 1);
  SUBCASE("RecordFailure and ClearFailures keep the journal") {
    REQUIRE(spool.RecordFailure(kName, kT1 + std::chrono::minutes(1)).ok());
    c = spool.LoadCursor(kName);
    CHECK(c.failures == 2);
    CHECK(c.offset == 16);
    CHECK(c.ranges == journal);
    REQUIRE(spool.ClearFailures(kName).ok());
    c = spool.LoadCursor(kName);
    CHECK(c.failures == 0);
    CHECK(c.ranges == journal);
  }
  SUBCASE("twin: a save without ranges empties the journal, keeping the failures") {
    REQUIRE(spool.SaveCursor(kName, 80).ok());
    c = spool.LoadCursor(kName);
    CHECK(c.status == CursorStatus::kOk);
    CHECK(c.offset == 80);
    CHECK(c.ranges.empty());
    CHECK(c.failures == 1);
    CHECK(ReadFile(CursorFile(spool)).find(" ranges=- file=") != std::string::npos);
  }
}

TEST_CASE("A v1 cursor still loads, with no journal") {
  Spool spool = OpenWithPartition("v1");
  WriteFile(CursorFile(spool),
            Sealed("fwdsink-cursor v1 offset=24 first_failure_ms=1764498084123 failures=3"));
  auto c = spool.LoadCursor(kName);
  CHECK(c.status == CursorStatus::kOk);
  CHECK(c.offset == 24);
  CHECK(c.ranges.empty());
  CHECK(c.failures == 3);
  CHECK(c.first_failure == kT1);
  // Saving on top of it writes v2, keeping the history.
  REQUIRE(spool.SaveCursor(kName, 32, Ranges{Owed(32, 40)}).ok());
  c = spool.LoadCursor(kName);
  CHECK(c.status == CursorStatus::kOk);
  CHECK(c.failures == 3);
  CHECK(c.ranges == Ranges{Owed(32, 40)});
  SUBCASE("twin: a v1 record with a journal field is not a v1 record") {
    WriteFile(CursorFile(spool),
              Sealed("fwdsink-cursor v1 offset=24 first_failure_ms=- failures=0 ranges=-"));
    CHECK(spool.LoadCursor(kName).status == CursorStatus::kCorrupt);
  }
}

TEST_CASE("A torn or invalid v2 record is a corrupt cursor: offset 0, no journal") {
  Spool spool = OpenWithPartition("corrupt");
  REQUIRE(spool.SaveCursor(kName, 16, Ranges{Owed(16, 24), Acked(24, 32), Owed(32, 40)}).ok());
  const std::string valid = ReadFile(CursorFile(spool));
  const std::string head = "fwdsink-cursor v2 offset=16 first_failure_ms=- failures=0 ";
  bool history_kept = false;  // the checksum held: the failure history is genuine
  SUBCASE("torn: cut inside the journal") {
    WriteFile(CursorFile(spool), valid.substr(0, valid.find(",32-40")));
  }
  SUBCASE("torn: cut before the final newline") {
    WriteFile(CursorFile(spool), valid.substr(0, valid.size() - 1));
  }
  SUBCASE("a flipped byte in the journal (bad checksum)") {
    std::string flipped = valid;
    flipped[flipped.find("24-32:a") + 6] = 'f';
    WriteFile(CursorFile(spool), flipped);
  }
  SUBCASE("unsorted") { WriteFile(CursorFile(spool), Sealed(head + "ranges=24-32:f,16-24:f")); }
  SUBCASE("overlapping") { WriteFile(CursorFile(spool), Sealed(head + "ranges=16-32:f,24-40:f")); }
  SUBCASE("a range before the offset") {
    WriteFile(CursorFile(spool), Sealed(head + "ranges=8-24:f"));
  }
  SUBCASE("a gap between the offset and the first range") {
    WriteFile(CursorFile(spool), Sealed(head + "ranges=24-32:f"));
  }
  SUBCASE("a gap between two ranges") {
    WriteFile(CursorFile(spool), Sealed(head + "ranges=16-24:f,32-40:a"));
  }
  SUBCASE("an empty range") { WriteFile(CursorFile(spool), Sealed(head + "ranges=16-16:f")); }
  SUBCASE("garbage in the journal") {
    WriteFile(CursorFile(spool), Sealed(head + "ranges=16-24:x"));
  }
  SUBCASE("no journal field") {
    WriteFile(CursorFile(spool),
              Sealed("fwdsink-cursor v2 offset=16 first_failure_ms=- failures=0"));
  }
  SUBCASE("a range past the file's size") {
    REQUIRE(spool.RecordFailure(kName, kT1).ok());
    WriteFile(CursorFile(spool),
              Sealed("fwdsink-cursor v2 offset=16 first_failure_ms=1764498084123 failures=1 "
                     "ranges=16-24:f,24-88:f"));
    history_kept = true;
    CHECK(spool.LoadCursor(kName).message.find("beyond the partition size") != std::string::npos);
  }
  SUBCASE("a range that does not end at a line start") {
    WriteFile(CursorFile(spool),
              Sealed("fwdsink-cursor v2 offset=16 first_failure_ms=1764498084123 failures=1 "
                     "ranges=16-20:f,20-24:f"));
    history_kept = true;
  }
  const auto c = spool.LoadCursor(kName);
  CHECK(c.status == CursorStatus::kCorrupt);
  CHECK(c.offset == 0);
  CHECK(c.ranges.empty());
  CHECK_FALSE(c.message.empty());
  CHECK(c.first_failure.has_value() == history_kept);
}

TEST_CASE("A journal that fits the partition loads") {
  Spool spool = OpenWithPartition("fits");
  const std::string head = "fwdsink-cursor v2 offset=16 first_failure_ms=- failures=0 ";
  SUBCASE("to the file's very end") {
    WriteFile(CursorFile(spool), Sealed(head + "ranges=16-24:f,24-80:a"));
    CHECK(spool.LoadCursor(kName).ranges == Ranges{Owed(16, 24), Acked(24, 80)});
  }
  SUBCASE("to the end of a file whose last line has no newline") {
    WriteFile(spool.PartitionPath(kName), kRows + "{\"a\":10}");
    WriteFile(CursorFile(spool), Sealed(head + "ranges=16-88:f"));
    CHECK(spool.LoadCursor(kName).ranges == Ranges{Owed(16, 88)});
  }
  SUBCASE("adjacent acknowledged ranges (not merged) are fine") {
    WriteFile(CursorFile(spool), Sealed(head + "ranges=16-24:a,24-32:a,32-40:f"));
    CHECK(spool.LoadCursor(kName).status == CursorStatus::kOk);
  }
  CHECK(spool.LoadCursor(kName).status == CursorStatus::kOk);
}

TEST_CASE("SaveCursor refuses a journal that LoadCursor would call corrupt") {
  Spool spool = OpenWithPartition("refuse");
  REQUIRE(spool.SaveCursor(kName, 8, Ranges{Owed(8, 16)}).ok());
  const std::string before = ReadFile(CursorFile(spool));
  fwdsink::Status st;
  SUBCASE("a gap") { st = spool.SaveCursor(kName, 8, Ranges{Owed(16, 24)}); }
  SUBCASE("overlap") { st = spool.SaveCursor(kName, 8, Ranges{Owed(8, 24), Owed(16, 32)}); }
  SUBCASE("before the offset") { st = spool.SaveCursor(kName, 16, Ranges{Owed(8, 24)}); }
  SUBCASE("too many ranges") {
    Ranges many;
    for (std::uint64_t b = 8; many.size() <= fwdsink::internal::kMaxJournalRanges; ++b) {
      many.push_back(Owed(b, b + 1));
    }
    st = spool.SaveCursor(kName, 8, many);
  }
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("journal") != std::string::npos);
  CHECK(ReadFile(CursorFile(spool)) == before);  // nothing written
}

TEST_CASE("The largest journal fits the record's size limit") {
  fwdsink::CursorState s;
  s.offset = UINT64_MAX - 2 * fwdsink::internal::kMaxJournalRanges;
  s.first_failure = kT1;
  s.failures = UINT32_MAX;
  for (std::uint64_t b = s.offset; s.ranges.size() < fwdsink::internal::kMaxJournalRanges; b += 2) {
    s.ranges.push_back(Owed(b, b + 2));
  }
  const std::string text = fwdsink::internal::FormatCursorRecord(s);
  CHECK(text.size() <= fwdsink::internal::kMaxCursorFileBytes);
  fwdsink::CursorState back;
  REQUIRE(fwdsink::internal::ParseCursorRecord(text, back).ok());
  CHECK(back.ranges == s.ranges);
}
