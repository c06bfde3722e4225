// SPDX-License-Identifier: Apache-2.0
// Packs of small partitions (LLP 0027): the key, the manifest record, the choice, and
// driver ticks over a real spool against an in-process scripted server, the fake clock
// doing every wait.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "driver/packs.h"
#include "fwdsink/driver.h"
#include "fwdsink/forward_pack.h"
#include "fwdsink/pack_manifest.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::ManifestMember;
using fwdsink::test::FileNames;
using fwdsink::test::FreshDir;
using fwdsink_test::ScriptedServer;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuite = "packs";
constexpr std::size_t kChunkBytes = 1024;  // pack_below defaults to 512

fs::path FreshSpool(const std::string& name) {
  auto dir = FreshDir(kSuite, name);
  fs::create_directories(dir / "ready");
  return dir;
}

// Seals a partition of `rows` rows into ready/ (~20 bytes a row); `bad_row` goes last.
void AddPartition(const fs::path& spool, const std::string& name, int rows,
                  const std::string& bad_row = {}) {
  const auto tmp = spool / (name + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    for (int i = 0; i < rows; ++i) out << "{\"p\":\"" << name << "\",\"i\":" << i << "}\n";
    if (!bad_row.empty()) out << bad_row << "\n";
  }
  fs::rename(tmp, spool / "ready" / (name + ".ndjson"));
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The members as the driver would record them now.
std::vector<ManifestMember> Members(const fs::path& spool, const std::vector<std::string>& names) {
  auto opened = fwdsink::Spool::Open(spool);
  REQUIRE(opened.ok());
  std::vector<ManifestMember> out;
  for (const auto& n : names) {
    auto st = opened->PartitionState(n);
    REQUIRE(st.ok());
    out.push_back({n, st->size, st->mtime_ns});
  }
  return out;
}

std::string Header(const fwdsink_test::Recorded& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

struct Harness {
  fwdsink::FakeClock clock;
  std::mutex events_mu;
  // Events come from every sender's thread (several packs in flight): guarded by events_mu.
  std::vector<fwdsink::Event> events;
  std::unique_ptr<fwdsink::Driver> driver;

  Harness(const fs::path& spool, const std::string& url,
          std::optional<std::uint64_t> pack_below = std::nullopt,
          std::chrono::milliseconds budget = 300s, std::uint64_t chunk_bytes = kChunkBytes,
          std::size_t concurrency = 1) {
    fwdsink::DriverOptions o;
    o.spool_dir = spool;
    o.forward.url = url;
    o.forward.compression = fwdsink::Compression::kIdentity;
    o.forward.chunker.chunk_bytes = chunk_bytes;
    o.forward.backpressure.jitter = 0;
    o.forward.backpressure.inline_budget = budget;
    if (budget < 30s) o.forward.backpressure.ladder = {1s};
    o.concurrency = {.adaptive = false, .max = concurrency};
    o.pack_below = pack_below;
    fwdsink::ForwardDeps deps;
    deps.time = &clock;
    deps.sleeper = &clock;
    deps.on_event = [this](const fwdsink::Event& e) {
      std::lock_guard guard(events_mu);
      events.push_back(e);
    };
    auto created = fwdsink::Driver::Create(o, deps);
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    driver = std::move(created).value();
  }
  std::size_t Count(std::string_view name) const {
    std::size_t n = 0;
    for (const auto& e : events) n += e.name == name;
    return n;
  }
};

bool NoManifests(const fs::path& spool) {
  return !fs::exists(spool / "packs") || FileNames(spool / "packs").empty();
}

}  // namespace

TEST_CASE("PackKeyIsStableForTheSameMembersAndChangesWithThem") {
  const std::vector<ManifestMember> m = {{"a", 10, 1}, {"b", 20, 2}, {"c", 30, 3}};
  CHECK(fwdsink::PackKey(m) == fwdsink::PackKey(m));
  const std::string key = fwdsink::PackKey(m);
  CHECK(key.rfind("pack:a:c:", 0) == 0);
  CHECK(key.size() == std::string("pack:a:c:").size() + 8);
  CHECK(fwdsink::MemberKeys(m) == "a:0-10, b:0-20, c:0-30");
  // The mtime is the manifest's identity check, not part of the content key.
  auto touched = m;
  for (auto& x : touched) x.mtime_ns += 99;
  CHECK(fwdsink::PackKey(touched) == key);
  // Twins: another size, or another member, is another key.
  auto grown = m;
  grown[1].size = 21;
  CHECK(fwdsink::PackKey(grown) != key);
  auto fewer = m;
  fewer.erase(fewer.begin() + 1);
  CHECK(fwdsink::PackKey(fewer) != key);
}

TEST_CASE("MembersHeaderLinesCutsBetweenKeysAndJoinsBackToTheList") {
  const std::string list = "a:0-10, bb:0-20, ccc:0-30, d:0-4";  // keys of 6, 7, 8, 5 bytes
  const auto join = [](const std::vector<std::string_view>& lines) {
    std::string out;
    for (const auto l : lines) out += (out.empty() ? "" : ", ") + std::string(l);
    return out;
  };
  SUBCASE("as many keys to a line as fit") {
    const auto lines = fwdsink::MembersHeaderLines(list, 15);  // "a:0-10, bb:0-20" is 15
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "a:0-10, bb:0-20");
    CHECK(lines[1] == "ccc:0-30, d:0-4");
    CHECK(join(lines) == list);
  }
  SUBCASE("one byte less moves a key to the next line, and a line never passes its bytes") {
    const auto lines = fwdsink::MembersHeaderLines(list, 14);
    REQUIRE(lines.size() == 4);  // "ccc:0-30, d:0-4" is 15
    CHECK(lines[0] == "a:0-10");
    CHECK(lines[1] == "bb:0-20");
    CHECK(lines[2] == "ccc:0-30");
    CHECK(lines[3] == "d:0-4");
    CHECK(join(lines) == list);
  }
  SUBCASE("a key longer than a line is a line alone") {
    const auto lines = fwdsink::MembersHeaderLines(list, 3);
    REQUIRE(lines.size() == 4);
    CHECK(lines[2] == "ccc:0-30");
    CHECK(join(lines) == list);
  }
  SUBCASE("twin: a list that fits is one line, and no list is no line") {
    CHECK(fwdsink::MembersHeaderLines(list, list.size()) == std::vector<std::string_view>{list});
    CHECK(fwdsink::MembersHeaderLines("", 10).empty());
  }
}

