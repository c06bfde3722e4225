// SPDX-License-Identifier: Apache-2.0
// Dead letters: writing poison chunks and horizon partitions, listing with filters,
// search and paging, requeue and purge.
#include "fwdsink/dead_letters.h"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fwdsink/spool.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fwdsink::CursorStatus;
using fwdsink::DeadEntry;
using fwdsink::DeadFilter;
using fwdsink::DeadKind;
using fwdsink::Spool;
using fwdsink::StatusCode;
using fwdsink::test::FileNames;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;

namespace {

constexpr std::string_view kSuite = "dead_letters_test";  // folder under FWDSINK_TEST_TMP
constexpr const char* kPartA = "20261130T090000.000Z-7-00000001";
constexpr const char* kPartB = "20261130T091500.000Z-7-00000002";
constexpr std::string_view kRows =
    "{\"n\":1,\"tag\":\"alpha\"}\n{\"n\":2,\"tag\":\"bravo\"}\n{\"n\":3,\"tag\":\"charlie\"}\n";
constexpr std::uint64_t kRow2Begin = 22;  // each of the first two rows is 22 bytes
constexpr std::uint64_t kRow3Begin = 44;
// 2026-11-30T09:46:40.250Z
const std::chrono::system_clock::time_point kNow =
    std::chrono::system_clock::time_point(std::chrono::milliseconds(1'796'032'000'250));

Spool OpenSpool(const fs::path& dir) {
  auto spool = Spool::Open(dir);
  REQUIRE(spool.ok());
  WriteFile(spool->PartitionPath(kPartA), kRows);
  WriteFile(spool->PartitionPath(kPartB), kRows);
  return std::move(spool).value();
}

std::string_view Slice(std::uint64_t begin, std::uint64_t end) {
  return kRows.substr(begin, end - begin);
}

std::vector<std::string> Names(const fwdsink::DeadList& list) {
  std::vector<std::string> names;
  for (const DeadEntry& e : list.entries) names.push_back(e.name);
  return names;
}

// Three dead letters of different reason, status, kind and age:
//   A.0-22    poison  400 "bad_json"       dead 3 h ago   rows: alpha
//   A.22-44   poison  422 "schema_mismatch" dead 1 h ago  rows: bravo
//   B.22-68   horizon 503 "horizon"        dead 10 min ago rows: bravo, charlie
void MakeThree(Spool& spool) {
  REQUIRE(
      spool.DeadLetterChunk(kPartA, 0, kRow2Begin, Slice(0, kRow2Begin), 400, "bad_json", kNow - 3h)
          .ok());
  REQUIRE(spool
              .DeadLetterChunk(kPartA, kRow2Begin, kRow3Begin, Slice(kRow2Begin, kRow3Begin), 422,
                               "schema_mismatch", kNow - 1h)
              .ok());
  REQUIRE(spool.DeadLetterPartition(kPartB, kRow2Begin, "horizon", 503, kNow - 10min).ok());
}

const std::string kDeadA0 = std::string(kPartA) + ".0-22";
const std::string kDeadA1 = std::string(kPartA) + ".22-44";
const std::string kDeadB = std::string(kPartB) + ".22-68";

}  // namespace

