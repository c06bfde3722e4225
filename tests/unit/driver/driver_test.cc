// SPDX-License-Identifier: Apache-2.0
// Driver ticks over a real spool directory against an in-process scripted server,
// with the fake clock doing every wait.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/driver.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::test::FileNames;
using fwdsink::test::FreshDir;
using fwdsink::test::WriteFile;
using fwdsink_test::ScriptedServer;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view kSuite = "driver";  // folder under FWDSINK_TEST_TMP
constexpr std::size_t kChunkBytes = 64;

// Returns an empty spool folder with its ready/ subfolder, as the producer leaves it.
std::filesystem::path FreshSpool(const std::string& name) {
  auto dir = FreshDir(kSuite, name);
  std::filesystem::create_directories(dir / "ready");
  return dir;
}

// Seals a partition straight into ready/ (the producer's rename).
void AddPartition(const std::filesystem::path& spool, const std::string& name, int rows,
                  const std::string& bad_row = {}) {
  const auto tmp = spool / (name + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    for (int i = 0; i < rows; ++i) {
      out << "{\"p\":\"" << name << "\",\"i\":" << i << "}\n";
      if (i == rows / 2 && !bad_row.empty()) out << bad_row << "\n";
    }
  }
  std::filesystem::rename(tmp, spool / "ready" / (name + ".ndjson"));
}

struct Harness {
  fwdsink::FakeClock clock;
  std::vector<fwdsink::Event> events;
  std::unique_ptr<fwdsink::Driver> driver;

  Harness(const std::filesystem::path& spool, const std::string& url, milliseconds horizon = 24h,
          fwdsink::EngineProfile profile = fwdsink::EngineProfile::kGeneric) {
    fwdsink::DriverOptions o;
    o.forward.responses.profile = profile;
    o.spool_dir = spool;
    o.horizon = horizon;
    o.forward.url = url;
    o.forward.compression = fwdsink::Compression::kIdentity;
    o.forward.chunker.chunk_bytes = kChunkBytes;
    // Exact waits and pauses are checked: jitter off (on by default, LLP 0016#jitter).
    o.forward.backpressure.jitter = 0;
    // One partition at a time, in the order the scenarios check (and `events` unguarded):
    // the limit starts at 1 here, as it did before issue 39 (LLP 0018#start); the fake
    // clock never lets it grow.
    o.concurrency.initial = 1;
    fwdsink::ForwardDeps deps;
    deps.time = &clock;
    deps.sleeper = &clock;
    deps.on_event = [this](const fwdsink::Event& e) { events.push_back(e); };
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

httplib::Headers RetryAfter(const std::string& v) { return {{"Retry-After", v}}; }

}  // namespace

TEST_CASE("TickDeliversOldestFirstAndRemovesDeliveredPartitions") {
  ScriptedServer server;
  const auto spool = FreshSpool("oldest");
  AddPartition(spool, "20260101T000002.000Z-1-2", 3);
  AddPartition(spool, "20260101T000001.000Z-1-1", 3);
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(r.delivered == 2);
  CHECK(r.all_delivered());
  CHECK(FileNames(spool / "ready").empty());
  CHECK(std::filesystem::is_empty(spool / "state"));
  const auto reqs = server.requests();
  REQUIRE_FALSE(reqs.empty());
  CHECK(reqs.front().key.rfind("20260101T000001.000Z-1-1:", 0) == 0);  // oldest first
  CHECK(reqs.back().key.rfind("20260101T000002.000Z-1-2:", 0) == 0);
}

TEST_CASE("OneThrottledPartitionIsRespooledAndTheTickMovesOnBehindTheSharedGate") {
  ScriptedServer server;
  const auto spool = FreshSpool("respool");
  AddPartition(spool, "a", 8);
  AddPartition(spool, "b", 2);
  server.Then(200);  // a's first chunk
  for (int i = 0; i < 4; ++i) {
    server.Then(429, RetryAfter("100"), R"({"details":{"reason":"byte_rate"}})");
  }
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(r.respooled == 1);
  CHECK(r.delivered == 1);  // b was not thrown away
  CHECK(r.throttled);
  CHECK_FALSE(r.all_delivered());
  CHECK(FileNames(spool / "ready") == std::vector<std::string>{"a.ndjson"});
  // a's cursor sits at the end of its acknowledged first chunk.
  const auto cursor = h.driver->spool().LoadCursor("a");
  CHECK(cursor.status == fwdsink::CursorStatus::kOk);
  CHECK(cursor.offset == server.requests()[0].body.size());
  CHECK(cursor.first_failure.has_value());
  // a waited 100, 100, 100 and gave up on the 4th 429; b then waited for the gate
  // (the 4th Retry-After) before its first request instead of hammering the server.
  CHECK(h.clock.sleeps() == std::vector<milliseconds>{100s, 100s, 100s, 100s});
  CHECK(h.Count("forward.gate_wait") == 1);
  CHECK(server.requests().size() == 1 + 4 + 1);

  SUBCASE("the next tick resumes a at its cursor, never at row 0") {
    const auto before = server.requests().size();
    const auto r2 = h.driver->Tick();
    CHECK(r2.delivered == 1);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() > before);
    CHECK(reqs[before].key == "a:" + std::to_string(cursor.offset) + "-" +
                                  std::to_string(cursor.offset + reqs[before].body.size()));
    CHECK(FileNames(spool / "ready").empty());
  }
}

