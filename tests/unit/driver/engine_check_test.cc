// SPDX-License-Identifier: Apache-2.0
// The deduplication-window check of --profile clickhouse (issue 24) against a scripted
// server: the formula, the table named in the URL, and what is said for a window too
// small, big enough, a plain MergeTree, and a user without the rights to read it.
// @ref LLP 0017#dedup-window
#include "fwdsink/engine_check.h"

#include <doctest/doctest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "fwdsink/settings.h"
#include "support/scripted_server.h"

namespace {

using fwdsink::EngineCheckResult;
using fwdsink_test::ScriptedServer;
using namespace std::chrono_literals;
using Verdict = EngineCheckResult::Verdict;

constexpr double kFleetRate = 10;  // inserts/s
constexpr const char* kInsert = "/?query=INSERT+INTO+db.events+FORMAT+JSONEachRow&user=ingest";
constexpr const char* kReplicated =
    "ReplicatedMergeTree\tCREATE TABLE db.events ( seq UInt64) ENGINE = ReplicatedMergeTree("
    "'/clickhouse/tables/events', '{replica}') ORDER BY seq SETTINGS index_granularity = 8192\n";
constexpr const char* kDefaults =
    "replicated_deduplication_window\t100\nreplicated_deduplication_window_seconds\t604800\n";

fwdsink::ForwardOptions Options(const ScriptedServer& server) {
  fwdsink::ForwardOptions o;
  o.url = server.url(kInsert);
  o.responses.profile = fwdsink::EngineProfile::kClickHouse;
  o.basic_auth = fwdsink::BasicAuth{"ingest", "secret"};
  return o;
}

EngineCheckResult Check(const ScriptedServer& server) {
  const fwdsink::ForwardOptions o = Options(server);
  return fwdsink::CheckDedupWindow(o, kFleetRate, fwdsink::ClickHouseQueryRunner(o));
}

}  // namespace

TEST_CASE("DedupWindowNeeded: inline budget plus max wait, times the fleet's insert rate") {
  const fwdsink::BackpressurePolicy defaults;  // 300 s + 300 s
  CHECK(fwdsink::DedupWindowNeeded(defaults, 10).blocks == 6000);
  CHECK(fwdsink::DedupWindowNeeded(defaults, 10).seconds == 600s);
  CHECK(fwdsink::DedupWindowNeeded(defaults, 0.5).blocks == 300);
  fwdsink::BackpressurePolicy shorter{.inline_budget = 60s};
  shorter.max_wait = 10s;
  CHECK(fwdsink::DedupWindowNeeded(shorter, 25).blocks == 1750);
  CHECK(fwdsink::DedupWindowNeeded(shorter, 25).seconds == 70s);
  SUBCASE("a sub-second part rounds up, a nonsense rate counts as none") {
    shorter.max_wait = 10'500ms;
    CHECK(fwdsink::DedupWindowNeeded(shorter, 1).seconds == 71s);
    CHECK(fwdsink::DedupWindowNeeded(shorter, -3).blocks == 0);
    CHECK(fwdsink::DedupWindowNeeded(shorter, std::nan("")).blocks == 0);
  }
}

TEST_CASE("InsertTable: the table of the URL's INSERT query") {
  CHECK(fwdsink::InsertTable("http://h:8123?query=INSERT+INTO+t+FORMAT+JSONEachRow") == "t");
  CHECK(fwdsink::InsertTable(
            "http://h:8123/?user=u&query=insert%20into%20db.t%20FORMAT%20JSONEachRow") == "db.t");
  CHECK(fwdsink::InsertTable(
            "http://h/?query=INSERT+INTO+TABLE+`db`.`t`(a,b)+FORMAT+JSONEachRow") == "db.t");
  CHECK_FALSE(fwdsink::InsertTable("http://h:8123/ingest").has_value());
  CHECK_FALSE(fwdsink::InsertTable("http://h:8123/?query=SELECT+1").has_value());
}

TEST_CASE("CheckDedupWindow: the server's default window of 100 blocks is too small: warned") {
  ScriptedServer server;
  server.Then(200, {}, kReplicated);
  server.Then(200, {}, kDefaults);
  const EngineCheckResult r = Check(server);
  CHECK(r.verdict == Verdict::kTooSmall);
  CHECK(r.event.name == fwdsink::events::kDriverEngineWarning);
  CHECK(fwdsink::EventLevel(r.event.name) == fwdsink::LogLevel::kWarn);
  CHECK(r.event.reason == "dedup_window_too_small");
  CHECK(r.note.find("replicated_deduplication_window = 100,") != std::string::npos);
  CHECK(r.note.find("needs 6000 blocks") != std::string::npos);
  REQUIRE(r.window.has_value());
  CHECK(r.window->blocks == 100);
  // Over the same endpoint and credentials, the INSERT query left out, the rest kept.
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].target == "/?user=ingest");
  CHECK(requests[0].authorization == fwdsink::BasicAuthorization("ingest", "secret"));
  CHECK(requests[0].body.find("system.tables WHERE database = 'db' AND name = 'events'") !=
        std::string::npos);
  CHECK(requests[1].body.find("system.merge_tree_settings") != std::string::npos);

  SUBCASE("the twin: the table's own SETTINGS give 10,000 blocks: nothing said") {
    ScriptedServer big;
    big.Then(200, {},
             std::string(kReplicated)
                 .replace(std::string(kReplicated).find("SETTINGS ") + 9, 0,
                          "replicated_deduplication_window = 10000, "));
    big.Then(200, {}, kDefaults);
    const EngineCheckResult ok = Check(big);
    CHECK(ok.verdict == Verdict::kEnough);
    CHECK(ok.event.name.empty());
    CHECK(ok.note.empty());
    REQUIRE(ok.window.has_value());
    CHECK(ok.window->blocks == 10000);
  }
  SUBCASE("a window of enough blocks but too few seconds is also too small") {
    ScriptedServer few;
    few.Then(200, {}, kReplicated);
    few.Then(200, {},
             "replicated_deduplication_window\t100000\n"
             "replicated_deduplication_window_seconds\t60\n");
    CHECK(Check(few).verdict == Verdict::kTooSmall);
  }
}

