// SPDX-License-Identifier: Apache-2.0
// The daemon backs off on every failure path, not only on throttling: a cursor that
// cannot be saved and a token the server keeps refusing each raise the overload level and
// are counted, and the refused token never moves data to dead/, even past the horizon;
// each twin heals and delivers. Against the real daemon and the reference receiver; the
// backoff pauses are measured between the daemon's own events (both bounds).
// @ref LLP 0023#backoff-everywhere
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/concurrency.h"
#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Entries;
using fwdsink::test::EventCount;
using fwdsink::test::ExitCounter;
using fwdsink::test::Forward;
using fwdsink::test::MakeSpool;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;

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

}  // namespace

// A cursor that cannot be saved backs off (overload level) instead of re-sending every
// second, and is counted.
TEST_CASE("ACursorThatCannotBeSavedBacksOffAndIsCounted") {
  const fs::path dir = CentralProcess::ScratchDir("backoff_cursor");
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

// A permanently wrong token backs off and never moves data to dead/, even past the
// horizon.
TEST_CASE("AuthFailuresBackOffAndNeverDeadLetterPastTheHorizon") {
  const fs::path dir = CentralProcess::ScratchDir("backoff_auth");
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