TEST_CASE("AManifestRoundTripsAndATornOneIsRefused") {
  const auto manifest = fwdsink::MakeManifest({{"a", 10, 1}, {"b", 20, 2}});
  const std::string text = fwdsink::EncodeManifest(manifest);
  auto back = fwdsink::DecodeManifest(text);
  REQUIRE(back.ok());
  CHECK(back->key == manifest.key);
  CHECK(back->members == manifest.members);
  std::string flipped = text;
  flipped[flipped.find("20")] = '3';
  CHECK_FALSE(fwdsink::DecodeManifest(flipped).ok());
  CHECK_FALSE(fwdsink::DecodeManifest(text.substr(0, text.size() - 3)).ok());

  const auto spool = FreshSpool("manifest_files");
  REQUIRE(fwdsink::WriteManifest(spool, manifest).ok());
  auto scan = fwdsink::ListPackManifests(spool);
  REQUIRE(scan.ok());
  REQUIRE(scan->manifests.size() == 1);
  CHECK_FALSE(scan->manifests[0].acked);
  auto m = scan->manifests[0];
  REQUIRE(fwdsink::MarkManifestAcked(spool, m).ok());
  scan = fwdsink::ListPackManifests(spool);
  REQUIRE(scan->manifests.size() == 1);
  CHECK(scan->manifests[0].acked);
  REQUIRE(fwdsink::RemoveManifest(spool, m).ok());
  CHECK(NoManifests(spool));
}