TEST_CASE("PoisonedRowGoesToDeadLettersAndTheRestOfThePartitionGoesOn") {
  ScriptedServer server;
  const auto spool = FreshSpool("poison");
  AddPartition(spool, "p", 2, "[1,2]");                                  // rows: {0}, {1}, [1,2]
  server.Then(400, {}, R"({"details":{"reason":"bad_row","line":3}})");  // whole chunk
  server.Then(200);                                                      // first half
  server.Then(400, {}, R"({"details":{"reason":"bad_row","line":2}})");  // second half
  server.Then(200);                                                      // its first row
  server.Then(400, {}, R"({"details":{"reason":"bad_row","line":1}})");  // the bad row
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(r.poisoned_chunks == 1);
  CHECK(r.delivered == 1);
  CHECK(FileNames(spool / "ready").empty());
  const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
  REQUIRE(dead);
  REQUIRE(dead->entries.size() == 1);
  CHECK(dead->entries[0].reason == "bad_row");
  CHECK(dead->entries[0].status == 400);
  std::ifstream in(dead->entries[0].rows_path);
  std::string row;
  std::getline(in, row);
  CHECK(row == "[1,2]");
  CHECK(h.driver->counters().poisoned_chunks == 1);
}

TEST_CASE("APoisonThatCannotBeDeadLetteredKeepsTheCursorBeforeIt") {
  ScriptedServer server;
  const auto spool = FreshSpool("poison_kept");
  AddPartition(spool, "p", 2, "[1,2]");                         // rows: {0}, {1}, [1,2]
  server.Then(400, {}, R"({"details":{"reason":"bad_row"}})");  // whole chunk
  server.Then(200);                                             // {0}
  server.Then(400, {}, R"({"details":{"reason":"bad_row"}})");  // {1}, [1,2]
  server.Then(200);                                             // {1}
  server.Then(400, {}, R"({"details":{"reason":"bad_row"}})");  // [1,2]
  Harness h(spool, server.url());
  // dead/ cannot hold anything: the dead letter cannot be written.
  std::filesystem::remove_all(spool / "dead");
  REQUIRE(WriteFile(spool / "dead", "not a folder"));
  const auto r = h.driver->Tick();
  CHECK(r.poisoned_chunks == 0);
  CHECK(r.errors == 1);
  CHECK(r.delivered == 0);
  CHECK(h.driver->counters().poisoned_chunks == 0);
  CHECK(h.Count("driver.spool_error") == 1);
  CHECK(h.Count("driver.dead_letter") == 0);
  CHECK(FileNames(spool / "ready") == std::vector<std::string>{"p.ndjson"});
  // The cursor stops at the poisoned row's start: nothing is lost.
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 5);
  const auto cursor = h.driver->spool().LoadCursor("p");
  CHECK(cursor.status == fwdsink::CursorStatus::kOk);
  CHECK(cursor.offset == reqs[1].body.size() + reqs[3].body.size());
}

