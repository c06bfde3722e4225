// SPDX-License-Identifier: Apache-2.0
// Spool: ready partitions, the persisted cursor, failure history, delivery; a reader's
// OpenExisting, which creates nothing.
#include "fwdsink/spool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "spool/spool_io.h"
#include "support/dir_events.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using fwdsink::CursorStatus;
using fwdsink::Spool;
using fwdsink::StatusCode;
using fwdsink::test::FileNames;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;

namespace {

constexpr std::string_view kSuite = "spool_test";  // folder under FWDSINK_TEST_TMP
constexpr const char* kPartition = "20261130T102124.123Z-42-00000001";
constexpr const char* kRows = "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n";  // lines end at 8, 16, 24
constexpr std::uint64_t kSecondLineStart = 8;
const std::chrono::system_clock::time_point kT1 =
    std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'498'084'123));
const std::chrono::system_clock::time_point kT2 = kT1 + std::chrono::minutes(7);

Spool OpenWithPartition(const fs::path& dir) {
  auto spool = Spool::Open(dir);
  REQUIRE(spool.ok());
  WriteFile(spool->PartitionPath(kPartition), kRows);
  return std::move(spool).value();
}

}  // namespace

TEST_CASE("Open creates the spool folders and names the path on failure") {
  const fs::path dir = FreshDir(kSuite, "open");
  SUBCASE("creates ready, state, dead and incoming") {
    auto spool = Spool::Open(dir / "spool");
    REQUIRE(spool.ok());
    for (const char* sub : {"ready", "state", "dead", "incoming"}) {
      CHECK(fs::is_directory(dir / "spool" / sub));
    }
  }
  SUBCASE("a file in the way is an error naming the path") {
    WriteFile(dir / "blocker", "x");
    auto spool = Spool::Open(dir / "blocker");
    REQUIRE_FALSE(spool.ok());
    CHECK(spool.status().code() == StatusCode::kIo);
    CHECK(spool.status().message().find((dir / "blocker").string()) != std::string::npos);
  }
}

TEST_CASE("Cursor round trip") {
  const fs::path dir = FreshDir(kSuite, "roundtrip");
  Spool spool = OpenWithPartition(dir);

  SUBCASE("no cursor yet is kMissing at offset 0") {
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kMissing);
    CHECK(c.offset == 0);
    CHECK_FALSE(c.first_failure.has_value());
    CHECK(c.failures == 0);
  }
  SUBCASE("a saved offset reads back, and the latest save wins") {
    REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
    auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kOk);
    CHECK(c.message.empty());
    CHECK(c.offset == kSecondLineStart);

    REQUIRE(spool.SaveCursor(kPartition, 24).ok());  // the end: fully acknowledged
    c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kOk);
    CHECK(c.offset == 24);
  }
  SUBCASE("saving is atomic: the record replaces the old one whole, by a rename") {
    REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
    fwdsink::test::DirEvents state_events(spool.state_dir());
    REQUIRE(state_events.ok());
    REQUIRE(spool.SaveCursor(kPartition, 16).ok());
    const std::string name = std::string(kPartition) + ".cursor";
    // The record's own name is only the target of a rename: never opened for writing,
    // written or truncated in place, so a reader sees the old record or the new one.
    const auto events = state_events.Take();
    CHECK(fwdsink::test::DirEvents::Of(events, name) == std::vector<std::string>{"moved_to"});
    // ... from one temp file, created, written and renamed away.
    CHECK(std::count_if(events.begin(), events.end(), [&](const std::string& e) {
            return e.starts_with("create ") && e != "create " + name;
          }) == 1);
    CHECK(std::count_if(events.begin(), events.end(),
                        [](const std::string& e) { return e.starts_with("moved_from "); }) == 1);
    CHECK(FileNames(spool.state_dir()) == std::vector<std::string>{name});
    const std::string text = ReadFile(spool.state_dir() / (std::string(kPartition) + ".cursor"));
    CHECK(text.rfind("fwdsink-cursor v3 offset=16 ", 0) == 0);
    CHECK(text.back() == '\n');
  }
}