TEST_CASE("ChoosePacksTakesConsecutiveSmallOnesUpToTheLimits") {
  std::vector<fwdsink::ReadyPartition> ready;
  for (std::uint64_t size : {100, 100, 100, 5000, 100, 100, 100, 100})
    ready.push_back({.name = "p" + std::to_string(ready.size()), .path = {}, .size = size});
  std::vector<bool> packable = {true, true, true, false, true, true, true, true};
  const auto items =
      fwdsink::internal::ChoosePacks(ready, packable, {.max_bytes = 300, .max_header_bytes = 1000});
  REQUIRE(items.size() == 4);
  CHECK(items[0].members == std::vector<std::size_t>{0, 1, 2});  // 300 bytes: full
  CHECK(items[0].pack);
  CHECK_FALSE(items[0].open);
  CHECK(items[1].members == std::vector<std::size_t>{3});  // large: alone, never merged
  CHECK_FALSE(items[1].pack);
  CHECK(items[2].members == std::vector<std::size_t>{4, 5, 6});
  CHECK(items[3].members == std::vector<std::size_t>{7});  // a run of one is alone
  CHECK_FALSE(items[3].pack);
  CHECK(items[3].open);  // closed by the list's end: pack_linger may hold it
  // The member keys' header closes a pack too ("pN:0-100, " is 10 bytes).
  const auto by_header = fwdsink::internal::ChoosePacks(
      ready, packable, {.max_bytes = 100000, .max_header_bytes = 20});
  CHECK(by_header[0].members == std::vector<std::size_t>{0, 1});
  // Two field lines of 20 bytes hold four keys ("p0:0-100, p1:0-100" is 18 on a line).
  const auto two_lines = fwdsink::internal::ChoosePacks(
      ready, packable, {.max_bytes = 100000, .max_header_bytes = 20, .max_header_lines = 2});
  REQUIRE(two_lines.size() == 3);
  CHECK(two_lines[0].members == std::vector<std::size_t>{0, 1, 2});  // up to the large one
  CHECK(two_lines[2].members == std::vector<std::size_t>{4, 5, 6, 7});
  CHECK(two_lines[2].pack);
  // ... and the fifth key would need a third line.
  std::vector<fwdsink::ReadyPartition> five(5, {.name = "q", .path = {}, .size = 100});
  for (std::size_t i = 0; i < five.size(); ++i) five[i].name += std::to_string(i);
  const auto split = fwdsink::internal::ChoosePacks(
      five, std::vector<bool>(5, true),
      {.max_bytes = 100000, .max_header_bytes = 20, .max_header_lines = 2});
  REQUIRE(split.size() == 2);
  CHECK(split[0].members == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(split[1].members == std::vector<std::size_t>{4});
}

TEST_CASE("SmallPartitionsGoAsOnePackUnderItsKeyWithTheirMemberKeys") {
  ScriptedServer server;
  const auto spool = FreshSpool("one_pack");
  const std::vector<std::string> names = {"p1", "p2", "p3", "p4", "p5"};
  std::string body;
  for (const auto& n : names) {
    AddPartition(spool, n, 2);
    body += Read(spool / "ready" / (n + ".ndjson"));
  }
  const auto members = Members(spool, names);
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(r.delivered == 5);
  CHECK(r.all_delivered());
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].key == fwdsink::PackKey(members));
  CHECK(Header(reqs[0], "Idempotency-Members") == fwdsink::MemberKeys(members));
  CHECK(reqs[0].body == body);  // the members as on disk, in order
  CHECK(FileNames(spool / "ready").empty());
  CHECK(NoManifests(spool));
  const auto c = h.driver->sink_counters();
  CHECK(c.packs_sent == 1);
  CHECK(c.partitions_packed == 5);
  CHECK(h.Count(fwdsink::events::kForwardDelivered) == 5);  // per member, as before
  CHECK(h.Count(fwdsink::events::kForwardPackDelivered) == 1);
  CHECK(h.driver->counters().partitions_delivered == 5);
}

// Every value of a header, in the order received.
std::vector<std::string> Headers(const fwdsink_test::Recorded& r, const std::string& name) {
  std::vector<std::string> out;
  const auto [from, to] = r.headers.equal_range(name);
  for (auto it = from; it != to; ++it) out.push_back(it->second);
  return out;
}

TEST_CASE("MemberKeysPastOneFieldLineGoOnSeveralAndThePackStaysWhole") {
  ScriptedServer server;
  const auto spool = FreshSpool("members_lines");
  // 250 partitions with a daemon's long names: 55 bytes of key each, 14 KB in all,
  // past one line of kMaxMembersHeaderBytes and within kMaxMembersHeaderLines.
  std::vector<std::string> names;
  for (int i = 0; i < 250; ++i) {
    names.push_back("host-0042.collectd.interface-eth0.if_octets-" + std::to_string(100000 + i));
    AddPartition(spool, names.back(), 1);
  }
  const auto members = Members(spool, names);
  Harness h(spool, server.url(), std::nullopt, 300s, 1 << 20);
  const auto r = h.driver->Tick();
  CHECK(r.delivered == names.size());
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);  // one pack, not one per 6 KiB of keys
  CHECK(reqs[0].key == fwdsink::PackKey(members));
  const auto lines = Headers(reqs[0], "Idempotency-Members");
  CHECK(lines.size() == 3);  // 107 keys of 55 bytes (and ", ") to a line: 107 + 107 + 36
  std::string joined;
  for (const auto& l : lines) {
    CHECK(l.size() <= fwdsink::kMaxMembersHeaderBytes);
    joined += (joined.empty() ? "" : ", ") + l;
  }
  CHECK(joined == fwdsink::MemberKeys(members));  // RFC 9110 5.3: one list again
}

