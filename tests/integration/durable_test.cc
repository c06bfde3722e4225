// SPDX-License-Identifier: Apache-2.0
// Issue 25 item 8 (LLP 0023#durable-progress): a pass whose acknowledgements could not
// be made durable is no progress. A partition whose only chunk holds poisoned rows is
// split by the receiver's 400s; with every cursor save and every dead letter failing
// (state/ and dead/ unwritable, through the fault shim), each pass got acks inside the
// split and used to count them as progress: no backoff, hundreds of POSTs. Against the
// real daemon and the reference receiver; small real waits only.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ExitCounter;
using fwdsink::test::ReadLines;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;
constexpr std::size_t kRows = 300;

struct Input {
  std::vector<std::string> good, poison;
};

// One 300-row partition with two malformed rows, small enough to be one chunk.
Input WriteSpool(const fs::path& spool) {
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  auto lines = fwdsink::test::WriteRows(spool / "ready" / "p.ndjson", kRows, 100);
  lines[90] = "{\"broken\":\"one";
  lines[210] = "{\"broken\":\"two";
  fwdsink::test::WriteLines(spool / "ready" / "p.ndjson", lines);
  Input in;
  for (auto& l : lines) (l.starts_with("{\"broken") ? in.poison : in.good).push_back(l);
  return in;
}