TEST_CASE("A torn or corrupt cursor is reported and resumes from 0") {
  const fs::path dir = FreshDir(kSuite, "corrupt");
  Spool spool = OpenWithPartition(dir);
  REQUIRE(spool.RecordFailure(kPartition, kT1).ok());
  REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
  const fs::path cursor = spool.state_dir() / (std::string(kPartition) + ".cursor");
  const std::string valid = ReadFile(cursor);
  {
    // Twin: the valid record is not flagged.
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kOk);
    CHECK(c.offset == kSecondLineStart);
    CHECK(c.message.empty());
  }
  SUBCASE("truncated") { WriteFile(cursor, valid.substr(0, valid.size() - 5)); }
  SUBCASE("truncated to just before the newline") {
    WriteFile(cursor, valid.substr(0, valid.size() - 1));
  }
  SUBCASE("one flipped byte") {
    std::string flipped = valid;
    const std::size_t at = flipped.find("offset=8") + 7;
    flipped[at] = '9';  // still a digit, still a line start? no matter: crc catches it
    WriteFile(cursor, flipped);
  }
  SUBCASE("garbage") { WriteFile(cursor, "\x01\xff garbage \x7f\n"); }
  SUBCASE("empty") { WriteFile(cursor, ""); }
  SUBCASE("too big to be a cursor") { WriteFile(cursor, std::string(4096, 'x')); }

  const auto c = spool.LoadCursor(kPartition);
  CHECK(c.status == CursorStatus::kCorrupt);
  CHECK(c.offset == 0);
  CHECK_FALSE(c.message.empty());
  CHECK_FALSE(c.first_failure.has_value());
}

TEST_CASE("A checksummed cursor that does not fit the partition resumes from 0") {
  const fs::path dir = FreshDir(kSuite, "misfit");
  Spool spool = OpenWithPartition(dir);
  REQUIRE(spool.RecordFailure(kPartition, kT1).ok());

  SUBCASE("offset beyond the file size") {
    // A record that names its file (v3) and a file now shorter than the cursor: the
    // file was cut below it, and it is neither resumed nor restarted (issue 38).
    // @ref LLP 0020#file-identity
    REQUIRE(spool.SaveCursor(kPartition, 25).ok());
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kChanged);
    CHECK(c.message.find("truncated") != std::string::npos);
    CHECK(c.first_failure == kT1);
  }
  SUBCASE("offset not at a line start") {
    REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart + 1).ok());
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kCorrupt);
    CHECK(c.offset == 0);
    CHECK(c.message.find("line start") != std::string::npos);
  }
  SUBCASE("twin: offset at the very end is fine") {
    REQUIRE(spool.SaveCursor(kPartition, 24).ok());
    CHECK(spool.LoadCursor(kPartition).status == CursorStatus::kOk);
  }
  SUBCASE("the partition is gone: an error, not a restart") {
    fs::remove(spool.PartitionPath(kPartition));
    REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
    CHECK(spool.LoadCursor(kPartition).status == CursorStatus::kError);
  }
}

TEST_CASE("The first failure persists and is never overwritten") {
  const fs::path dir = FreshDir(kSuite, "failures");
  {
    Spool spool = OpenWithPartition(dir);
    REQUIRE(spool.RecordFailure(kPartition, kT1).ok());
    REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());  // progress keeps it
    REQUIRE(spool.RecordFailure(kPartition, kT2).ok());
  }
  auto reopened = Spool::Open(dir);
  REQUIRE(reopened.ok());
  const auto c = reopened->LoadCursor(kPartition);
  CHECK(c.status == CursorStatus::kOk);
  CHECK(c.offset == kSecondLineStart);
  REQUIRE(c.first_failure.has_value());
  CHECK(*c.first_failure == kT1);
  CHECK(c.failures == 2);
}