// Packs are requests like chunks: as many in flight as the limit lets (LLP 0027#parallel).
TEST_CASE("SeveralPacksAreInFlightAtOnceUpToTheLimitAndOneAtATimeAtOne") {
  for (const std::size_t limit : {std::size_t{4}, std::size_t{1}}) {
    CAPTURE(limit);
    ScriptedServer server;
    for (int i = 0; i < 4; ++i) server.Then({.status = 200, .delay = 300ms});
    const auto spool = FreshSpool("parallel_" + std::to_string(limit));
    // 40 partitions of ~110 bytes: four packs of ten under 1 KiB each.
    for (int i = 0; i < 40; ++i) AddPartition(spool, "p" + std::to_string(100 + i), 5);
    Harness h(spool, server.url(), std::nullopt, 300s, kChunkBytes, limit);
    const auto r = h.driver->Tick();
    CHECK(r.delivered == 40);
    CHECK(server.requests().size() == 4);
    CHECK(h.driver->sink_counters().packs_sent == 4);
    CHECK(FileNames(spool / "ready").empty());
    CHECK(NoManifests(spool));
    if (limit == 1) {
      CHECK(server.max_in_flight() == 1);  // twin: --concurrency 1 is one request at a time
    } else {
      CHECK(server.max_in_flight() >= 2);  // each answer takes 300 ms: they overlap
    }
  }
}

TEST_CASE("ARespooledPackIsRecordedOnItsFirstMemberAndDeliveredLaterWithoutTheRecord") {
  ScriptedServer server;
  for (int i = 0; i < 3; ++i) server.Then(503);
  const auto spool = FreshSpool("pack_respooled");
  for (const auto& n : {"p1", "p2"}) AddPartition(spool, n, 2);
  Harness h(spool, server.url(), std::nullopt, /*budget=*/1s);
  const auto first = h.driver->Tick();
  CHECK(first.respooled == 1);
  // The pack's failure is on its first member's record, and the manifest stays.
  const auto c = h.driver->spool().LoadCursor("p1");
  CHECK(c.failures >= 1);
  CHECK(c.first_failure.has_value());
  CHECK(h.driver->spool().LoadCursor("p2").status == fwdsink::CursorStatus::kMissing);
  CHECK_FALSE(NoManifests(spool));
  fwdsink::TickReport r = first;
  for (int i = 0; i < 5 && !r.all_delivered(); ++i) {
    h.clock.Advance(60s);
    r = h.driver->Tick();
  }
  CHECK(r.all_delivered());
  CHECK(FileNames(spool / "ready").empty());
  CHECK(FileNames(spool / "state").empty());  // the record went with its partition
  CHECK(NoManifests(spool));
  for (const auto& q : server.requests()) CHECK(q.key.rfind("pack:p1:p2:", 0) == 0);
}

TEST_CASE("PackBelowZeroSendsOneRequestPerPartition") {
  ScriptedServer server;
  const auto spool = FreshSpool("pack_off");
  for (const auto& n : {"p1", "p2", "p3"}) AddPartition(spool, n, 2);
  Harness h(spool, server.url(), /*pack_below=*/0);
  const auto r = h.driver->Tick();
  CHECK(r.delivered == 3);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 3);
  for (const auto& q : reqs) {
    CHECK(q.key.rfind("pack:", 0) == std::string::npos);
    CHECK(Header(q, "Idempotency-Members").empty());
  }
  CHECK(h.driver->sink_counters().packs_sent == 0);
}