TEST_CASE("DeadLetterChunk writes the rows and a record, atomically") {
  const fs::path dir = FreshDir(kSuite, "chunk");
  Spool spool = OpenSpool(dir);
  auto e = spool.DeadLetterChunk(kPartA, kRow2Begin, kRow3Begin, Slice(kRow2Begin, kRow3Begin), 422,
                                 "schema_mismatch", kNow);
  REQUIRE(e.ok());
  CHECK(e->name == kDeadA1);
  CHECK(FileNames(spool.dead_dir()) ==
        std::vector<std::string>{kDeadA1 + ".json", kDeadA1 + ".ndjson"});
  CHECK(ReadFile(e->rows_path) == Slice(kRow2Begin, kRow3Begin));

  const auto j = nlohmann::json::parse(ReadFile(e->record_path));
  CHECK(j.at("partition") == kPartA);
  CHECK(j.at("begin") == kRow2Begin);
  CHECK(j.at("end") == kRow3Begin);
  CHECK(j.at("rows") == 1);
  CHECK(j.at("status") == 422);
  CHECK(j.at("reason") == "schema_mismatch");
  CHECK(j.at("kind") == "poison");
  CHECK(j.at("dead_at") == "2026-11-30T09:46:40.250Z");
  CHECK(j.at("dead_at_ms") == 1'796'032'000'250);
  // The partition itself is untouched: the caller moves past the chunk.
  CHECK(ReadFile(spool.PartitionPath(kPartA)) == kRows);

  SUBCASE("a body that does not match the range is refused") {
    CHECK(spool.DeadLetterChunk(kPartA, 0, 10, "short", 400, "x", kNow).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(spool.DeadLetterChunk(kPartA, 10, 10, "", 400, "x", kNow).status().code() ==
          StatusCode::kInvalidArgument);
  }
}

TEST_CASE("DeadLetterPartition moves the partition and drops its cursor") {
  const fs::path dir = FreshDir(kSuite, "partition");
  Spool spool = OpenSpool(dir);
  REQUIRE(spool.SaveCursor(kPartB, kRow2Begin).ok());
  REQUIRE(spool.RecordFailure(kPartB, kNow - 2h).ok());

  auto e = spool.DeadLetterPartition(kPartB, kRow2Begin, "horizon", 503, kNow);
  REQUIRE(e.ok());
  CHECK(e->name == kDeadB);
  CHECK(e->kind == DeadKind::kHorizon);
  CHECK(e->rows == 2);
  CHECK(e->data_offset == kRow2Begin);
  CHECK_FALSE(fs::exists(spool.PartitionPath(kPartB)));
  CHECK(spool.LoadCursor(kPartB).status == CursorStatus::kMissing);
  CHECK(ReadFile(e->rows_path) == kRows);  // the whole file moved
  const auto j = nlohmann::json::parse(ReadFile(e->record_path));
  CHECK(j.at("kind") == "horizon");
  CHECK(j.at("begin") == kRow2Begin);
  CHECK(j.at("end") == kRows.size());
  // Twin: the other partition is still ready.
  auto ready = spool.ListReady();
  REQUIRE(ready.ok());
  REQUIRE(ready->size() == 1);
  CHECK(ready->at(0).name == kPartA);

  SUBCASE("a missing partition or an offset past its end is an error") {
    CHECK(spool.DeadLetterPartition(kPartB, 0, "h", 503, kNow).status().code() ==
          StatusCode::kNotFound);
    CHECK(spool.DeadLetterPartition(kPartA, kRows.size() + 1, "h", 503, kNow).status().code() ==
          StatusCode::kInvalidArgument);
  }
}

TEST_CASE("ListDead filters: each one matches and excludes") {
  const fs::path dir = FreshDir(kSuite, "filters");
  Spool spool = OpenSpool(dir);
  MakeThree(spool);
  DeadFilter f;
  std::vector<std::string> want;

  SUBCASE("no filter lists all, oldest first") { want = {kDeadA0, kDeadA1, kDeadB}; }
  SUBCASE("reason, exact") {
    f.reason = "schema_mismatch";
    want = {kDeadA1};
  }
  SUBCASE("reason is not a prefix match") {
    f.reason = "schema";
    want = {};
  }
  SUBCASE("status") {
    f.status = 400;
    want = {kDeadA0};
  }
  SUBCASE("status that nobody has") {
    f.status = 500;
    want = {};
  }
  SUBCASE("kind horizon") {
    f.kind = DeadKind::kHorizon;
    want = {kDeadB};
  }
  SUBCASE("kind poison") {
    f.kind = DeadKind::kPoison;
    want = {kDeadA0, kDeadA1};
  }
  SUBCASE("older than 30 minutes") {
    f.older_than = 30min;
    want = {kDeadA0, kDeadA1};
  }
  SUBCASE("newer than 2 hours") {
    f.newer_than = 2h;
    want = {kDeadA1, kDeadB};
  }
  SUBCASE("an age window") {
    f.older_than = 30min;
    f.newer_than = 2h;
    want = {kDeadA1};
  }
  SUBCASE("filters combine with AND") {
    f.kind = DeadKind::kPoison;
    f.status = 503;
    want = {};
  }
  auto list = spool.ListDead(f, kNow);
  REQUIRE(list.ok());
  CHECK(Names(list.value()) == want);
  CHECK(list->total == want.size());
  CHECK(list->unreadable.empty());
}

TEST_CASE("ListDead search looks in the record and in the dead rows only") {
  const fs::path dir = FreshDir(kSuite, "search");
  Spool spool = OpenSpool(dir);
  MakeThree(spool);
  DeadFilter f;
  std::vector<std::string> want;

  SUBCASE("a row value") {
    f.search = "bravo";
    want = {kDeadA1, kDeadB};
  }
  SUBCASE("a row only in the horizon's tail") {
    f.search = "charlie";
    want = {kDeadB};
  }
  SUBCASE("twin: rows before a horizon's offset are not its dead rows") {
    f.search = "alpha";
    want = {kDeadA0};
  }
  SUBCASE("a record field") {
    f.search = "schema_mis";
    want = {kDeadA1};
  }
  SUBCASE("nothing has it") {
    f.search = "zulu";
    want = {};
  }
  auto list = spool.ListDead(f, kNow);
  REQUIRE(list.ok());
  CHECK(Names(list.value()) == want);
}

TEST_CASE("ListDead search finds a match across read blocks") {
  const fs::path dir = FreshDir(kSuite, "search_blocks");
  Spool spool = OpenSpool(dir);
  // A row long enough that the needle straddles the 64 KiB read boundary.
  std::string row(64 * 1024 - 3, 'x');
  row += "needle";
  row += "\n";
  REQUIRE(spool.DeadLetterChunk(kPartA, 0, row.size(), row, 400, "big", kNow).ok());
  DeadFilter f;
  f.search = "needle";
  CHECK(spool.ListDead(f, kNow)->total == 1);
  f.search = "needlf";
  CHECK(spool.ListDead(f, kNow)->total == 0);
}

TEST_CASE("ListDead pages in a stable oldest-first order") {
  const fs::path dir = FreshDir(kSuite, "paging");
  Spool spool = OpenSpool(dir);
  std::vector<std::string> all;
  // Written newest first, so the order must come from dead_at, not from creation.
  for (int i = 4; i >= 0; --i) {
    const auto begin = static_cast<std::uint64_t>(i);
    REQUIRE(spool
                .DeadLetterChunk(kPartA, begin, begin + 1, kRows.substr(begin, 1), 400, "p",
                                 kNow - std::chrono::minutes(10 * (5 - i)))
                .ok());
  }
  for (int i = 0; i < 5; ++i)
    all.push_back(std::string(kPartA) + "." + std::to_string(i) + "-" + std::to_string(i + 1));
  DeadFilter f;
  f.limit = 2;
  std::vector<std::string> paged;
  for (std::size_t offset = 0; offset < 6; offset += 2) {
    f.offset = offset;
    auto page = spool.ListDead(f, kNow);
    REQUIRE(page.ok());
    CHECK(page->total == 5);
    CHECK(page->entries.size() == (offset < 4 ? 2u : offset == 4 ? 1u : 0u));
    for (const auto& e : page->entries) paged.push_back(e.name);
  }
  CHECK(paged == all);
  f.offset = 99;
  CHECK(spool.ListDead(f, kNow)->entries.empty());
}

TEST_CASE("Requeue makes a ready partition with the same bytes and keeps the audit record") {
  const fs::path dir = FreshDir(kSuite, "requeue");
  Spool spool = OpenSpool(dir);
  MakeThree(spool);
  REQUIRE(spool.MarkDelivered(kPartA).ok());  // ready/ now empty

  SUBCASE("a poison chunk") {
    auto name = spool.Requeue(kDeadA1, kNow);
    REQUIRE(name.ok());
    CHECK(name.value() == kDeadA1 + ".requeued-1");
    auto ready = spool.ListReady();
    REQUIRE(ready.ok());
    REQUIRE(ready->size() == 1);
    CHECK(ready->at(0).name == name.value());
    CHECK(ReadFile(ready->at(0).path) == Slice(kRow2Begin, kRow3Begin));
    // The audit record stays, marked.
    DeadFilter f;
    f.reason = "schema_mismatch";
    auto list = spool.ListDead(f, kNow);
    REQUIRE(list->entries.size() == 1);
    const DeadEntry& e = list->entries[0];
    REQUIRE(e.requeued_as.has_value());
    CHECK(*e.requeued_as == name.value());
    CHECK(e.requeued_at == kNow);
    CHECK(fs::exists(e.rows_path));
    CHECK(nlohmann::json::parse(ReadFile(e.record_path)).at("requeued_as") == name.value());
    CHECK(FileNames(spool.incoming_dir()).empty());

    auto again = spool.Requeue(kDeadA1, kNow + 1s);
    REQUIRE(again.ok());
    CHECK(again.value() == kDeadA1 + ".requeued-2");
  }
  SUBCASE("a horizon partition requeues only its dead rows") {
    auto name = spool.Requeue(kDeadB, kNow);
    REQUIRE(name.ok());
    CHECK(ReadFile(spool.PartitionPath(name.value())) == Slice(kRow2Begin, kRows.size()));
  }
  SUBCASE("twin: an unknown or invalid dead name requeues nothing") {
    CHECK(spool.Requeue("nope.0-1", kNow).status().code() == StatusCode::kNotFound);
    CHECK(spool.Requeue("../nope.0-1", kNow).status().code() == StatusCode::kInvalidName);
    CHECK(spool.ListReady()->empty());
  }
}

TEST_CASE("Purge deletes dead letters by name or by filter") {
  const fs::path dir = FreshDir(kSuite, "purge");
  Spool spool = OpenSpool(dir);
  MakeThree(spool);

  SUBCASE("by name: both files go, the others stay") {
    REQUIRE(spool.Purge(kDeadA0).ok());
    CHECK(FileNames(spool.dead_dir()) ==
          std::vector<std::string>{kDeadA1 + ".json", kDeadA1 + ".ndjson", kDeadB + ".json",
                                   kDeadB + ".ndjson"});
    CHECK(spool.Purge(kDeadA0).code() == StatusCode::kNotFound);
  }
  SUBCASE("by filter") {
    DeadFilter f;
    f.kind = DeadKind::kPoison;
    f.limit = 1;  // paging does not limit a purge
    auto n = spool.Purge(f, kNow);
    REQUIRE(n.ok());
    CHECK(n.value() == 2);
    CHECK(Names(spool.ListDead({}, kNow).value()) == std::vector<std::string>{kDeadB});
  }
  SUBCASE("invalid names are rejected and touch nothing") {
    CHECK(spool.Purge("../ready/x").code() == StatusCode::kInvalidName);
    CHECK(spool.Purge("").code() == StatusCode::kInvalidName);
    CHECK(spool.ListDead({}, kNow)->total == 3);
  }
}

TEST_CASE("Dead-letter operations reject invalid partition names") {
  const fs::path dir = FreshDir(kSuite, "names");
  Spool spool = OpenSpool(dir);
  CHECK(spool.DeadLetterChunk("a/b", 0, 1, "x", 400, "r", kNow).status().code() ==
        StatusCode::kInvalidName);
  CHECK(spool.DeadLetterPartition(".hidden", 0, "r", 503, kNow).status().code() ==
        StatusCode::kInvalidName);
  CHECK(FileNames(spool.dead_dir()).empty());
}

TEST_CASE("An unreadable record is reported by name, not fatal") {
  const fs::path dir = FreshDir(kSuite, "unreadable");
  Spool spool = OpenSpool(dir);
  MakeThree(spool);
  WriteFile(spool.dead_dir() / "broken.0-1.json", "{not json");
  auto list = spool.ListDead({}, kNow);
  REQUIRE(list.ok());
  CHECK(list->total == 3);
  CHECK(list->unreadable == std::vector<std::string>{"broken.0-1"});
}