TEST_CASE("HorizonMovesAPartitionFailingTooLongToDeadLettersWhole") {
  ScriptedServer server;
  for (int i = 0; i < 100; ++i) server.Then(503);
  const auto spool = FreshSpool("horizon");
  AddPartition(spool, "h", 2);
  Harness h(spool, server.url(), /*horizon=*/1h);
  auto r = h.driver->Tick();  // first failure recorded
  CHECK(r.respooled == 1);
  CHECK(r.horizon_dead == 0);
  CHECK(FileNames(spool / "ready").size() == 1);

  SUBCASE("twin: still inside the horizon, the partition stays") {
    h.clock.Advance(30min);
    r = h.driver->Tick();
    CHECK(r.horizon_dead == 0);
    CHECK(FileNames(spool / "ready").size() == 1);
    CHECK(h.driver->counters().horizon_give_ups == 0);
  }
  SUBCASE("past the horizon it goes to dead letters, counted separately") {
    h.clock.Advance(2h);
    r = h.driver->Tick();
    CHECK(r.horizon_dead == 1);
    CHECK(FileNames(spool / "ready").empty());
    CHECK(h.driver->counters().horizon_give_ups == 1);
    CHECK(h.Count("driver.horizon_give_up") == 1);
    const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
    REQUIRE(dead);
    REQUIRE(dead->entries.size() == 1);
    CHECK(dead->entries[0].kind == fwdsink::DeadKind::kHorizon);
  }
}

// With a window, chunks acknowledged past a gap are the server's: a partition given up at
// the horizon leaves them out of dead/ (LLP 0014#horizon-gaps), or a requeue would send
// their rows again under other keys.
TEST_CASE("HorizonLeavesChunksAcknowledgedPastAGapOutOfDeadLetters") {
  ScriptedServer server;
  for (int i = 0; i < 200; ++i) server.Then(503);
  const auto spool = FreshSpool("horizon_gaps");
  AddPartition(spool, "g", 8);  // 16-byte rows: 128 bytes
  std::string original;
  {
    std::ifstream in(spool / "ready" / "g.ndjson", std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), {});
  }
  REQUIRE(original.size() == 128);
  // A journal left by a window: [0, 32) owed, [32, 64) acknowledged past the gap.
  bool acked = true;
  SUBCASE("the acknowledged chunk stays out") { acked = true; }
  SUBCASE("twin: nothing acknowledged past the gap, the partition goes whole") { acked = false; }
  {
    auto opened = fwdsink::Spool::Open(spool);
    REQUIRE(opened.ok());
    const std::vector<fwdsink::CursorRange> journal = {{0, 32, false}, {32, 64, acked}};
    REQUIRE(opened->SaveCursor("g", 0, journal).ok());
  }
  Harness h(spool, server.url(), /*horizon=*/1h);
  CHECK(h.driver->Tick().respooled == 1);  // the first failure
  h.clock.Advance(2h);
  const auto r = h.driver->Tick();
  CHECK(r.horizon_dead == 1);
  CHECK(FileNames(spool / "ready").empty());
  CHECK(FileNames(spool / "state").empty());
  for (const auto& q : server.requests()) CHECK(q.key != "g:32-64");  // never re-sent
  const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
  REQUIRE(dead);
  std::string dead_bytes;
  std::uint64_t dead_rows = 0;
  for (const auto& e : dead->entries) {
    CHECK(e.kind == fwdsink::DeadKind::kHorizon);
    std::ifstream in(e.rows_path, std::ios::binary);
    const std::string rows(std::istreambuf_iterator<char>(in), {});
    dead_bytes += rows.substr(e.data_offset, e.end - e.begin);
    dead_rows += e.rows;
  }
  if (acked) {
    REQUIRE(dead->entries.size() == 2);
    CHECK(dead->entries[0].name == "g.0-32");
    CHECK(dead->entries[1].name == "g.64-128");
    CHECK(dead_bytes == original.substr(0, 32) + original.substr(64));
    CHECK(dead_rows == 6);
  } else {
    REQUIRE(dead->entries.size() == 1);
    CHECK(dead->entries[0].name == "g.0-128");
    CHECK(dead_bytes == original);
    CHECK(dead_rows == 8);
  }
}

