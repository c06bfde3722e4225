// SPDX-License-Identifier: Apache-2.0
// The `fwdsink` daemon as a process: --once exit codes (78 for a pass of permanent errors
// among them), option errors, SIGTERM during a long wait, the dead-letter commands, and
// --version. Real processes on 127.0.0.1, bounded waits.
#include <doctest/doctest.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <zstd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/version.h"
#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::CountReady;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Event;
using fwdsink::test::Once;
using fwdsink::test::ReadFile;
using fwdsink::test::SealRows;
using fwdsink_test::ScriptedServer;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;  // any single daemon run
constexpr auto kWait = 20s;        // a --once pass, or any condition polled for
constexpr auto kPoll = 5ms;
constexpr auto kStopDeadline = 1s;      // SIGTERM to exit, per the contract
constexpr const char* kTag = "daemon";  // output in DIR/daemon.stdout and DIR/daemon.stderr
constexpr int kExitOk = 0, kExitUsage = 64, kExitDataErr = 65, kExitNoInput = 66,
              kExitTempFail = 75;

// Runs the daemon to completion and returns its exit code (-1 on timeout; it is then killed).
int RunDaemon(const fs::path& dir, std::vector<std::string> args, std::string* out = nullptr,
              std::string* err = nullptr) {
  DaemonProcess d(dir, kTag, std::move(args));
  const auto code = d.Wait(kRunTimeout);
  if (out) *out = d.out();
  if (err) *err = d.err();
  return code.value_or(-1);
}

std::uint64_t Generate(const fs::path& dir, const fs::path& spool, const std::string& bytes,
                       const std::string& partitions) {
  std::string out;
  REQUIRE(RunDaemon(dir,
                    {"generate", "--spool", spool.string(), "--bytes", bytes, "--partitions",
                     partitions, "--seed", "3"},
                    &out) == kExitOk);
  return std::stoull(out);
}

// Every line of the daemon's JSON log parsed back, fields in their written order.
std::vector<nlohmann::ordered_json> JsonLines(const std::string& err) {
  std::vector<nlohmann::ordered_json> lines;
  std::size_t start = 0;
  while (start < err.size()) {
    std::size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    lines.push_back(nlohmann::ordered_json::parse(err.substr(start, end - start), nullptr,
                                                  /*allow_exceptions=*/false));
    start = end + 1;
  }
  return lines;
}

template <class Snapshot>
std::vector<std::string> CounterNames() {
  std::vector<std::string> names;
  fwdsink::ForEachCounter(Snapshot{},
                          [&](const fwdsink::CounterField& f) { names.emplace_back(f.name); });
  return names;
}

std::vector<std::string> Keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  return keys;
}

// Runs `forward --once --log-json` over a spool at `spool` and returns the log lines,
// checking what every line shares: JSON, `ts` first, then `level`, then `event`.
std::vector<nlohmann::ordered_json> ForwardOnceLog(const fs::path& dir, const fs::path& spool,
                                                   const CentralProcess& central) {
  Generate(dir, spool, "20k", "1");
  std::string err;
  CHECK(RunDaemon(
            dir,
            {"forward", "--once", "--log-json", "--spool", spool.string(), "--url", Url(central)},
            nullptr, &err) == kExitOk);
  auto lines = JsonLines(err);
  REQUIRE(lines.size() >= 3);  // start, delivered, exit
  for (const auto& j : lines) {
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(Keys(j).size() >= 3);
    CHECK(Keys(j)[0] == "ts");
    CHECK(Keys(j)[1] == "level");
    CHECK(Keys(j)[2] == "event");
  }
  return lines;
}

}  // namespace