TEST_CASE("Twin: without a failure there is no failure history") {
  const fs::path dir = FreshDir(kSuite, "no_failures");
  Spool spool = OpenWithPartition(dir);
  REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
  const auto c = spool.LoadCursor(kPartition);
  CHECK(c.status == CursorStatus::kOk);
  CHECK_FALSE(c.first_failure.has_value());
  CHECK(c.failures == 0);
}

TEST_CASE("ClearFailures forgets the failure history and keeps the offset") {
  const fs::path dir = FreshDir(kSuite, "clear_failures");
  Spool spool = OpenWithPartition(dir);
  constexpr const char* kOther = "20261130T102124.124Z-42-00000002";
  WriteFile(spool.PartitionPath(kOther), kRows);
  REQUIRE(spool.RecordFailure(kPartition, kT1).ok());
  REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
  REQUIRE(spool.RecordFailure(kOther, kT1).ok());

  REQUIRE(spool.ClearFailures(kPartition).ok());
  const auto c = spool.LoadCursor(kPartition);
  CHECK(c.status == CursorStatus::kOk);
  CHECK(c.offset == kSecondLineStart);
  CHECK_FALSE(c.first_failure.has_value());
  CHECK(c.failures == 0);
  // Twin: another partition's history is untouched.
  const auto other = spool.LoadCursor(kOther);
  CHECK(other.first_failure == kT1);
  CHECK(other.failures == 1);
  // A failure after clearing starts a new history.
  REQUIRE(spool.RecordFailure(kPartition, kT2).ok());
  CHECK(spool.LoadCursor(kPartition).first_failure == kT2);
}

TEST_CASE("ListReady lists sealed partitions oldest first and ignores the rest") {
  const fs::path dir = FreshDir(kSuite, "list");
  auto spool = Spool::Open(dir);
  REQUIRE(spool.ok());
  const fs::path ready = spool->ready_dir();
  WriteFile(ready / "20261130T100000.000Z-1-00000002.ndjson", "bb\n");
  WriteFile(ready / "20261130T090000.000Z-1-00000001.ndjson", "a\n");
  WriteFile(ready / "20261130T110000.000Z-1-00000003.ndjson", "ccc\n");
  // None of these may be read.
  WriteFile(ready / ".20261130T000000.000Z-1-1.ndjson", "hidden\n");
  WriteFile(ready / "20261130T000000.000Z-1-1.ndjson.tmp", "temp\n");
  WriteFile(ready / "20261130T000000.000Z-1-1.json", "other\n");
  WriteFile(ready / "bad name.ndjson", "space\n");
  WriteFile(ready / ".ndjson", "no name\n");
  fs::create_directories(ready / "adir.ndjson");

  auto list = spool->ListReady();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].name == "20261130T090000.000Z-1-00000001");
  CHECK((*list)[0].size == 2);
  CHECK((*list)[0].path == ready / "20261130T090000.000Z-1-00000001.ndjson");
  CHECK((*list)[1].name == "20261130T100000.000Z-1-00000002");
  CHECK((*list)[1].size == 3);
  CHECK((*list)[2].name == "20261130T110000.000Z-1-00000003");
  CHECK((*list)[2].size == 4);
  // The scan's mtime is the file's (the identity a pack's manifest records).
  const auto state = spool->PartitionState("20261130T100000.000Z-1-00000002");
  REQUIRE(state.ok());
  CHECK((*list)[1].mtime_ns == state->mtime_ns);
  CHECK((*list)[1].mtime_ns > 0);
}