TEST_CASE("CorruptCursorResumesFromZeroWithTheSameKeys") {
  const auto spool = FreshSpool("corrupt");
  AddPartition(spool, "c", 10);  // 16-byte rows: chunks of four, four and two rows
  // Two earlier ticks, each throttled after one accepted chunk: the first from 0, the
  // second from its cursor. They leave the cursor at 128 and the keys they sent.
  std::vector<fwdsink_test::Recorded> earlier;
  for (int tick = 0; tick < 2; ++tick) {
    ScriptedServer server;
    server.Then(200);
    for (int i = 0; i < 4; ++i) server.Then(429, RetryAfter("100"));
    Harness h(spool, server.url());
    REQUIRE(h.driver->Tick().respooled == 1);
    for (const auto& q : server.requests()) earlier.push_back(q);
  }  // each harness lets go of the spool's lock
  {
    auto s = fwdsink::Spool::Open(spool);
    REQUIRE(s);
    const auto cursor = s->LoadCursor("c");
    REQUIRE(cursor.status == fwdsink::CursorStatus::kOk);
    REQUIRE(cursor.offset == 128);
  }
  // Tear the cursor record.
  for (const auto& e : std::filesystem::directory_iterator(spool / "state")) {
    WriteFile(e.path(), "fwdsink-cursor v1 offs");
  }
  ScriptedServer server;
  Harness h(spool, server.url());
  const auto r = h.driver->Tick();
  CHECK(r.delivered == 1);
  CHECK(h.driver->counters().cursor_corrupt == 1);
  CHECK(h.Count("driver.cursor_corrupt") == 1);
  // Every range sent before is sent again from 0 under the key and with the bytes it
  // had then (a deduplicating receiver stores none of it twice); then the rest.
  std::vector<std::string> keys;
  std::map<std::string, std::string> bodies;
  for (const auto& q : earlier) {
    if (bodies.emplace(q.key, q.body).second) keys.push_back(q.key);
  }
  CHECK(keys == std::vector<std::string>{"c:0-64", "c:64-128", "c:128-160"});
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 3);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    CAPTURE(i);
    CHECK(reqs[i].key == keys[i]);
    CHECK(reqs[i].body == bodies[keys[i]]);
  }
}

// Two ready partitions and a server whose one reply stops the tick: checks what every
// such stop shares (one error of `expected`, one request, both partitions kept) and
// returns the driver's {auth_failures, config_stops}.
std::pair<std::uint64_t, std::uint64_t> TickStoppedBy(ScriptedServer& server, const char* name,
                                                      fwdsink::Outcome expected,
                                                      fwdsink::EngineProfile profile) {
  const auto spool = FreshSpool(name);
  AddPartition(spool, "a", 2);
  AddPartition(spool, "b", 2);
  Harness h(spool, server.url(), 24h, profile);  // no token provider: a 401 cannot be fixed
  const auto r = h.driver->Tick();
  CHECK(r.errors == 1);
  CHECK(r.last_error == expected);
  CHECK(server.requests().size() == 1);
  CHECK(FileNames(spool / "ready").size() == 2);
  return {h.driver->counters().auth_failures.load(), h.driver->counters().config_stops.load()};
}

TEST_CASE("AnAuthErrorStopsTheTickWithoutTouchingTheOtherPartitions") {
  ScriptedServer server;
  server.Then(401);
  const auto [auth_failures, config_stops] =
      TickStoppedBy(server, "auth", fwdsink::Outcome::kAuthError, fwdsink::EngineProfile::kGeneric);
  CHECK(auth_failures == 1);
  CHECK(config_stops == 0);  // the twin of the next test
}