TEST_CASE("the daemon's JSON log: one writer, counters from their one list") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_json_log");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());

  SUBCASE("start and exit lines carry their fields; counters named by the lists") {
    const auto lines = ForwardOnceLog(dir, dir / "spool", central);
    const auto& start = lines.front();
    CHECK(start["event"] == "daemon.start");
    CHECK(Keys(start) ==
          std::vector<std::string>{"ts", "level", "event", "pid", "mode", "spool", "url"});
    CHECK(start["mode"] == "once");
    const auto& exit = lines.back();
    CHECK(exit["event"] == "daemon.exit");
    CHECK(Keys(exit) == std::vector<std::string>{"ts", "level", "event", "label", "partitions_left",
                                                 "rows_per_s", "bytes_per_s", "counters", "driver",
                                                 "spool", "exit_code", "why"});
    CHECK(Keys(exit["counters"]) == CounterNames<fwdsink::CountersSnapshot>());
    CHECK(Keys(exit["driver"]) == CounterNames<fwdsink::DriverCountersSnapshot>());
    CHECK(exit["driver"]["partitions_delivered"] == 1);
    CHECK(exit["exit_code"] == 0);
    CHECK(exit["why"] == "once");
  }
  SUBCASE("a spool path with invalid UTF-8 still yields JSON lines (U+FFFD)") {
    const auto lines = ForwardOnceLog(dir, dir / "spool-\xFF\xFE", central);
    const std::string logged = lines.front()["spool"];
    CHECK(logged.find("\xEF\xBF\xBD") != std::string::npos);
  }
  SUBCASE("twin: a spool path in valid UTF-8 is logged byte for byte") {
    const fs::path spool = dir / "spool-d\xC3\xA9j\xC3\xA0";  // "spool-déjà"
    const auto lines = ForwardOnceLog(dir, spool, central);
    CHECK(lines.front()["spool"] == spool.string());
  }
}

TEST_CASE("fwdsink forward --once exit codes") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_once");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");

  SUBCASE("everything delivered: 0, every row received, ready/ empty") {
    REQUIRE(central.Start());
    const auto rows = Generate(dir, spool, "200k", "2");
    REQUIRE(rows > 0);
    CHECK(RunDaemon(dir, {"forward", "--once", "--spool", spool.string(), "--url", Url(central),
                          "--chunk-bytes", "32k"}) == kExitOk);
    CHECK(central.received_rows().size() == rows);
    CHECK(CountReady(spool) == 0);
  }

  SUBCASE("503 past a tiny inline budget: 75, cursor kept, partition still ready") {
    REQUIRE(central.Start({"--fail-first", "1000", "--fail-status", "503"}));
    Generate(dir, spool, "50k", "1");
    std::string err;
    CHECK(RunDaemon(dir,
                    {"forward", "--once", "--spool", spool.string(), "--url", Url(central),
                     "--ladder", "0.2", "--inline-budget", "0.2"},
                    nullptr, &err) == kExitTempFail);
    CHECK(err.find("\"event\":\"forward.respool\"") != std::string::npos);
    CHECK(CountReady(spool) == 1);
    CHECK(central.received_rows().empty());
  }

  SUBCASE("a malformed row: 65, the good rows delivered, the bad one in dead letters") {
    REQUIRE(central.Start());
    SealRows(spool, {R"({"seq":1})", "this is not json", R"({"seq":3})"});
    CHECK(RunDaemon(dir, {"forward", "--once", "--spool", spool.string(), "--url", Url(central)}) ==
          kExitDataErr);
    const auto got = central.received_rows();
    CHECK(got == std::vector<std::string>{R"({"seq":1})", R"({"seq":3})"});
    CHECK(CountReady(spool) == 0);
    CHECK(fs::exists(spool / "dead"));
    CHECK_FALSE(fs::is_empty(spool / "dead"));
  }
}