std::vector<std::string> Args(const fs::path& spool, const CentralProcess& c,
                              std::vector<std::string> extra) {
  std::vector<std::string> args = {"forward",
                                   "--spool",
                                   spool.string(),
                                   "--url",
                                   "http://127.0.0.1:" + std::to_string(c.port()) + "/ingest",
                                   "--chunk-bytes",
                                   "1m",
                                   "--log-json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Runs the daemon for `run` with every open of a temp file in the spool failing (the
// cursor's and the dead letters' atomic writes), then SIGTERM; returns its stderr.
std::string RunUnwritable(const fs::path& dir, const fs::path& spool, const CentralProcess& c,
                          std::chrono::milliseconds run) {
  DaemonProcess d(dir, "unwritable", Args(spool, c, {"--poll", "0.2"}),
                  {"LD_PRELOAD=" FWDSINK_FAULT_SHIM, "ASAN_OPTIONS=verify_asan_link_order=0",
                   "FWDSINK_FAULT_OP=open", "FWDSINK_FAULT_PATH=.tmp", "FWDSINK_FAULT_NTH=0"});
  REQUIRE(d.started());
  std::this_thread::sleep_for(run);
  d.Signal(SIGTERM);
  const auto code = d.Wait(kRunTimeout);
  INFO("daemon stderr:\n" << d.err());
  REQUIRE(code == std::optional<int>(0));
  return d.err();
}

}  // namespace

TEST_CASE("AcksThatCouldNotBeMadeDurableAreNoProgressAndBackOff") {
  const fs::path dir = CentralProcess::ScratchDir("durable_split");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = dir / "spool";
  const Input input = WriteSpool(spool);
  const std::string err = RunUnwritable(dir, spool, central, 4000ms);
  const std::size_t posts = central.request_log().size();
  MESSAGE("POSTs in 4 s with state/ and dead/ unwritable: " << posts);
  // One pass bisects to both poisoned rows in ~20 POSTs; the passes after it back off
  // (1 s, 2 s, ... at the overload level), where it was a pass every 0.2 s: ~300.
  CHECK(posts <= 60);
  CHECK(ExitCounter(err, "overload_level") >= 1);
  CHECK(ExitCounter(err, "cursor_save_failures") >= 1);
  CHECK(fs::exists(spool / "ready" / "p.ndjson"));  // nothing lost

  // Twin: the disk heals; every good row arrives once, the two poisoned ones in dead/.
  DaemonProcess healed(dir, "healed", Args(spool, central, {"--once"}));
  const auto code = healed.Wait(kRunTimeout);
  CHECK(code.has_value());
  std::map<std::string, int> got;
  for (auto& r : central.received_rows()) got[r] += 1;
  std::size_t missing = 0;
  for (auto& r : input.good) missing += got.count(r) ? 0 : 1;
  CHECK(missing == 0);
  auto dead = fwdsink::test::DeadRows(spool / "dead");
  std::sort(dead.begin(), dead.end());
  auto poison = input.poison;
  std::sort(poison.begin(), poison.end());
  CHECK(dead == poison);
}

// Twin: with a writable spool the same partition is one quick pass (the split and
// the dead letters are progress), with no backoff.
TEST_CASE("ASplitChunkWithPoisonOnAWritableSpoolIsProgress") {
  const fs::path dir = CentralProcess::ScratchDir("durable_writable");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = dir / "spool";
  const Input input = WriteSpool(spool);
  DaemonProcess run(dir, "writable", Args(spool, central, {"--once"}));
  REQUIRE(run.Wait(kRunTimeout).has_value());
  CHECK(ExitCounter(run.err(), "overload_level") == 0);
  CHECK(fwdsink::test::DeadRows(spool / "dead").size() == 2);
  CHECK(!fs::exists(spool / "ready" / "p.ndjson"));
}

// A poison that cannot be dead-lettered while the window has acknowledged chunks past
// the split it sits in (LLP 0014#window-refusal): the cursor moves to the poison and
// keeps the journal past it, so the clean pass re-sends no acknowledged chunk under a
// second key. It stored 20 rows twice when the cursor moved there without its journal.
TEST_CASE("APoisonThatCannotBeDeadLetteredKeepsTheChunksAckedPastItsSplit") {
  const fs::path dir = CentralProcess::ScratchDir("durable_window_poison");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = dir / "spool";
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  // 1 KiB chunks of 100-byte rows: ~10 rows each; the poison is the last row of the
  // second chunk, so its bisection acks the rows before it, and the chunks after it
  // (in flight at once) are acknowledged while it runs.
  auto lines = fwdsink::test::WriteRows(spool / "ready" / "p.ndjson", 40, 100);
  const std::size_t poisoned = 19;
  lines[poisoned] = "{\"broken\":\"last of the second chunk";
  fwdsink::test::WriteLines(spool / "ready" / "p.ndjson", lines);
  std::vector<std::string> args = {
      "forward",       "--once",   "--spool",
      spool.string(),  "--url",    "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest",
      "--chunk-bytes", "1k",       "--compression",
      "identity",      "--window", "8",
      "--concurrency", "8",        "--log-json"};
  {
    DaemonProcess faulty(
        dir, "faulty", args,
        {"LD_PRELOAD=" FWDSINK_FAULT_SHIM, "ASAN_OPTIONS=verify_asan_link_order=0",
         "FWDSINK_FAULT_OP=rename", "FWDSINK_FAULT_PATH=" + (spool / "dead").string(),
         "FWDSINK_FAULT_NTH=0"});
    REQUIRE(faulty.started());
    REQUIRE(faulty.Wait(kRunTimeout).has_value());
    INFO("faulty stderr:\n" << faulty.err());
    REQUIRE(fwdsink::test::DeadRows(spool / "dead").empty());  // the fault fired
    REQUIRE(fs::exists(spool / "ready" / "p.ndjson"));
  }
  const auto requests_before = central.request_log().size();
  DaemonProcess clean(dir, "clean", args);
  const auto code = clean.Wait(kRunTimeout);
  INFO("clean stderr:\n" << clean.err());
  CHECK(code == std::optional<int>(65));  // the pass wrote a dead letter
  std::map<std::string, int> got;
  for (auto& r : central.received_rows()) got[r] += 1;
  std::size_t missing = 0, twice = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i == poisoned) continue;
    missing += got[lines[i]] == 0 ? 1 : 0;
    twice += got[lines[i]] > 1 ? 1 : 0;
  }
  MESSAGE("requests of the clean pass: " << central.request_log().size() - requests_before);
  CHECK(missing == 0);
  CHECK(twice == 0);
  CHECK(fwdsink::test::DeadRows(spool / "dead") == std::vector<std::string>{lines[poisoned]});
}