TEST_CASE("AConfigurationErrorStopsTheTickAndIsCountedAsOneNotAsAnAuthFailure") {
  // ClickHouse's UNKNOWN_TABLE: our configuration is wrong, not our credentials.
  ScriptedServer server;
  server.Then(404, {{"X-ClickHouse-Exception-Code", "60"}},
              "Code: 60, e.displayText() = DB::Exception: Table default.nope doesn't exist.\n");
  const auto [auth_failures, config_stops] = TickStoppedBy(
      server, "config", fwdsink::Outcome::kConfigError, fwdsink::EngineProfile::kClickHouse);
  CHECK(config_stops == 1);
  CHECK(auth_failures == 0);
}

namespace {

// Runs `f` on a thread of its own and waits for it at most `limit` of real time, so
// that a broken Close() fails the test with a message instead of hanging it. On a
// timeout the thread is left running, detached, and `keep` (everything it uses) is
// leaked with it rather than destroyed under it. Returns whether `f` returned in time.
template <typename Keep, typename F>
bool ReturnsWithin(std::chrono::seconds limit, std::unique_ptr<Keep>& keep, F f) {
  std::promise<void> done;
  std::future<void> returned = done.get_future();
  std::thread t([f = std::move(f), done = std::move(done)]() mutable {
    f();
    done.set_value();
  });
  if (returned.wait_for(limit) == std::future_status::ready) {
    t.join();
    return true;
  }
  t.detach();
  (void)keep.release();
  return false;
}

}  // namespace

TEST_CASE("CloseFromAnotherThreadEndsRun") {
  // On the fake clock an idle Run() ticks and "pauses" 300 s in no time, over and over,
  // until Close() from another thread ends it. (The real-time bound on how fast Close()
  // ends a real pause is in integration_close_test.)
  struct World {
    ScriptedServer server;
    Harness h;
    World() : h(FreshSpool("close"), server.url()) {}
  };
  auto w = std::make_unique<World>();
  fwdsink::Driver& driver = *w->h.driver;
  CHECK_FALSE(driver.closed());  // the twin: open until Close()
  std::promise<void> ticking;
  std::future<void> ticked = ticking.get_future();
  const bool ended = ReturnsWithin(10s, w, [&driver, ticking = std::move(ticking)]() mutable {
    std::thread closer([&driver, &ticking] {
      // Close() lands while Run() is looping: it has ticked and paused already.
      while (driver.counters().ticks.load() < 2) std::this_thread::yield();
      ticking.set_value();
      driver.Close();
    });
    driver.Run();
    closer.join();
  });
  REQUIRE_MESSAGE(ended, "Run() was still running 10 s after Close()");
  CHECK(ticked.wait_for(0s) == std::future_status::ready);
  CHECK(driver.closed());
  const std::uint64_t ticks = driver.counters().ticks.load();
  CHECK(ticks >= 2);
  driver.Close();  // twice is fine
  // A closed driver's Run() returns at once, without another tick.
  REQUIRE_MESSAGE(ReturnsWithin(10s, w, [&driver] { driver.Run(); }),
                  "a closed driver's Run() was still running after 10 s");
  CHECK(driver.counters().ticks.load() == ticks);
  CHECK(driver.Tick().partitions == 0);
}

TEST_CASE("DriverValidateNamesTheField") {
  fwdsink::DriverOptions o;
  auto field_of = [](const fwdsink::DriverOptions& options) {
    auto created = fwdsink::Driver::Create(options, {});
    if (created.ok()) return std::string("<created>");
    CHECK(created.status().code() == fwdsink::StatusCode::kInvalidConfig);
    return created.status().field();
  };
  CHECK(field_of(o) == "spool_dir");
  o.spool_dir = FreshSpool("validate");
  o.forward.url = "nope";
  CHECK(field_of(o) == "forward.url");
  o.forward.url = "http://127.0.0.1:1/";
  o.horizon = 0s;
  CHECK(field_of(o) == "horizon");
}