TEST_CASE("fwdsink rejects bad options with 64 and names the option") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_usage");
  const std::string spool = (dir / "spool").string();
  const std::string url = "http://127.0.0.1:9/ingest";  // never contacted: parsing fails first
  struct Case {
    std::vector<std::string> extra;
    std::string option;
  };
  const Case cases[] = {
      {{"--bogus"}, "--bogus"},
      {{"--chunk-bytes"}, "--chunk-bytes"},  // missing value (last argument)
      {{"--chunk-bytes", "abc"}, "--chunk-bytes"},
      {{"--chunk-bytes", "0"}, "--chunk-bytes"},
      {{"--max-wait", "-5"}, "--max-wait"},
      {{"--ladder", "30,x,120"}, "--ladder"},
      {{"--ladder", "30,,120"}, "--ladder"},
      {{"--compression", "brotli"}, "--compression"},  // gzip is known since issue 10
      {{"--ladder", "10", "--inline-budget", "1"}, "--inline-budget"},  // via Validate()
      {{"--zstd-level", "99"}, "--zstd-level"},                         // via Validate()
      {{"--concurrency", "lots"}, "--concurrency"},                     // @ref LLP 0018#flags
      {{"--concurrency", "0"}, "--concurrency"},
      {{"--max-concurrency", "0"}, "--max-concurrency"},
      {{"--max-concurrency", "5000"}, "--max-concurrency"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.option);
    std::vector<std::string> args = {"forward", "--spool", spool, "--url", url};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    std::string err;
    CHECK(RunDaemon(dir, args, nullptr, &err) == kExitUsage);
    CHECK(err.find(c.option) != std::string::npos);
  }
  SUBCASE("a bad URL is reported as --url") {
    std::string err;
    CHECK(RunDaemon(dir, {"forward", "--spool", spool, "--url", "ftp://x/"}, nullptr, &err) ==
          kExitUsage);
    CHECK(err.find("--url") != std::string::npos);
  }
  SUBCASE("twin: the same options, valid, are accepted (empty spool: 0)") {
    CHECK(RunDaemon(dir, {"forward", "--once", "--spool", spool, "--url", url, "--chunk-bytes",
                          "64k", "--ladder", "30,60,120", "--compression", "identity",
                          "--inline-budget", "300"}) == kExitOk);
  }
  SUBCASE("twin: --concurrency adaptive|N and --max-concurrency N are accepted") {
    CHECK(RunDaemon(dir, {"forward", "--once", "--spool", spool, "--url", url, "--concurrency",
                          "adaptive", "--max-concurrency", "16"}) == kExitOk);
    CHECK(RunDaemon(dir, {"forward", "--once", "--spool", spool, "--url", url, "--concurrency",
                          "4"}) == kExitOk);
  }
}

TEST_CASE("SIGTERM during a long wait exits 0 within 1 s with the cursor at the last ack") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_sigterm");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // Posts 1 and 2 are accepted, post 3 gets 503 with Retry-After: 60.
  REQUIRE(central.Start({"--fail-every", "3", "--fail-status", "503", "--retry-after", "60"}));
  Generate(dir, spool, "100k", "1");
  DaemonProcess d(dir, kTag,
                  {"forward", "--spool", spool.string(), "--url", Url(central), "--chunk-bytes",
                   "8k", "--log-json", "--jitter", "0",
                   // One chunk at a time, so that posts 1, 2 and 3 are chunks 1, 2 and 3 (the
                   // limit starts at 4 since issue 39: LLP 0018#start).
                   "--window", "1"});

  // Bounded wait until the daemon reports the long pause.
  const auto deadline = std::chrono::steady_clock::now() + kRunTimeout;
  while (d.err().find("\"wait_ms\":60000") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
  }
  REQUIRE(d.err().find("\"wait_ms\":60000") != std::string::npos);

  const auto t0 = std::chrono::steady_clock::now();
  d.Signal(SIGTERM);
  const auto code = d.Wait(5s);
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(code.has_value());
  CHECK(*code == kExitOk);
  CHECK(took < kStopDeadline);
  CHECK(d.err().find("\"event\":\"daemon.exit\"") != std::string::npos);

  // Exactly the two accepted chunks were received; the cursor sits at their end.
  auto opened = fwdsink::Spool::Open(spool);
  REQUIRE(opened.ok());
  auto ready = opened->ListReady();
  REQUIRE(ready.ok());
  REQUIRE(ready->size() == 1);
  const fwdsink::CursorState cursor = opened->LoadCursor(ready->front().name);
  REQUIRE(cursor.status == fwdsink::CursorStatus::kOk);
  const auto received = fs::file_size(central.out_dir() / "received.ndjson");
  CHECK(received > 0);
  CHECK(cursor.offset == received);
  CHECK(central.Stats()["accepted_chunks"] == 2);
}

