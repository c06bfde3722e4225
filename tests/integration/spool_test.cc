// SPDX-License-Identifier: Apache-2.0
// The daemon and its spool as producers and other local users leave it: symlinks, hard
// links, FIFOs and bad names in ready/ are quarantined, never sent, and reported once;
// one daemon per spool; rows appended after hand-over are sent, not unlinked; the spool's
// folders come back when they vanish. Each against the real daemon on real sockets, each
// with a twin that must not fire. Small real waits only; no timing is asserted beyond
// "did not hang". @ref LLP 0023#spool @ref LLP 0023#spool-lock @ref LLP 0023#handover
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Entries;
using fwdsink::test::EventCount;
using fwdsink::test::Forward;
using fwdsink::test::MakeSpool;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;

}  // namespace

// Symlinks, hard links and FIFOs in ready/ are never sent; they go to quarantine/ with
// an event. A regular partition beside them is delivered.
TEST_CASE("SymlinksHardLinksAndFifosInReadyAreQuarantinedNeverSent") {
  const fs::path dir = CentralProcess::ScratchDir("spool_links");
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

// One spool, one daemon: a second exits 75 naming the holder's pid.
TEST_CASE("ASecondDaemonOnTheSameSpoolExits75NamingTheHolder") {
  const fs::path dir = CentralProcess::ScratchDir("spool_lock");
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

// Names outside the allowed set are quarantined and reported once each, and --once does
// not say "everything delivered".
TEST_CASE("BadNamesInReadyAreReportedOnceQuarantinedAndOnceIsNotClean") {
  const fs::path dir = CentralProcess::ScratchDir("spool_names");
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

// Rows appended after hand-over are never unlinked unsent.
TEST_CASE("RowsAppendedAfterHandOverAreSentNotUnlinked") {
  const fs::path dir = CentralProcess::ScratchDir("spool_handover");
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

// The spool's folders come back when they vanish while running.
TEST_CASE("SpoolFoldersAreRecreatedWhenTheyVanish") {
  const fs::path dir = CentralProcess::ScratchDir("spool_folders");
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
