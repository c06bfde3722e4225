// SPDX-License-Identifier: Apache-2.0
// A driver's passes on the fake clock, against in-process servers on 127.0.0.1, as the
// README promises them: a torn tail goes to dead/ with its event once the whole lines are
// sent, --max-split-requests bounds a bisection and blames the refusal on the request,
// the pauses between passes are spread ±50 %, and auth and configuration outages back
// off like throttling and never reach the horizon. (The daemon's side: a torn tail in
// tests/integration/dead_letters_test.cc, an auth outage past the horizon in
// tests/integration/failure_backoff_test.cc.)
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "fwdsink/driver.h"
#include "fwdsink/spool.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::test::FileNames;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;
using fwdsink_test::ScriptedServer;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view kSuite = "driver_passes";  // folder under FWDSINK_TEST_TMP

// Returns an empty spool folder with its ready/ subfolder.
std::filesystem::path FreshSpool(const std::string& name) {
  auto dir = FreshDir(kSuite, name);
  std::filesystem::create_directories(dir / "ready");
  return dir;
}

// The fake clock's sleeps, closing `driver` once `limit` pauses were taken, so that a
// test can watch Run() pause between passes and then end.
class ClosingSleeper final : public fwdsink::Sleeper {
 public:
  explicit ClosingSleeper(fwdsink::FakeClock& clock) : clock_(clock) {}
  [[nodiscard]] bool SleepFor(milliseconds d, std::stop_token stop) override {
    const bool slept = clock_.SleepFor(d, stop);
    if (++taken_ == limit && driver) driver->Close();
    return slept;
  }
  fwdsink::Driver* driver = nullptr;
  std::size_t limit = 0;  // 0: never close

 private:
  fwdsink::FakeClock& clock_;
  std::size_t taken_ = 0;
};

// A driver on the fake clock, recording its events (name, partition and begin).
struct Harness {
  fwdsink::FakeClock clock;
  ClosingSleeper sleeper{clock};
  std::mutex mu;
  std::vector<std::string> events;  // "name partition begin", guarded by mu
  std::unique_ptr<fwdsink::Driver> driver;

  explicit Harness(fwdsink::DriverOptions o, fwdsink::UniformRandom random = {}) {
    fwdsink::ForwardDeps deps;
    deps.time = &clock;
    deps.sleeper = &sleeper;
    deps.random = std::move(random);
    deps.on_event = [this](const fwdsink::Event& e) {
      std::lock_guard lock(mu);
      events.push_back(std::string(e.name) + " " + e.partition + " " + std::to_string(e.begin));
    };
    auto created = fwdsink::Driver::Create(std::move(o), deps);
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    driver = std::move(created).value();
    sleeper.driver = driver.get();
  }
  // Runs the driver until it has paused `pauses` times; returns the pauses.
  std::vector<milliseconds> RunFor(std::size_t pauses) {
    sleeper.limit = pauses;
    driver->Run();
    return clock.sleeps();
  }
  std::size_t Count(std::string_view name) {
    std::lock_guard lock(mu);
    std::size_t n = 0;
    for (const auto& e : events) n += e.rfind(std::string(name) + " ", 0) == 0;
    return n;
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu);
    return events;
  }
};

// "500 750 1000" for a list of waits, so that a failed check prints the values.
std::string Text(const std::vector<milliseconds>& waits) {
  std::string out;
  for (const auto w : waits) out += (out.empty() ? "" : " ") + std::to_string(w.count());
  return out;
}

fwdsink::DriverOptions Options(const std::filesystem::path& spool, const std::string& url) {
  fwdsink::DriverOptions o;
  o.spool_dir = spool;
  o.forward.url = url;
  o.forward.compression = fwdsink::Compression::kIdentity;
  o.forward.chunker.chunk_bytes = 4096;
  o.forward.backpressure.jitter = 0;  // exact waits; the jitter test sets its own
  return o;
}

}  // namespace

// ---- README "The producer contract", 4: a torn last row.