TEST_CASE("CursorNames lists the partitions that have a cursor record, and nothing else") {
  const fs::path dir = FreshDir(kSuite, "cursor_names");
  Spool spool = OpenWithPartition(dir);
  constexpr const char* kOther = "20261130T102124.124Z-42-00000002";
  WriteFile(spool.PartitionPath(kOther), kRows);
  // Twin: no record yet, no name.
  auto none = spool.CursorNames();
  REQUIRE(none.ok());
  CHECK(none->empty());
  REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
  WriteFile(spool.state_dir() / "notes.txt", "x");  // not a cursor
  WriteFile(spool.state_dir() / ".cursor", "x");    // no name
  auto names = spool.CursorNames();
  REQUIRE(names.ok());
  CHECK(*names == std::unordered_set<std::string>{kPartition});
  // A corrupt record is a record too: LoadCursor does not say kMissing for it.
  WriteFile(spool.state_dir() / (std::string(kOther) + ".cursor"), "garbage");
  REQUIRE(spool.CursorNames().ok());
  CHECK(spool.CursorNames()->contains(kOther));
  CHECK(spool.LoadCursor(kOther).status != CursorStatus::kMissing);
  // A state/ that cannot be listed is an error that names it.
  fs::remove_all(spool.state_dir());
  WriteFile(spool.state_dir(), "a file");
  const auto broken = spool.CursorNames();
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.status().message().find("state") != std::string::npos);
}

TEST_CASE("MarkDelivered removes the partition and its cursor only") {
  const fs::path dir = FreshDir(kSuite, "delivered");
  Spool spool = OpenWithPartition(dir);
  constexpr const char* kOther = "20261130T102124.124Z-42-00000002";
  WriteFile(spool.PartitionPath(kOther), kRows);
  REQUIRE(spool.SaveCursor(kPartition, 24).ok());
  REQUIRE(spool.SaveCursor(kOther, kSecondLineStart).ok());

  REQUIRE(spool.MarkDelivered(kPartition).ok());
  CHECK_FALSE(fs::exists(spool.PartitionPath(kPartition)));
  CHECK(spool.LoadCursor(kPartition).status == CursorStatus::kMissing);
  // Twin: the other partition and its cursor stay.
  CHECK(fs::exists(spool.PartitionPath(kOther)));
  CHECK(spool.LoadCursor(kOther).offset == kSecondLineStart);

  CHECK(spool.MarkDelivered(kPartition).code() == StatusCode::kNotFound);
}

TEST_CASE("Invalid partition names are rejected") {
  const fs::path dir = FreshDir(kSuite, "names");
  auto spool = Spool::Open(dir);
  REQUIRE(spool.ok());
  for (const std::string& bad :
       {std::string(""), std::string(".hidden"), std::string(".."), std::string("a/b"),
        std::string("../escape"), std::string("sp ace"), std::string("nul\0x", 5),
        std::string("\xc3\xa9t\xc3\xa9"), std::string(201, 'a')}) {
    CAPTURE(bad);
    CHECK(fwdsink::ValidatePartitionName(bad).code() == StatusCode::kInvalidName);
    CHECK(spool->SaveCursor(bad, 0).code() == StatusCode::kInvalidName);
    CHECK(spool->RecordFailure(bad, kT1).code() == StatusCode::kInvalidName);
    CHECK(spool->MarkDelivered(bad).code() == StatusCode::kInvalidName);
    CHECK(spool->LoadCursor(bad).status == CursorStatus::kError);
  }
  CHECK_FALSE(fs::exists(dir / "escape.cursor"));
  // Twin: ordinary names pass.
  for (const std::string& good :
       {std::string(kPartition), std::string("a"), std::string("x.y_z-1"), std::string(200, 'a')}) {
    CAPTURE(good);
    CHECK(fwdsink::ValidatePartitionName(good).ok());
  }
}