TEST_CASE("fwdsink dead list / requeue / purge round trip") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_dead");
  const fs::path spool = dir / "spool";
  const std::string sp = spool.string();
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  SealRows(spool, {R"({"seq":1})", "broken row", R"({"seq":3})"});
  REQUIRE(RunDaemon(dir, {"forward", "--once", "--spool", sp, "--url", Url(central)}) ==
          kExitDataErr);

  std::string out;
  REQUIRE(RunDaemon(dir, {"dead", "list", "--spool", sp, "--json"}, &out) == kExitOk);
  const auto all = nlohmann::json::parse(out);
  REQUIRE(all["total"] == 1);
  const std::string name = all["entries"][0]["name"];
  CHECK(all["entries"][0]["kind"] == "poison");
  CHECK(all["entries"][0]["status"] == 400);

  SUBCASE("filters select, and their twins do not") {
    REQUIRE(RunDaemon(
                dir,
                {"dead", "list", "--spool", sp, "--json", "--status", "400", "--search", "broken"},
                &out) == kExitOk);
    CHECK(nlohmann::json::parse(out)["total"] == 1);
    REQUIRE(RunDaemon(dir, {"dead", "list", "--spool", sp, "--json", "--status", "422"}, &out) ==
            kExitOk);
    CHECK(nlohmann::json::parse(out)["total"] == 0);
    REQUIRE(RunDaemon(dir, {"dead", "list", "--spool", sp, "--json", "--kind", "horizon"}, &out) ==
            kExitOk);
    CHECK(nlohmann::json::parse(out)["total"] == 0);
    CHECK(RunDaemon(dir, {"dead", "list", "--spool", sp, "--kind", "other"}) == kExitUsage);
  }

  SUBCASE("requeue puts the rows back into ready/; purge removes the record") {
    CHECK(CountReady(spool) == 0);
    REQUIRE(RunDaemon(dir, {"dead", "requeue", "--spool", sp, name}, &out) == kExitOk);
    // "<dead name> -> <new partition>": the new partition holds exactly the dead rows,
    // the bad row alone, byte for byte; the rows around it were delivered, not requeued.
    const std::string said = name + " -> ";
    REQUIRE(out.rfind(said, 0) == 0);
    REQUIRE(out.back() == '\n');
    const std::string requeued = out.substr(said.size(), out.size() - said.size() - 1);
    CHECK(requeued.rfind(name + ".requeued-", 0) == 0);
    CHECK(CountReady(spool) == 1);
    const fs::path back = spool / "ready" / (requeued + ".ndjson");
    REQUIRE(fs::exists(back));
    CHECK(fwdsink::test::ReadFile(back) == "broken row\n");
    CHECK(RunDaemon(dir, {"dead", "requeue", "--spool", sp, "no-such-dead-letter"}) ==
          kExitNoInput);

    CHECK(RunDaemon(dir, {"dead", "purge", "--spool", sp}) == kExitUsage);  // no selection
    REQUIRE(RunDaemon(dir, {"dead", "purge", "--spool", sp, name}) == kExitOk);
    REQUIRE(RunDaemon(dir, {"dead", "list", "--spool", sp, "--json"}, &out) == kExitOk);
    CHECK(nlohmann::json::parse(out)["total"] == 0);
    CHECK(RunDaemon(dir, {"dead", "purge", "--spool", sp, name}) == kExitNoInput);
  }
}