TEST_CASE("ATornTailGoesToDeadLettersWithItsEventAfterTheWholeLinesAreSent") {
  ScriptedServer server;
  const auto spool = FreshSpool("torn");
  const std::string whole = "{\"i\":0}\n{\"i\":1}\n";  // 16 bytes of whole lines

  SUBCASE("torn: the lines before it are sent, the tail goes to dead/ whole") {
    REQUIRE(WriteFile(spool / "ready" / "t.ndjson", whole + "{\"torn\":"));
    Harness h(Options(spool, server.url()));
    const auto r = h.driver->Tick();
    CHECK(r.torn == 1);
    CHECK(r.chunks_acked == 1);
    CHECK(r.rows_acked == 2);
    CHECK(h.driver->counters().torn_partitions == 1);
    // Sent: exactly the whole lines, never the unterminated tail.
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].body == whole);
    CHECK(reqs[0].key == "t:0-16");
    // The event names the partition and where the dead rows start.
    CHECK(h.Count("driver.dead_letter") == 1);
    CHECK(h.Events().back() == "driver.dead_letter t 16");
    CHECK(FileNames(spool / "ready").empty());
    const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
    REQUIRE(dead);
    REQUIRE(dead->entries.size() == 1);
    CHECK(dead->entries[0].partition == "t");
    CHECK(dead->entries[0].begin == 16);
    // The tail is kept, byte for byte, where the record says the dead rows start.
    CHECK(ReadFile(dead->entries[0].rows_path).substr(dead->entries[0].begin) == "{\"torn\":");
  }
  SUBCASE("twin: the same rows ending in a newline are delivered, nothing dead") {
    REQUIRE(WriteFile(spool / "ready" / "t.ndjson", whole + "{\"torn\":0}\n"));
    Harness h(Options(spool, server.url()));
    const auto r = h.driver->Tick();
    CHECK(r.torn == 0);
    CHECK(r.delivered == 1);
    CHECK(h.Count("driver.dead_letter") == 0);
    REQUIRE(server.requests().size() == 1);
    CHECK(server.requests()[0].body == whole + "{\"torn\":0}\n");
    const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
    REQUIRE(dead);
    CHECK(dead->entries.empty());
  }
}

// ---- README "The daemon": --max-split-requests N bounds one partition's bisection.

namespace {

// Refuses with 400 bad_row, without saying which line, every body that holds the bad
// row; accepts the rest. The sink must bisect to find it. Counts the requests.
class PoisonServer {
 public:
  static constexpr std::string_view kBad = "not json";
  PoisonServer() {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      requests_.fetch_add(1);
      if (req.body.find(kBad) != std::string::npos) {
        res.status = 400;
        res.set_content(R"({"error":"bad","details":{"reason":"bad_row"}})", "application/json");
        return;
      }
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      ended_ = true;
    });
    while (!server_.is_running() && !ended_) std::this_thread::yield();
  }
  ~PoisonServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/ingest"; }
  int requests() const { return requests_.load(); }

 private:
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> ended_{false};
  std::atomic<int> requests_{0};
  int port_ = 0;
};

// 16 rows, row 7 the bad one: one chunk, bisected 16 -> 8 -> 4 -> 2 -> 1.
void WriteSixteenRowsWithOneBad(const std::filesystem::path& spool) {
  std::string rows;
  for (int i = 0; i < 16; ++i) {
    rows += i == 7 ? std::string(PoisonServer::kBad) : "{\"i\":" + std::to_string(i) + "}";
    rows += "\n";
  }
  REQUIRE(WriteFile(spool / "ready" / "s.ndjson", rows));
}

}  // namespace

TEST_CASE("MaxSplitRequestsBoundsABisectionAndTheRefusalIsBlamedOnTheRequest") {
  PoisonServer server;
  const auto spool = FreshSpool("split");
  WriteSixteenRowsWithOneBad(spool);
  auto o = Options(spool, server.url());

  SUBCASE("a bound of 2: the refused chunk and one half, then respooled") {
    o.forward.max_split_requests = 2;
    Harness h(o);
    const auto r = h.driver->Tick();
    CHECK(server.requests() == 2);
    CHECK(r.respooled == 1);
    CHECK(r.poisoned_chunks == 0);
    CHECK(h.Count("driver.dead_letter") == 0);
    CHECK(FileNames(spool / "ready") == std::vector<std::string>{"s.ndjson"});
    // A refused request is not the data's fault: no failure recorded, no horizon.
    CHECK(h.driver->spool().LoadCursor("s").failures == 0);
  }
  SUBCASE("a bound of 4: 16, its first half, that half's halves, then respooled") {
    o.forward.max_split_requests = 4;
    Harness h(o);
    const auto r = h.driver->Tick();
    CHECK(server.requests() == 4);
    CHECK(r.respooled == 1);
    CHECK(r.poisoned_chunks == 0);
  }
  SUBCASE("twin: the default bound (256) isolates the row in 9 requests") {
    CHECK(o.forward.max_split_requests == 256);
    Harness h(o);
    const auto r = h.driver->Tick();
    // 16, 0-7, 0-3, 4-7, 4-5, 6-7, 6, 7 (dead-lettered), 8-15.
    CHECK(server.requests() == 9);
    CHECK(r.poisoned_chunks == 1);
    CHECK(r.delivered == 1);
    CHECK(r.respooled == 0);
    CHECK(FileNames(spool / "ready").empty());
  }
}

