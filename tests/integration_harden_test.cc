// SPDX-License-Identifier: Apache-2.0
// Hardening (issue 13, LLP 0023): one test per case an attacker or an unlucky operator
// found, each against the real daemon on real sockets, each with a twin that must not
// fire. Small real waits only; no timing is asserted beyond "did not hang", except the
// backoff pauses, measured between the daemon's own events (both bounds).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "central_process.h"
#include "daemon_process.h"
#include "fwdsink/concurrency.h"
#include "hostile_server.h"
#include "it_support.h"
#include "scripted_server.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ExitCounter;
using fwdsink::test::HostileServer;
using fwdsink::test::ReadFile;
using fwdsink::test::ReadLines;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;

// A spool with its folders, under a fresh scratch dir.
fs::path MakeSpool(const fs::path& dir) {
  const fs::path spool = dir / "spool";
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  return spool;
}

std::vector<std::string> Forward(const fs::path& spool, const std::string& url,
                                 std::vector<std::string> extra) {
  std::vector<std::string> args = {"forward", "--spool", spool.string(),
                                   "--url",   url,       "--log-json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::size_t EventCount(const std::string& log, const std::string& event) {
  return Count(log, "\"event\":\"" + event + "\"");
}

std::string Url(const CentralProcess& c) {
  return "http://127.0.0.1:" + std::to_string(c.port()) + "/ingest";
}

// The times (ms, from each line's "ts") of the log lines whose event is `event`.
std::vector<long long> EventTimesMs(const std::string& log, const std::string& event) {
  std::vector<long long> out;
  const std::string needle = "\"event\":\"" + event + "\"";
  for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
    const auto line = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
    // {"ts":"2026-12-01T20:31:07.218Z",...: days are not needed, a test spans minutes.
    const std::string ts = log.substr(line + 7, 24);
    REQUIRE(ts.size() == 24);
    REQUIRE(ts[23] == 'Z');
    const long long ms = ((std::stoll(ts.substr(11, 2)) * 60 + std::stoll(ts.substr(14, 2))) * 60 +
                          std::stoll(ts.substr(17, 2))) *
                             1000 +
                         std::stoll(ts.substr(20, 3));
    out.push_back(ms);
  }
  return out;
}

// The pause between a failing pass and the next: the overload level's first step past
// the idle poll (DriverOptions::tick_pauses, README "backoff everywhere"), jitter off.
constexpr long long kFirstBackoffMs = 5000;
// What a pass itself may add to it on a loaded machine (a scan, one local request).
constexpr long long kPassSlackMs = 1000;

// Checks that the first two `event`s of `log` are one backoff pause apart: never
// sooner (the pause was taken), not much later (it was the first step, not a later one).
void CheckOneBackoffApart(const std::string& log, const std::string& event) {
  const auto t = EventTimesMs(log, event);
  REQUIRE(t.size() >= 2);
  long long gap = t[1] - t[0];
  if (gap < 0) gap += 24LL * 3600 * 1000;  // across midnight
  MESSAGE(event << ": " << gap << " ms between the first two passes");
  CHECK(gap >= kFirstBackoffMs);
  CHECK(gap < kFirstBackoffMs + kPassSlackMs);
}

std::size_t Entries(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return 0;
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

}  // namespace