TEST_CASE("CheckDedupWindow: a plain MergeTree dedupes nothing in 18.16: warned") {
  ScriptedServer server;
  server.Then(200, {},
              "MergeTree\tCREATE TABLE db.events ( seq UInt64) ENGINE = MergeTree "
              "ORDER BY seq SETTINGS index_granularity = 8192\n");
  server.Then(200, {}, kDefaults);
  const EngineCheckResult r = Check(server);
  CHECK(r.verdict == Verdict::kNotReplicated);
  CHECK(r.event.name == fwdsink::events::kDriverEngineWarning);
  CHECK(r.event.reason == "not_replicated");
  CHECK(!r.note.empty());
}

TEST_CASE("CheckDedupWindow: a user without the rights to read it gets one info event") {
  ScriptedServer server;
  server.Then(500, {{"X-ClickHouse-Exception-Code", "497"}},
              "Code: 497, e.displayText() = DB::Exception: ingest: Not enough privileges");
  const EngineCheckResult r = Check(server);
  CHECK(r.verdict == Verdict::kUnreadable);
  CHECK(r.event.name == fwdsink::events::kDriverEngineUnchecked);
  CHECK(fwdsink::EventLevel(r.event.name) == fwdsink::LogLevel::kInfo);
  CHECK(r.event.message.find("Not enough privileges") != std::string::npos);
  CHECK(r.note.empty());                 // nothing for /readyz
  CHECK(server.requests().size() == 1);  // and no second query

  SUBCASE("no such table, or no server at all: the same one info event") {
    ScriptedServer none;
    none.Then(200, {}, "");
    CHECK(Check(none).verdict == Verdict::kUnreadable);
    fwdsink::ForwardOptions o = Options(none);
    o.url = "http://127.0.0.1:1/?query=INSERT+INTO+t+FORMAT+JSONEachRow";
    const EngineCheckResult down =
        fwdsink::CheckDedupWindow(o, kFleetRate, fwdsink::ClickHouseQueryRunner(o));
    CHECK(down.verdict == Verdict::kUnreadable);
    CHECK(down.event.name == fwdsink::events::kDriverEngineUnchecked);
  }
}

TEST_CASE("CheckDedupWindow: the generic profile checks nothing and sends nothing") {
  ScriptedServer server;
  fwdsink::ForwardOptions o = Options(server);
  o.responses.profile = fwdsink::EngineProfile::kGeneric;
  const EngineCheckResult r =
      fwdsink::CheckDedupWindow(o, kFleetRate, fwdsink::ClickHouseQueryRunner(o));
  CHECK(r.verdict == Verdict::kNotApplicable);
  CHECK(r.event.name.empty());
  CHECK(server.requests().empty());
}

TEST_CASE("EngineCheckWorker: runs once per trigger on its own thread; joins at the end") {
  std::mutex mu;
  std::condition_variable cv;
  int runs = 0;
  {
    fwdsink::EngineCheckWorker worker([&](std::stop_token) {
      std::lock_guard lock(mu);
      ++runs;
      cv.notify_all();
    });
    worker.Trigger();
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, 10s, [&] { return runs == 1; }));
  }
  CHECK(runs == 1);  // no run without a trigger
}

TEST_CASE("EngineCheckWorker: Stop() aborts a query the server does not answer") {
  ScriptedServer server;
  server.Then(fwdsink_test::Reply{.status = 200, .body = kReplicated, .delay = 60s});
  const fwdsink::ForwardOptions o = Options(server);
  std::mutex mu;
  std::string error = "(not run)";
  {
    fwdsink::EngineCheckWorker worker([&](std::stop_token stop) {
      const fwdsink::QueryAnswer a = fwdsink::ClickHouseQueryRunner(o, stop)("SELECT 1");
      std::lock_guard lock(mu);
      error = a.error;
    });
    worker.Trigger();
    // The phase: the query is at the server, which holds its answer back.
    while (server.requests().empty()) std::this_thread::yield();
    worker.Stop();
  }                                   // joins
  CHECK(error.find("aborted") == 0);  // not a timeout 5 s later, not the answer a minute later

  SUBCASE("the twin: a runner whose token is never stopped gets the answer") {
    ScriptedServer quick;
    quick.Then(200, {}, "1\n");
    CHECK(fwdsink::ClickHouseQueryRunner(Options(quick))("SELECT 1").body == "1\n");
  }
}

TEST_CASE("ClickHouseQueryRunner: a URL without a path queries '/', other parameters kept") {
  ScriptedServer server;
  server.Then(200, {}, "1\n");
  server.Then(200, {}, "1\n");
  fwdsink::ForwardOptions o = Options(server);
  o.url = server.url("?query=INSERT+INTO+t+FORMAT+JSONEachRow");
  CHECK(fwdsink::ClickHouseQueryRunner(o)("SELECT 1").body == "1\n");
  o.url = server.url("?database=db&query=INSERT+INTO+t+FORMAT+JSONEachRow&user=u#frag");
  CHECK(fwdsink::ClickHouseQueryRunner(o)("SELECT 1").body == "1\n");
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].target == "/");
  CHECK(requests[1].target == "/?database=db&user=u");
  CHECK(requests[1].body == "SELECT 1");
}