// ---- README "Jitter by default": the pauses between passes are spread ±50 %.

TEST_CASE("ThePausesBetweenPassesAreSpreadByHalfEitherWayAndNoMore") {
  ScriptedServer server;
  const auto spool = FreshSpool("jitter");  // empty: every pass is idle, pause 1 s
  auto o = Options(spool, server.url());
  // The random draws, in order: the lowest (0) and just under the highest (1) included,
  // so both bounds of the spread are reached (to the millisecond, rounded).
  const std::vector<double> draws = {0.0, 0.25, 0.5, 0.999999};
  std::size_t drawn = 0;
  auto random = [&] { return draws.at(drawn++ % draws.size()); };

  SUBCASE("jitter 0.5, the default: 1 s becomes 0.5 s .. 1.5 s") {
    CHECK(fwdsink::BackpressurePolicy{}.jitter == 0.5);
    o.forward.backpressure.jitter = 0.5;
    Harness h(o, random);
    CHECK(Text(h.RunFor(4)) == "500 750 1000 1500");
    CHECK(drawn == 4);  // one draw per pause
  }
  SUBCASE("jitter 0.2: 1 s becomes 0.8 s .. 1.2 s") {
    o.forward.backpressure.jitter = 0.2;
    Harness h(o, random);
    CHECK(Text(h.RunFor(4)) == "800 900 1000 1200");
  }
  SUBCASE("the overload levels' pauses are spread too (5 s, 15 s after throttled passes)") {
    o.forward.backpressure.jitter = 0.5;
    o.forward.backpressure.ladder = {10s};
    o.forward.backpressure.inline_budget = 10s;
    REQUIRE(WriteFile(spool / "ready" / "j.ndjson", "{\"j\":1}\n"));
    // A Retry-After past the budget: respooled at once, no wait taken.
    for (int i = 0; i < 4; ++i) server.Then(429, {{"Retry-After", "20"}});
    Harness h(o, random);
    const auto sleeps = h.RunFor(2);
    // Draws 0.0 and 0.5 lengthen the (untaken) Retry-After waits; 0.25 and 0.999999
    // spread the pauses of level 1 (5 s) and level 2 (15 s).
    CHECK(Text(sleeps) == "3750 22500");
    CHECK(drawn == 4);
  }
  SUBCASE("twin: jitter 0 keeps every pause at exactly 1 s, and draws nothing") {
    o.forward.backpressure.jitter = 0;
    Harness h(o, random);
    CHECK(Text(h.RunFor(4)) == "1000 1000 1000 1000");
    CHECK(drawn == 0);
  }
}

// ---- README "Hostile servers...": auth/config outages back off like throttling and
// never reach the horizon.