// Case 1: a server that drips its headers, or reads the body at a crawl, must not hold
// the sender past the request deadline; the abandoned attempt closes its connection.
TEST_CASE("DeadlinesCutADrippingOrCrawlingServerOffAndCloseTheConnection") {
  const fs::path dir = CentralProcess::ScratchDir("harden_deadline");
  SUBCASE("headers dripped one byte every 400 ms: --once gives up within the budget") {
    HostileServer drip(HostileServer::Mode::kDripHeaders, 400ms);
    const fs::path spool = MakeSpool(dir);
    WriteRows(spool / "ready" / "p.ndjson", 20);
    const auto t0 = std::chrono::steady_clock::now();
    DaemonProcess run(dir, "drip",
                      Forward(spool, drip.url(),
                              {"--once", "--read-timeout", "1", "--inline-budget", "1.5",
                               "--ladder", "0.2", "--max-wait", "0.5"}));
    REQUIRE(run.started());
    const auto code = run.Wait(8s);  // it used to hang for as long as the drip lasted
    CHECK(code == std::optional<int>(75));
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(run.err().find("response headers not received within the deadline") != std::string::npos);
  }
  SUBCASE("a body read at 20 KB/s: the attempt is cut off and its connection closed") {
    HostileServer crawl(HostileServer::Mode::kSlowRead, 50ms, 1024);
    const fs::path spool = MakeSpool(dir);
    WriteRows(spool / "ready" / "big.ndjson", 40'000, 100);  // 4 MB, one chunk
    DaemonProcess run(
        dir, "crawl",
        Forward(spool, crawl.url(),
                {"--compression", "identity", "--chunk-bytes", "4m", "--read-timeout", "1",
                 "--inline-budget", "1.5", "--ladder", "0.2", "--max-wait", "0.5", "--poll", "5"}));
    REQUIRE(run.started());
    // Still running (run mode, pausing after the respool): the socket must be closed by
    // the daemon itself, not by its exit.
    REQUIRE(WaitFor([&] { return EventCount(run.err(), "forward.respool") >= 1; }, 6s));
    CHECK(WaitFor([&] { return crawl.closed_by_client() >= crawl.connections(); }, 1s));
    CHECK(crawl.connections() == 1);
    const auto received = crawl.bytes_received();
    std::this_thread::sleep_for(300ms);
    CHECK(crawl.bytes_received() == received);  // nothing keeps draining
    CHECK(received < (1u << 20));               // far less than one copy of the chunk
    run.Signal(SIGTERM);
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
  }
  SUBCASE("twin: a slow but honest server (headers after 400 ms) is not cut off") {
    CentralProcess central(dir / "central");
    REQUIRE(central.Start({"--header-delay-ms", "400"}));
    const fs::path spool = MakeSpool(dir);
    WriteRows(spool / "ready" / "p.ndjson", 20);
    DaemonProcess run(
        dir, "honest",
        Forward(spool, Url(central),
                {"--once", "--inline-budget", "1.5", "--ladder", "0.2", "--max-wait", "0.5"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
    CHECK(central.received_rows().size() == 20);
  }
}

// Case 2: symlinks, hard links and FIFOs in ready/ are never sent; they go to
// quarantine/ with an event. A regular partition beside them is delivered.
TEST_CASE("SymlinksHardLinksAndFifosInReadyAreQuarantinedNeverSent") {
  const fs::path dir = CentralProcess::ScratchDir("harden_links");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  const fs::path secret = dir / "secret.txt";
  REQUIRE(fwdsink::test::WriteFile(secret, "{\"secret\":\"root:x:0:0\"}\n"));
  fs::create_symlink(secret, spool / "ready" / "leak.ndjson");
  WriteRows(dir / "linked.ndjson", 3);
  fs::create_hard_link(dir / "linked.ndjson", spool / "ready" / "twin.ndjson");
  REQUIRE(::mkfifo((spool / "ready" / "pipe.ndjson").c_str(), 0644) == 0);
  WriteRows(spool / "ready" / "good.ndjson", 5);  // the twin: still delivered

  DaemonProcess run(dir, "once", Forward(spool, Url(central), {"--once"}));
  CHECK(run.Wait(kRunTimeout) == std::optional<int>(65));  // not "everything delivered"
  const auto rows = central.received_rows();
  CHECK(rows.size() == 5);
  for (const auto& r : rows) CHECK(r.find("secret") == std::string::npos);
  CHECK(EventCount(run.err(), "driver.quarantine") == 3);
  CHECK(fs::is_symlink(spool / "quarantine" / "leak.ndjson"));
  CHECK(fs::exists(spool / "quarantine" / "twin.ndjson"));
  CHECK(fs::is_fifo(spool / "quarantine" / "pipe.ndjson"));
  CHECK(Entries(spool / "dead") == 0);
  CHECK(Entries(spool / "ready") == 0);
  CHECK(fwdsink::test::ReadFile(secret) == "{\"secret\":\"root:x:0:0\"}\n");  // untouched
}

// Case 3: a token with CR/LF is a configuration error naming its source, never sent.
TEST_CASE("ATokenWithCrLfIsAConfigurationErrorAndNothingIsSent") {
  const fs::path dir = CentralProcess::ScratchDir("harden_token");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--token", "good"}));
  const fs::path spool = MakeSpool(dir);
  WriteRows(spool / "ready" / "p.ndjson", 5);
  SUBCASE("injected header") {
    REQUIRE(fwdsink::test::WriteFile(dir / "token", "good\r\nX-Injected: 1\nHost: evil\n"));
    DaemonProcess run(
        dir, "bad",
        Forward(spool, Url(central), {"--once", "--token-file", (dir / "token").string()}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(64));
    CHECK(run.err().find("--token-file") != std::string::npos);
    CHECK(run.err().find("X-Injected") == std::string::npos);  // the value is never echoed
    CHECK(central.request_log().empty());
    CHECK(Entries(spool / "ready") == 1);
  }
  SUBCASE("twin: a clean token with a trailing newline is sent") {
    REQUIRE(fwdsink::test::WriteFile(dir / "token", "good\n"));
    DaemonProcess run(
        dir, "good",
        Forward(spool, Url(central), {"--once", "--token-file", (dir / "token").string()}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
    CHECK(central.received_rows().size() == 5);
  }
}

// Case 4: a 400 for the request (not the data) stops the bisection at the first
// well-formed row: respool with an error event, nothing dead-lettered.
TEST_CASE("ARequestLevel400IsNotPoisonAndDeadLettersNothing") {
  const fs::path dir = CentralProcess::ScratchDir("harden_400");
  CentralProcess central(dir / "central");
  const fs::path spool = MakeSpool(dir);
  SUBCASE("every request refused") {
    REQUIRE(central.Start(
        {"--fail-status", "400", "--fail-every", "1", "--fail-reason", "bad_header"}));
    WriteRows(spool / "ready" / "p.ndjson", 300);
    DaemonProcess run(dir, "refused", Forward(spool, Url(central), {"--once"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(75));
    CHECK(Entries(spool / "dead") == 0);
    CHECK(Entries(spool / "ready") == 1);
    CHECK(central.request_log().size() <= 12);  // log2(300) + 2, not ~2,000
    const std::string err = run.err();
    CHECK(EventCount(err, "forward.request_refused") == 1);
    CHECK(err.find("HTTP 400 (bad_header)") != std::string::npos);
  }
  SUBCASE("twin: one malformed row among good ones is still poison, alone") {
    REQUIRE(central.Start());
    auto lines = WriteRows(spool / "ready" / "p.ndjson", 20);
    lines[7] = "{\"i\":7,";  // not JSON
    fwdsink::test::WriteLines(spool / "ready" / "p.ndjson", lines);
    DaemonProcess run(dir, "poison", Forward(spool, Url(central), {"--once"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(65));
    CHECK(central.received_rows().size() == 19);
    CHECK(Entries(spool / "dead") == 2);  // one dead letter: rows + record
  }
}

// Case 5: one spool, one daemon: a second exits 75 naming the holder's pid.
TEST_CASE("ASecondDaemonOnTheSameSpoolExits75NamingTheHolder") {
  const fs::path dir = CentralProcess::ScratchDir("harden_lock");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  DaemonProcess first(dir, "first", Forward(spool, Url(central), {"--poll", "0.2"}));
  REQUIRE(WaitFor([&] { return EventCount(first.err(), "daemon.start") == 1; }, 5s));
  // The holder's pid, from its daemon.start line (std::regex trips GCC 12's
  // -Wmaybe-uninitialized under the sanitizers).
  const std::string log = first.err();
  const auto pid_at = log.find("\"pid\":");
  REQUIRE(pid_at != std::string::npos);
  const std::string pid = std::to_string(std::stoll(log.substr(pid_at + 6)));
  WriteRows(spool / "ready" / "p.ndjson", 5);
  DaemonProcess second(dir, "second", Forward(spool, Url(central), {"--once"}));
  CHECK(second.Wait(kRunTimeout) == std::optional<int>(75));
  CHECK(second.err().find("pid " + pid) != std::string::npos);
  first.Signal(SIGTERM);
  CHECK(first.Wait(kRunTimeout) == std::optional<int>(0));
  // Twin: once the holder is gone, the next daemon takes the spool.
  DaemonProcess third(dir, "third", Forward(spool, Url(central), {"--once"}));
  CHECK(third.Wait(kRunTimeout) == std::optional<int>(0));
  CHECK(central.received_rows().size() == 5);  // sent once, by one of them
}

// Case 6: a cursor that cannot be saved backs off (overload level) instead of
// re-sending every second, and is counted.
TEST_CASE("ACursorThatCannotBeSavedBacksOffAndIsCounted") {
  const fs::path dir = CentralProcess::ScratchDir("harden_cursor");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  const auto lines = WriteRows(spool / "ready" / "p.ndjson", 100);
  // The cursor's temp file cannot be created: a folder sits at its name (EISDIR).
  fs::create_directories(spool / "state" / ".p.cursor.tmp");
  {
    DaemonProcess run(
        dir, "blocked",
        Forward(spool, Url(central), {"--chunk-bytes", "1k", "--poll", "0.2", "--jitter", "0"}));
    // Two failing passes, one backoff pause apart (not the 0.2 s idle poll): each pass
    // sends its first chunk (the call's first refill needs no record) and stops at the
    // next refill's journal (LLP 0014#journal).
    REQUIRE(WaitFor([&] { return EventCount(run.err(), "driver.spool_error") >= 2; },
                    std::chrono::milliseconds(kFirstBackoffMs) + 5s));
    run.Signal(SIGTERM);  // in the next pause, 15 s long
    REQUIRE(run.Wait(kRunTimeout) == std::optional<int>(0));
    const std::string err = run.err();
    CheckOneBackoffApart(err, "driver.spool_error");
    CHECK(EventCount(err, "driver.spool_error") == 2);
    CHECK(ExitCounter(err, "cursor_save_failures") == 2);
    CHECK(ExitCounter(err, "overload_level") == 2);
  }
  // One refill a pass: nothing past the first refill goes out unrecorded (it was 4
  // requests before the journal, ~25 re-sends before the backoff). The first refill is
  // the limit's initial window, 4 of the 5 chunks (one request before issue 39:
  // LLP 0018#start).
  CHECK(central.request_log().size() == 2 * fwdsink::ConcurrencyPolicy{}.initial);
  // Twin: the disk heals; everything arrives exactly once.
  fs::remove(spool / "state" / ".p.cursor.tmp");
  DaemonProcess again(dir, "healed",
                      Forward(spool, Url(central), {"--once", "--chunk-bytes", "1k"}));
  CHECK(again.Wait(kRunTimeout) == std::optional<int>(0));
  auto rows = central.received_rows();
  std::sort(rows.begin(), rows.end());
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());
  CHECK(rows.size() == lines.size());
}

// Case 7: names outside the allowed set are quarantined and reported once each, and
// --once does not say "everything delivered".
TEST_CASE("BadNamesInReadyAreReportedOnceQuarantinedAndOnceIsNotClean") {
  const fs::path dir = CentralProcess::ScratchDir("harden_names");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  WriteRows(spool / "ready" / "with space.ndjson", 2);
  WriteRows(spool / "ready" /
                "donn\xc3\xa9"
                "es.ndjson",
            2);
  WriteRows(spool / "ready" / (std::string(230, 'n') + ".ndjson"), 2);
  WriteRows(spool / "ready" / "good.ndjson", 4);
  DaemonProcess run(dir, "once", Forward(spool, Url(central), {"--once"}));
  CHECK(run.Wait(kRunTimeout) == std::optional<int>(65));
  CHECK(EventCount(run.err(), "driver.quarantine") == 3);
  CHECK(Entries(spool / "quarantine") == 3);
  CHECK(central.received_rows().size() == 4);
  // Twin: nothing left to refuse, nothing reported again; a clean pass exits 0.
  DaemonProcess again(dir, "again", Forward(spool, Url(central), {"--once"}));
  CHECK(again.Wait(kRunTimeout) == std::optional<int>(0));
  CHECK(EventCount(again.err(), "driver.quarantine") == 0);
}

// Case 8: a permanently wrong token backs off and never moves data to dead/, even
// past the horizon.
TEST_CASE("AuthFailuresBackOffAndNeverDeadLetterPastTheHorizon") {
  const fs::path dir = CentralProcess::ScratchDir("harden_auth");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--token", "right"}));
  const fs::path spool = MakeSpool(dir);
  WriteRows(spool / "ready" / "p.ndjson", 10);
  REQUIRE(fwdsink::test::WriteFile(dir / "token", "wrong\n"));
  DaemonProcess run(dir, "wrong",
                    Forward(spool, Url(central),
                            {"--token-file", (dir / "token").string(), "--poll", "0.2", "--horizon",
                             "0.5", "--jitter", "0"}));
  // Two failing passes, one backoff pause apart (not the 0.2 s idle poll), the second
  // past the horizon.
  REQUIRE(WaitFor([&] { return EventCount(run.err(), "forward.auth_failed") >= 2; },
                  std::chrono::milliseconds(kFirstBackoffMs) + 5s));
  run.Signal(SIGTERM);  // in the next pause, 15 s long
  REQUIRE(run.Wait(kRunTimeout) == std::optional<int>(0));
  CheckOneBackoffApart(run.err(), "forward.auth_failed");
  CHECK(EventCount(run.err(), "forward.auth_failed") == 2);
  CHECK(central.request_log().size() == 4);  // per pass a 401 and a refresh, then the backoff
  CHECK(ExitCounter(run.err(), "auth_failures") == 2);
  CHECK(ExitCounter(run.err(), "horizon_give_ups") == 0);
  CHECK(Entries(spool / "dead") == 0);
  CHECK(Entries(spool / "ready") == 1);
  // Twin: the right token delivers at once.
  REQUIRE(fwdsink::test::WriteFile(dir / "token", "right\n"));
  DaemonProcess fixed(
      dir, "right",
      Forward(spool, Url(central), {"--once", "--token-file", (dir / "token").string()}));
  CHECK(fixed.Wait(kRunTimeout) == std::optional<int>(0));
  CHECK(central.received_rows().size() == 10);
}

// Case 9: rows appended after hand-over are never unlinked unsent.
TEST_CASE("RowsAppendedAfterHandOverAreSentNotUnlinked") {
  const fs::path dir = CentralProcess::ScratchDir("harden_handover");
  fwdsink_test::ScriptedServer server;
  server.Then(fwdsink_test::Reply{.status = 200, .delay = 600ms});
  const fs::path spool = MakeSpool(dir);
  const fs::path part = spool / "ready" / "p.ndjson";
  const auto first = WriteRows(part, 10);
  const std::vector<std::string> args =
      Forward(spool, server.url(), {"--once", "--compression", "identity"});
  DaemonProcess run(dir, "first", args);
  REQUIRE(WaitFor([&] { return server.requests().size() == 1; }, 5s));
  {
    std::ofstream out(part, std::ios::binary | std::ios::app);  // the producer misbehaves
    out << "{\"late\":1}\n{\"late\":2}\n";
  }
  CHECK(run.Wait(kRunTimeout) == std::optional<int>(75));  // kept, not delivered
  CHECK(EventCount(run.err(), "driver.handover_changed") == 1);
  REQUIRE(fs::exists(part));
  DaemonProcess rest(dir, "rest", args);
  CHECK(rest.Wait(kRunTimeout) == std::optional<int>(0));
  CHECK_FALSE(fs::exists(part));
  std::string all;
  for (const auto& r : server.requests()) all += r.body;
  std::string expected;
  for (const auto& l : first) expected += l + "\n";
  expected += "{\"late\":1}\n{\"late\":2}\n";
  CHECK(all == expected);  // every row once, the late ones included
  // Twin: the first run's log says nothing changed for an untouched partition.
  CHECK(EventCount(rest.err(), "driver.handover_changed") == 0);
}

// Case 10: the spool's folders come back when they vanish while running.
TEST_CASE("SpoolFoldersAreRecreatedWhenTheyVanish") {
  const fs::path dir = CentralProcess::ScratchDir("harden_rmrf");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  DaemonProcess run(dir, "run", Forward(spool, Url(central), {"--poll", "0.2"}));
  REQUIRE(WaitFor([&] { return EventCount(run.err(), "daemon.start") == 1; }, 5s));
  // Twin first: a healthy spool is not "repaired".
  std::this_thread::sleep_for(500ms);
  CHECK(EventCount(run.err(), "driver.spool_repaired") == 0);
  fs::remove_all(spool / "ready");
  CHECK(WaitFor([&] { return fs::is_directory(spool / "ready"); }, 3s));
  WriteRows(spool / "incoming" / "late.ndjson.tmp", 3);
  fs::rename(spool / "incoming" / "late.ndjson.tmp", spool / "ready" / "late.ndjson");
  CHECK(WaitFor([&] { return central.received_rows().size() == 3; }, 5s));
  CHECK(EventCount(run.err(), "driver.spool_repaired") == 1);
  CHECK(EventCount(run.err(), "driver.spool_error") == 0);
  run.Signal(SIGTERM);
  CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
}
