// SPDX-License-Identifier: Apache-2.0
// Operating the daemon on a spool that is damaged or busy, as processes on 127.0.0.1:
// /readyz answers 503 naming a spool folder while it is unusable and 200 once it is back,
// with /healthz 200 throughout; `fwdsink status` writes nothing, the spool's whole tree
// identical before and after, while a command that does write shows. The rest of /readyz
// and status is in ops_test.cc. @ref LLP 0025
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/spool_writer.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"
#include "support/metrics_client.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::DeadRowFiles;
using fwdsink::test::Get;
using fwdsink::test::Got;
using fwdsink::test::MetricsAddress;
using fwdsink::test::ReadFile;
using fwdsink::test::SealRows;
using fwdsink::test::WriteFile;
using namespace std::chrono_literals;

constexpr auto kWait = 20s;         // a --once pass, or any condition polled for
constexpr auto kStopDeadline = 5s;  // SIGTERM to exit

// Polls `done` every 10 ms until it holds or `timeout` passes.
template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds timeout = kWait) {
  return fwdsink::test::WaitFor(done, timeout, 10ms);
}

using Tree = std::map<std::string, std::string>;

Tree Snapshot(const fs::path& root) {
  Tree t;
  auto note = [&](const fs::path& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    std::string v = std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
                    std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) v += " " + ReadFile(p);
    t[fs::relative(p, root).string()] = v;
  };
  note(root);
  for (const auto& e : fs::recursive_directory_iterator(root)) note(e.path());
  return t;
}

// Returns the entries that differ between two snapshots, "name name ..." ("" if none).
std::string Changed(const Tree& a, const Tree& b) {
  std::string out;
  auto add = [&](const std::string& k) { out += (out.empty() ? "" : " ") + k; };
  for (const auto& [k, v] : a) {
    if (!b.contains(k) || b.at(k) != v) add(k);
  }
  for (const auto& [k, v] : b) {
    if (!a.contains(k)) add(k);
  }
  return out;
}

// A spool with everything status reads: two ready partitions (one with a cursor and a
// failure on record), a dead letter, the last error, the lock file.
void FillSpool(const fs::path& spool) {
  const std::string a = SealRows(spool, 4, 1);
  SealRows(spool, 2, 2);
  auto s = fwdsink::Spool::Open(spool);
  REQUIRE(s.ok());
  REQUIRE(s->SaveCursor(a, 0).ok());
  REQUIRE(s->RecordFailure(a, std::chrono::system_clock::now() - 1h).ok());
  const std::string rows = "{\"bad\":1}\n";
  WriteFile(s->PartitionPath("20260101T000000.000Z-1-00000009"), rows);
  REQUIRE(s->DeadLetterChunk("20260101T000000.000Z-1-00000009", 0, rows.size(), rows, 400,
                             "bad_row", std::chrono::system_clock::now())
              .ok());
  fs::remove(s->PartitionPath("20260101T000000.000Z-1-00000009"));
  fwdsink::Event e{.name = "forward.give_up", .partition = a, .status = 503, .reason = "outage"};
  REQUIRE(fwdsink::WriteLastError(spool, e, std::chrono::system_clock::now()).ok());
  auto lock = fwdsink::SpoolLock::Acquire(spool);  // writes SPOOL/lock, released at once
  REQUIRE(lock.ok());
}

}  // namespace

// README: "/readyz (200 when the spool's folders are usable ...; 503 with the reason
// otherwise)".
TEST_CASE("/readyz answers 503 naming the folder while a spool folder is unusable") {
  const fs::path dir = CentralProcess::ScratchDir("ops_spool_readyz");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  SealRows(spool, 3, 1);
  DaemonProcess d(dir, "readyz",
                  {"forward", "--spool", spool.string(), "--url", Url(central), "--metrics-listen",
                   "127.0.0.1:0", "--log-json", "--poll", "50ms"});
  REQUIRE(d.started());
  const std::string address = MetricsAddress(d);
  REQUIRE_FALSE(address.empty());
  // Twin first: usable folders, 200.
  REQUIRE(WaitFor([&] { return central.received_rows().size() == 3; }));
  Got ready;
  REQUIRE(WaitFor([&] { return (ready = Get(address, "/readyz")).status == 200; }));
  CHECK(ready.body == "ready\n");

  for (const char* folder : {"state", "dead"}) {
    CAPTURE(folder);
    // A file where the folder was (root passes every permission check on a folder, so
    // a file stands in for the unusable folder): the driver cannot recreate it. The
    // driver repairs a missing folder every tick (50 ms here), so it may win the race
    // between the removal and the write: try again until the file is there.
    REQUIRE(WaitFor([&] {
      std::error_code ec;
      fs::remove_all(spool / folder, ec);
      return WriteFile(spool / folder, "not a folder");
    }));
    REQUIRE(WaitFor([&] { return (ready = Get(address, "/readyz")).status == 503; }));
    CHECK(ready.body.find("spool folder " + (spool / folder).string() + " is not usable") !=
          std::string::npos);
    CHECK(Get(address, "/healthz").status == 200);
    // Put back: ready again.
    fs::remove(spool / folder);
    fs::create_directories(spool / folder);
    REQUIRE(WaitFor([&] { return (ready = Get(address, "/readyz")).status == 200; }));
  }
  d.Signal(SIGTERM);
  CHECK(d.Wait(kStopDeadline) == std::optional<int>(0));
}

// README: "fwdsink status ... takes no lock and writes nothing": the spool's whole tree
// (every entry's type, size, bytes and mtime, folders included) before and after.
TEST_CASE("fwdsink status writes nothing: the spool's tree is identical before and after") {
  const fs::path dir = CentralProcess::ScratchDir("ops_spool_status");
  const fs::path spool = dir / "spool";
  FillSpool(spool);

  SUBCASE("a spool as the daemon leaves it") {}
  SUBCASE("a spool without incoming/ (a producer that does not use SpoolWriter)") {
    fs::remove_all(spool / "incoming");
  }
  // mtimes have a granularity: a write now would show, not hide in the same tick.
  std::this_thread::sleep_for(20ms);
  const Tree before = Snapshot(spool);
  for (const bool json : {true, false}) {
    CAPTURE(json);
    std::vector<std::string> args = {"status", "--spool", spool.string()};
    if (json) args.push_back("--json");
    DaemonProcess status(dir, "status", args);
    REQUIRE(status.Wait(kWait) == std::optional<int>(0));
    CHECK(status.out().find("20260101T000000.000Z-1-00000009") == std::string::npos);
    CHECK_FALSE(status.out().empty());
  }
  CHECK(Changed(before, Snapshot(spool)) == "");

  // Twin: a command that does write (requeueing the dead letter) shows in the snapshot.
  const std::string dead_name = fs::path(DeadRowFiles(spool).at(0)).stem().string();
  DaemonProcess requeue(dir, "requeue", {"dead", "requeue", "--spool", spool.string(), dead_name});
  REQUIRE(requeue.Wait(kWait) == std::optional<int>(0));
  CHECK_FALSE(Changed(before, Snapshot(spool)).empty());
}