TEST_CASE("APartitionWithACursorIsNeverPacked") {
  for (const bool with_cursor : {true, false}) {
    CAPTURE(with_cursor);
    ScriptedServer server;
    const auto spool = FreshSpool(with_cursor ? "cursor" : "cursor_twin");
    for (const auto& n : {"p1", "p2", "p3", "p4", "p5"}) AddPartition(spool, n, 2);
    const std::uint64_t first_row = Read(spool / "ready" / "p3.ndjson").find('\n') + 1;
    if (with_cursor) {
      auto s = fwdsink::Spool::Open(spool);
      REQUIRE(s.ok());
      REQUIRE(s->SaveCursor("p3", first_row).ok());  // p3 was partly sent
    }
    Harness h(spool, server.url());
    const auto r = h.driver->Tick();
    CHECK(r.delivered == 5);
    const auto reqs = server.requests();
    if (!with_cursor) {
      REQUIRE(reqs.size() == 1);
      CHECK(reqs[0].key.rfind("pack:p1:p5:", 0) == 0);
      continue;
    }
    REQUIRE(reqs.size() == 3);
    CHECK(reqs[0].key.rfind("pack:p1:p2:", 0) == 0);
    CHECK(reqs[1].key.rfind("pack:p4:p5:", 0) == 0);
    CHECK(reqs[2].key.rfind("p3:" + std::to_string(first_row) + "-", 0) == 0);  // from its cursor
  }
}

TEST_CASE("AMemberRewrittenAfterItsManifestGoesToQuarantineAndTheRestIsDelivered") {
  for (const bool rewritten : {true, false}) {
    CAPTURE(rewritten);
    ScriptedServer server;
    const auto spool = FreshSpool(rewritten ? "rewritten" : "rewritten_twin");
    for (const auto& n : {"p1", "p2", "p3"}) AddPartition(spool, n, 2);
    // A manifest left by a run that crashed after writing it.
    const auto manifest = fwdsink::MakeManifest(Members(spool, {"p1", "p2", "p3"}));
    REQUIRE(fwdsink::WriteManifest(spool, manifest).ok());
    if (rewritten) {
      // Same size, other bytes, other mtime: the producer broke the contract.
      const auto p2 = spool / "ready" / "p2.ndjson";
      std::string bytes = Read(p2);
      bytes[bytes.find('0')] = '7';
      fwdsink::test::WriteFile(p2, bytes);
      fs::last_write_time(p2, fs::last_write_time(p2) + 5s);
    }
    Harness h(spool, server.url());
    const auto r = h.driver->Tick();
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(FileNames(spool / "ready").empty());
    CHECK(NoManifests(spool));
    if (!rewritten) {
      CHECK(reqs[0].key == manifest.key);  // re-sent unchanged
      CHECK(r.delivered == 3);
      CHECK(h.Count(fwdsink::events::kDriverPackResolved) == 0);
      continue;
    }
    std::vector<ManifestMember> others = {manifest.members[0], manifest.members[2]};
    CHECK(reqs[0].key == fwdsink::PackKey(others));
    CHECK(r.delivered == 2);
    CHECK(FileNames(spool / "quarantine") == std::vector<std::string>{"p2.ndjson"});
    CHECK(h.Count(fwdsink::events::kDriverPackResolved) == 1);
  }
}

TEST_CASE("ACrashBetweenManifestAndAckResendsTheSamePackUnderTheSameKeyFirst") {
  const auto spool = FreshSpool("resend");
  for (const auto& n : {"p1", "p2", "p3"}) AddPartition(spool, n, 2);
  std::string first_key;
  std::string first_body;
  {
    // The first run's pack is never acknowledged: the budget gives up on a long hold.
    ScriptedServer server;
    server.Then(503, {{"Retry-After", "3600"}});
    Harness h(spool, server.url(), std::nullopt, 10s);
    const auto r = h.driver->Tick();
    CHECK(r.respooled == 1);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    first_key = reqs[0].key;
    first_body = reqs[0].body;
    CHECK(FileNames(spool / "packs").size() == 1);  // the manifest stays
    CHECK(FileNames(spool / "ready").size() == 3);
  }  // the driver goes away as in a crash: nothing but the disk is left
  // A newer small partition must not join the pack in flight.
  AddPartition(spool, "p0", 2);  // sorts first: would lead a fresh pack
  AddPartition(spool, "p9", 2);
  ScriptedServer server;
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].key == first_key);  // first, under the same key, the same bytes
  CHECK(reqs[0].body == first_body);
  CHECK(reqs[1].key.rfind("pack:p0:p9:", 0) == 0);
  CHECK(h.Count(fwdsink::events::kDriverPackResumed) == 1);
  CHECK(r.delivered == 5);
  CHECK(FileNames(spool / "ready").empty());
  CHECK(NoManifests(spool));
}