// README: "A pass in which every request fails the same way (404, 405, 415...) is named
// once as driver.permanent_error and exits 78 under --once" — without ClickHouse.
TEST_CASE("a pass of 404, 405 or 415 for every request is named once and exits 78") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_permanent");
  const fs::path spool = dir / "spool";
  SealRows(spool, 3, 1);
  SealRows(spool, 3, 2);
  // One request per partition (--pack-below 0); the packs' own case is the last.
  const std::vector<std::string> one_at_a_time = {"--concurrency", "1", "--pack-below", "0"};
  std::string log;
  for (const int status : {404, 405, 415}) {
    CAPTURE(status);
    ScriptedServer server;
    server.Then(status, {}, R"({"error":"no such thing"})");
    server.Then(status, {}, R"({"error":"no such thing"})");
    CHECK(Once(dir, "permanent", spool, server.url(), one_at_a_time, &log) == 78);
    CHECK(Count(log, Event("driver.permanent_error")) == 1);
    CHECK(log.find("\"status\":" + std::to_string(status)) != std::string::npos);
    CHECK(server.requests().size() == 2);  // one per partition: not retried in place
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 2);
  }
  SUBCASE("twin: one partition accepted, the pass is not permanent: 75, no event") {
    ScriptedServer server;
    server.Then(404, {}, R"({"error":"no such thing"})");
    server.Then(200);
    CHECK(Once(dir, "mixed", spool, server.url(), one_at_a_time, &log) == 75);
    CHECK(Count(log, Event("driver.permanent_error")) == 0);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 1);
  }
  SUBCASE("packs: the pack refused with 404 is the pass's one request, named once, 78") {
    // Partitions with no failure on record (the runs above gave a and b a cursor record,
    // which keeps a partition out of packs).
    const fs::path fresh = dir / "spool-packed";
    SealRows(fresh, 3, 1);
    SealRows(fresh, 3, 2);
    ScriptedServer server;
    server.Then(404, {}, R"({"error":"no such thing"})");
    CHECK(Once(dir, "packed", fresh, server.url(), {"--concurrency", "1"}, &log) == 78);
    CHECK(Count(log, Event("driver.permanent_error")) == 1);
    REQUIRE(server.requests().size() == 1);
    CHECK(server.requests()[0].key.starts_with("pack:"));
    CHECK(fwdsink::MeasureSpool(fresh)->ready_partitions == 2);
  }
}

// README: "fwdsink --version  # fwdsink, OpenSSL, zstd, cpp-httplib versions".
TEST_CASE("fwdsink --version names the versions of fwdsink and the libraries it runs with") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_version");
  // The project version, as CMakeLists.txt declares it.
  const std::string cmake = ReadFile(fs::path(FWDSINK_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch m;
  REQUIRE(std::regex_search(cmake, m, std::regex(R"(project\(fwdsink\s+VERSION\s+([0-9.]+))")));
  const std::string expected = "fwdsink " + m[1].str() + "\n" + OpenSSL_version(OPENSSL_VERSION) +
                               "\n" + "zstd " + ZSTD_versionString() + "\n" +
                               "cpp-httplib " CPPHTTPLIB_VERSION "\n";
  CHECK(fwdsink::VersionInfo() == expected);
  for (const char* spelling : {"--version", "version"}) {
    CAPTURE(spelling);
    DaemonProcess d(dir, "version", {spelling});
    REQUIRE(d.Wait(kWait) == std::optional<int>(0));
    CHECK(d.out() == expected);
    CHECK(d.err().empty());
  }
  SUBCASE("twin: a misspelling is a usage error that prints no versions") {
    DaemonProcess d(dir, "version", {"--verison"});
    CHECK(d.Wait(kWait) == std::optional<int>(64));
    CHECK(d.out().empty());
    CHECK(d.err().find("unknown command '--verison'") != std::string::npos);
  }
}