// A cursor record names the file it belongs to (v3): a partition replaced, rewritten in
// place or cut below its cursor while the daemon was down is neither resumed (rows past
// the cursor would never go) nor restarted (rows before it would go twice). The twins:
// rows appended are the same file, and a v2 record without an identity resumes as
// before. @ref LLP 0020#file-identity
TEST_CASE("A cursor of another file under the same name is not resumed") {
  const fs::path dir = FreshDir(kSuite, "identity");
  Spool spool = OpenWithPartition(dir);
  REQUIRE(spool.SaveCursor(kPartition, kSecondLineStart).ok());
  const fs::path path = spool.PartitionPath(kPartition);
  REQUIRE(spool.LoadCursor(kPartition).status == CursorStatus::kOk);

  SUBCASE("replaced by another file of the same name and size") {
    const fs::path other = dir / "other.ndjson";
    WriteFile(other, "{\"b\":1}\n{\"b\":2}\n{\"b\":3}\n");
    fs::rename(other, path);  // a new inode under the old name
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kChanged);
    CHECK(c.message.find("replaced") != std::string::npos);
  }
  SUBCASE("rewritten in place, same size") {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(6);
    f << '9';  // {"a":9} in the first row: same inode, same size
    f.close();
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kChanged);
    CHECK(c.message.find("rewritten") != std::string::npos);
  }
  SUBCASE("cut below its cursor") {
    fs::resize_file(path, 4);
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kChanged);
    CHECK(c.message.find("truncated") != std::string::npos);
  }
  SUBCASE("twin: rows appended are the same file, resumed at the cursor") {
    std::ofstream(path, std::ios::app | std::ios::binary) << "{\"a\":4}\n";
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kOk);
    CHECK(c.offset == kSecondLineStart);
  }
  SUBCASE("twin: a v2 record (no identity) of a replaced file resumes as before") {
    const fs::path cursor = spool.state_dir() / (std::string(kPartition) + ".cursor");
    const std::string body = "fwdsink-cursor v2 offset=8 first_failure_ms=- failures=0 ranges=-";
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", static_cast<unsigned>(fwdsink::spool_io::Crc32(body)));
    WriteFile(cursor, body + " crc=" + crc + "\n");
    const fs::path other = dir / "other.ndjson";
    WriteFile(other, "{\"b\":1}\n{\"b\":2}\n{\"b\":3}\n");
    fs::rename(other, path);
    const auto c = spool.LoadCursor(kPartition);
    CHECK(c.status == CursorStatus::kOk);
    CHECK(c.offset == kSecondLineStart);
    CHECK_FALSE(c.identity.has_value());
  }
}

// ---- README "fwdsink status ... writes nothing": the reader's open creates nothing.

TEST_CASE("SpoolOpenExistingCreatesNothingAndNamesTheMissingFolder") {
  const auto dir = FreshDir(kSuite, "open_existing");
  SUBCASE("no spool at all: kNotFound, and no folder made") {
    const auto s = fwdsink::Spool::OpenExisting(dir / "spool");
    CHECK(s.status().code() == fwdsink::StatusCode::kNotFound);
    CHECK(s.status().message() == "no spool folder " + (dir / "spool").string());
    CHECK_FALSE(std::filesystem::exists(dir / "spool"));
  }
  SUBCASE("dead/ missing: kNotFound naming it, nothing made") {
    for (const char* sub : {"ready", "state"}) std::filesystem::create_directories(dir / sub);
    const auto s = fwdsink::Spool::OpenExisting(dir);
    CHECK(s.status().code() == fwdsink::StatusCode::kNotFound);
    CHECK(s.status().message() == "no spool folder " + (dir / "dead").string());
    CHECK(FileNames(dir) == std::vector<std::string>{"ready", "state"});
  }
  SUBCASE("twin: ready/, state/ and dead/ there, incoming/ not: opened, still not made") {
    for (const char* sub : {"ready", "state", "dead"})
      std::filesystem::create_directories(dir / sub);
    const auto s = fwdsink::Spool::OpenExisting(dir);
    REQUIRE(s.ok());
    CHECK(s->ListReady().ok());
    CHECK(FileNames(dir) == std::vector<std::string>{"dead", "ready", "state"});
    // Spool::Open, by contrast, makes what is missing.
    REQUIRE(fwdsink::Spool::Open(dir).ok());
    CHECK(FileNames(dir) == std::vector<std::string>{"dead", "incoming", "ready", "state"});
  }
}