TEST_CASE("AnAcknowledgedManifestOnlyFinishesItsRemovalsAfterACrash") {
  ScriptedServer server;
  const auto spool = FreshSpool("acked");
  for (const auto& n : {"p1", "p2", "p3"}) AddPartition(spool, n, 2);
  auto manifest = fwdsink::MakeManifest(Members(spool, {"p1", "p2", "p3"}));
  REQUIRE(fwdsink::WriteManifest(spool, manifest).ok());
  REQUIRE(fwdsink::MarkManifestAcked(spool, manifest).ok());
  fs::remove(spool / "ready" / "p1.ndjson");  // the crash came after the first unlink
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(server.requests().empty());  // nothing is sent again
  CHECK(r.delivered == 2);
  CHECK(FileNames(spool / "ready").empty());
  CHECK(NoManifests(spool));
}

TEST_CASE("A413ForAPackSendsItsMembersAlone") {
  for (const bool refused : {true, false}) {
    CAPTURE(refused);
    ScriptedServer server;
    const auto spool = FreshSpool(refused ? "too_large" : "too_large_twin");
    for (const auto& n : {"p1", "p2", "p3"}) AddPartition(spool, n, 2);
    if (refused) server.Then(413, {}, R"({"details":{"reason":"max_body"}})");
    Harness h(spool, server.url());
    const auto r = h.driver->Tick();
    CHECK(r.delivered == 3);
    CHECK(FileNames(spool / "ready").empty());
    CHECK(NoManifests(spool));
    const auto reqs = server.requests();
    if (!refused) {
      CHECK(reqs.size() == 1);
      continue;
    }
    REQUIRE(reqs.size() == 4);
    CHECK(reqs[0].key.rfind("pack:", 0) == 0);
    CHECK(reqs[1].key.rfind("p1:0-", 0) == 0);
    CHECK(reqs[2].key.rfind("p2:0-", 0) == 0);
    CHECK(reqs[3].key.rfind("p3:0-", 0) == 0);
  }
}

TEST_CASE("ABadRowInAPackIsDeadLetteredInItsOwnPartitionOnly") {
  ScriptedServer server;
  const auto spool = FreshSpool("bad_row");
  AddPartition(spool, "p1", 2);
  AddPartition(spool, "p2", 1, "[1,2]");  // rows: {0}, [1,2]
  AddPartition(spool, "p3", 2);
  const std::string bad = R"({"details":{"reason":"bad_row"}})";
  server.Then(400, {}, bad);  // the pack
  server.Then(200);           // p1 alone
  server.Then(400, {}, bad);  // p2 alone: split
  server.Then(200);           // its first row
  server.Then(400, {}, bad);  // the bad row
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(r.delivered == 3);
  CHECK(r.poisoned_chunks == 1);
  const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
  REQUIRE(dead);
  REQUIRE(dead->entries.size() == 1);
  CHECK(dead->entries[0].partition == "p2");
  CHECK(Read(dead->entries[0].rows_path) == "[1,2]\n");
  CHECK(FileNames(spool / "ready").empty());
  CHECK(NoManifests(spool));
}

TEST_CASE("PackLingerHoldsANotFullPackUntilItsOldestMemberIsOldEnough") {
  ScriptedServer server;
  const auto spool = FreshSpool("linger");
  for (const auto& n : {"p1", "p2"}) AddPartition(spool, n, 2);
  fwdsink::DriverOptions o;
  // The fake wall clock starts at the files' mtime.
  fwdsink::FakeClock clock(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      fs::file_time_type::clock::to_sys(fs::last_write_time(spool / "ready" / "p2.ndjson"))));
  o.spool_dir = spool;
  o.forward.url = server.url();
  o.forward.compression = fwdsink::Compression::kIdentity;
  o.forward.chunker.chunk_bytes = kChunkBytes;
  o.pack_below = std::nullopt;  // auto, the default
  o.pack_linger = 5s;
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  deps.sleeper = &clock;
  auto d = fwdsink::Driver::Create(o, deps);
  REQUIRE(d.ok());
  CHECK((*d)->Tick().delivered == 0);  // held: more may come
  CHECK(server.requests().empty());
  AddPartition(spool, "p3", 2);
  clock.Advance(6s);
  CHECK((*d)->Tick().delivered == 3);
  REQUIRE(server.requests().size() == 1);
  CHECK(server.requests()[0].key.rfind("pack:p1:p3:", 0) == 0);
}