namespace {

// Two partitions, every request answered by `reply` (queued 400 times). Ticks once,
// moves the clock two horizons on, and ticks again.
std::unique_ptr<Harness> TwoTicksAcrossTheHorizon(ScriptedServer& server,
                                                  const std::filesystem::path& spool,
                                                  const fwdsink_test::Reply& reply,
                                                  fwdsink::EngineProfile profile) {
  for (int i = 0; i < 400; ++i) server.Then(reply);
  REQUIRE(WriteFile(spool / "ready" / "a.ndjson", "{\"a\":1}\n"));
  REQUIRE(WriteFile(spool / "ready" / "b.ndjson", "{\"b\":1}\n"));
  auto o = Options(spool, server.url());
  o.horizon = 1h;
  o.forward.responses.profile = profile;
  auto h = std::make_unique<Harness>(o);  // no token provider: a 401 cannot be fixed
  (void)h->driver->Tick();
  h->clock.Advance(2h);
  (void)h->driver->Tick();
  return h;
}

void CheckNothingGivenUp(Harness& h, const std::filesystem::path& spool) {
  CHECK(h.Count("driver.horizon_give_up") == 0);
  CHECK(h.driver->counters().horizon_give_ups == 0);
  CHECK(FileNames(spool / "ready") == std::vector<std::string>{"a.ndjson", "b.ndjson"});
  const auto dead = h.driver->spool().ListDead({}, h.clock.SystemNow());
  REQUIRE(dead);
  CHECK(dead->entries.empty());
  // No failure is on record, so no horizon is ever measured from it.
  for (const char* p : {"a", "b"}) {
    const auto c = h.driver->spool().LoadCursor(p);
    CHECK_FALSE(c.first_failure.has_value());
    CHECK(c.failures == 0);
  }
}

// ClickHouse's UNKNOWN_TABLE: our configuration is wrong.
const fwdsink_test::Reply kUnknownTable{
    .status = 404,
    .headers = {{"X-ClickHouse-Exception-Code", "60"}},
    .body = "Code: 60, e.displayText() = DB::Exception: Table default.nope doesn't exist.\n"};

}  // namespace

TEST_CASE("AuthAndConfigOutagesNeverReachTheHorizon") {
  ScriptedServer server;
  SUBCASE("401 with no token to be had") {
    const auto spool = FreshSpool("horizon_auth");
    auto h =
        TwoTicksAcrossTheHorizon(server, spool, {.status = 401}, fwdsink::EngineProfile::kGeneric);
    CHECK(h->driver->counters().auth_failures == 2);
    CHECK(server.requests().size() == 2);  // one per tick: the tick stops at once
    CheckNothingGivenUp(*h, spool);
  }
  SUBCASE("a configuration error (ClickHouse UNKNOWN_TABLE)") {
    const auto spool = FreshSpool("horizon_config");
    auto h =
        TwoTicksAcrossTheHorizon(server, spool, kUnknownTable, fwdsink::EngineProfile::kClickHouse);
    CHECK(h->driver->counters().config_stops == 2);
    CHECK(server.requests().size() == 2);
    CheckNothingGivenUp(*h, spool);
  }
  SUBCASE("twin: a server outage (503) does reach it, and goes to dead/ whole") {
    const auto spool = FreshSpool("horizon_503");
    auto h =
        TwoTicksAcrossTheHorizon(server, spool, {.status = 503}, fwdsink::EngineProfile::kGeneric);
    CHECK(h->Count("driver.horizon_give_up") == 2);
    CHECK(h->driver->counters().horizon_give_ups == 2);
    CHECK(FileNames(spool / "ready").empty());
    // The two were one pack (packing is on by default): its manifest went with them, and
    // so did the first member's record of the pack's failures. @ref LLP 0027#horizon
    CHECK(FileNames(spool / "packs").empty());
    CHECK(FileNames(spool / "state").empty());
  }
}

TEST_CASE("AnAuthOutageBacksOffLikeThrottling") {
  ScriptedServer server;
  const auto spool = FreshSpool("auth_backoff");
  REQUIRE(WriteFile(spool / "ready" / "a.ndjson", "{\"a\":1}\n"));
  SUBCASE("a 401 on every pass: the pauses climb the overload steps") {
    for (int i = 0; i < 20; ++i) server.Then(401);
    Harness h(Options(spool, server.url()));
    // Each failing pass raises the level one step: 5, 15, 30, 60 s, then 60 s again
    // (the default tick_pauses), never the idle poll of 1 s.
    CHECK(Text(h.RunFor(5)) == "5000 15000 30000 60000 60000");
    CHECK(server.requests().size() == 5);
    CHECK(h.driver->counters().overload_level == 4);
  }
  SUBCASE("twin: the token accepted, the partition goes and the pauses are the idle 1 s") {
    Harness h(Options(spool, server.url()));
    CHECK(Text(h.RunFor(3)) == "1000 1000 1000");
    CHECK(server.requests().size() == 1);
    CHECK(h.driver->counters().overload_level == 0);
  }
}
