// SPDX-License-Identifier: Apache-2.0
// Packs of small partitions through crashes (LLP 0027): the `fwdsink` daemon against
// `fwdsink-central`, SIGKILLed between a pack's manifest and its ack, and in a storm of
// kills over 5,000 small partitions. Every row must arrive exactly once, no member may
// be lost, every re-sent key must carry the same bytes, and once the spool is drained
// no manifest or temp file may be left. The twin runs the same storm with packing off.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
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
using fwdsink::test::ReadyRows;
using fwdsink::test::WaitFor;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 30s;
constexpr int kFinalRuns = 5;

// Files of `dir` whose name ends with `ext` (every file for ""); 0 when it is absent.
std::size_t CountFiles(const fs::path& dir, const std::string& ext = "") {
  if (!fs::exists(dir)) return 0;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    n += ext.empty() || e.path().filename().string().ends_with(ext);
  }
  return n;
}

std::size_t DotFiles(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string()[0] == '.';
  return n;
}

std::vector<std::string> Generate(const fs::path& dir, const fs::path& spool,
                                  const std::string& bytes, const std::string& partitions) {
  DaemonProcess gen(
      dir, "generate",
      {"generate", "--spool", spool.string(), "--bytes", bytes, "--partitions", partitions});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(kRunTimeout) == std::optional<int>(0));
  return ReadyRows(spool);
}

// Seals `n` partitions of 5 rows (~1 KB) straight into ready/, oldest first by name,
// as a producer's rename does (fwdsink generate fsyncs every seal: minutes for 5,000 on
// a loaded machine). Returns every row.
std::vector<std::string> SmallPartitions(const fs::path& spool, std::size_t n) {
  fs::create_directories(spool / "ready");
  std::vector<std::string> rows;
  const std::string pad(160, 'x');
  for (std::size_t p = 0; p < n; ++p) {
    char name[64];
    std::snprintf(name, sizeof name, "20260101T000000.000Z-1-%08zu", p + 1);
    std::string body;
    for (int i = 0; i < 5; ++i) {
      rows.push_back("{\"p\":" + std::to_string(p) + ",\"i\":" + std::to_string(i) + ",\"pad\":\"" +
                     pad + "\"}");
      body += rows.back() + "\n";
    }
    const fs::path tmp = spool / (std::string(name) + ".tmp");
    REQUIRE(fwdsink::test::WriteFile(tmp, body));
    fs::rename(tmp, spool / "ready" / (std::string(name) + ".ndjson"));
  }
  return rows;
}

constexpr std::size_t kStormPartitions = 5000;
// The twin sends one request and one fsync of ready/ per partition: 5,000 of them took
// 160 s on the shared machine; with the window's limit learning from each request's own
// round trip it falls to 1 on a loaded disk (LLP 0014#window), so 300 keep it short.
constexpr std::size_t kTwinPartitions = 300;

// Runs `args` --once until a pass exits 0.
void Finish(const fs::path& dir, std::vector<std::string> args) {
  args.push_back("--once");
  std::optional<int> last;
  for (int run = 0; run < kFinalRuns && last != std::optional<int>(0); ++run) {
    DaemonProcess once(dir, "final" + std::to_string(run), args);
    REQUIRE(once.started());
    last = once.Wait(kRunTimeout);
  }
  REQUIRE(last == std::optional<int>(0));
}

// Every row once, the spool drained, nothing of a pack left; every key the receiver saw
// twice carried the same bytes both times.
void CheckExactlyOnceAndDrained(const CentralProcess& central, const fs::path& spool,
                                std::vector<std::string> input) {
  std::vector<std::string> received = central.received_rows();
  CHECK(received.size() == input.size());
  std::sort(input.begin(), input.end());
  std::sort(received.begin(), received.end());
  CHECK(std::adjacent_find(received.begin(), received.end()) == received.end());
  CHECK(received == input);
  CHECK(CountFiles(spool / "ready") == 0);
  CHECK(CountFiles(spool / "packs") == 0);
  CHECK(CountFiles(spool / "state") == 0);
  CHECK(CountFiles(spool / "dead") == 0);
  CHECK(CountFiles(spool / "quarantine") == 0);
  std::map<std::string, std::set<std::string>> bodies;
  for (const auto& line : central.request_log()) {
    const std::string reason = line.value("reason", "");
    if (reason != "accepted" && reason != "duplicate") continue;
    bodies[line.value("key", "")].insert(line.value("body_fnv1a", ""));
  }
  for (const auto& [key, fnv] : bodies) {
    CAPTURE(key);
    CHECK(fnv.size() == 1);  // a key is never re-cut: the same bytes on every re-send
  }
}

std::vector<std::string> ForwardArgs(const fs::path& spool, const CentralProcess& central,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"forward",
                                "--spool",
                                spool.string(),
                                "--url",
                                "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest",
                                "--ladder",
                                "0.1,0.2",
                                "--max-wait",
                                "1",
                                "--log-json"};
  // Packing is off by default (LLP 0027): these runs turn it on, unless told otherwise.
  if (std::find(extra.begin(), extra.end(), "--pack-below") == extra.end()) {
    a.insert(a.end(), {"--pack-below", "auto"});
  }
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("SIGKILL between a pack's manifest and its ack: the same pack goes again, same key") {
  const fs::path dir = CentralProcess::ScratchDir("packs_crash");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // Each answer waits 2 s: the kill lands while the pack is on the wire.
  REQUIRE(central.Start({"--header-delay-ms", "2000"}));
  const auto input = Generate(dir, spool, "40k", "20");
  const std::size_t parts = CountFiles(spool / "ready");
  REQUIRE(parts >= 10);
  const auto args = ForwardArgs(spool, central, {});
  {
    DaemonProcess run(dir, "run", args);
    REQUIRE(run.started());
    const bool sent = WaitFor(
        [&] {
          const auto s = central.Stats();
          return CountFiles(spool / "packs", ".pack") == 1 && s.is_object() && s["requests"] == 1;
        },
        20s);
    run.Signal(SIGKILL);
    REQUIRE(run.Wait(kRunTimeout) == std::optional<int>(128 + SIGKILL));
    REQUIRE(sent);
  }
  CHECK(CountFiles(spool / "packs", ".pack") == 1);  // the manifest survived the kill
  CHECK(CountFiles(spool / "ready") == parts);
  Finish(dir, args);
  const auto log = central.request_log();
  REQUIRE(log.size() >= 2);
  const std::string key = log.front().value("key", "");
  CHECK(key.rfind("pack:", 0) == 0);
  for (const auto& line : log) CHECK(line.value("key", "") == key);  // resent under its key
  CheckExactlyOnceAndDrained(central, spool, input);
}

namespace {

// Kills the daemon at least `kills` times at varied points, then finishes the spool.
// Kill points cycle: once the receiver accepted one or two more requests; once a
// manifest is on disk (a pack about to leave or on the wire); a short random time after
// start (scanning, choosing, delivering).
void Storm(const std::string& tag, const std::vector<std::string>& extra, std::size_t partitions,
           int kills, bool work_left) {
  const fs::path dir = CentralProcess::ScratchDir(tag);
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // A bucket slow enough that the storm ends before the spool drains: the packs of 5,000
  // partitions are ~230 KB on the wire (zstd), ~12 s at this rate. At 150 kB/s the
  // faster pack path (LLP 0027#figures) drained it within the kills about one run in two.
  REQUIRE(central.Start({"--rate", "20000", "--burst", "8192"}));
  const auto input = SmallPartitions(spool, partitions);
  REQUIRE(CountFiles(spool / "ready") == partitions);
  const auto args = ForwardArgs(spool, central, extra);
  int landed = 0;     // kills that found the daemon still forwarding
  int with_work = 0;  // kills made while ready/ still held partitions
  for (int i = 0; i < kills; ++i) {
    CAPTURE(i);
    const auto before = central.Stats()["accepted_chunks"].get<std::size_t>();
    DaemonProcess run(dir, "run" + std::to_string(i), args);
    REQUIRE(run.started());
    // Every wait also ends once ready/ is empty (a drained spool accepts nothing more).
    const auto accepted = [&](std::size_t n) {
      return CountFiles(spool / "ready") == 0 ||
             central.Stats()["accepted_chunks"].get<std::size_t>() >= before + n;
    };
    switch (i % 3) {
      case 0: (void)WaitFor([&] { return accepted(1 + i % 2); }, 20s); break;
      case 1:  // packing off has no manifest: the first accepted request instead
        (void)WaitFor(
            [&] { return work_left ? CountFiles(spool / "packs", ".pack") > 0 : accepted(1); }, 5s);
        break;
      default: std::this_thread::sleep_for(std::chrono::milliseconds(20 + (i * 37) % 180));
    }
    // Whether this kill interrupts work: counted by construction at the kill, not by how
    // much the machine happened to drain before the storm ended (issue 38 item 7: under
    // -j2 the spool was sometimes drained by the last kill, and a final count of rows
    // failed 25,000 < 25,000).
    with_work += CountFiles(spool / "ready") > 0;
    run.Signal(SIGKILL);
    const auto code = run.Wait(kRunTimeout);
    REQUIRE(code.has_value());
    landed += *code == 128 + SIGKILL;
  }
  CHECK(landed >= 20);
  MESSAGE(tag << ": " << with_work << " of " << kills << " kills left partitions in ready/");
  // Packs: the kills hit a spool with work left (the first ones always do: they wait for
  // one accepted request of ~230 KB at 20 kB/s).
  if (work_left) CHECK(with_work >= kills / 4);
  Finish(dir, args);
  // Packs: far fewer requests than partitions; packing off: at least one each.
  const auto requests = central.Stats()["requests"].get<std::size_t>();
  CHECK((work_left ? requests < partitions / 10 : requests >= partitions));
  CheckExactlyOnceAndDrained(central, spool, input);
  CHECK(DotFiles(spool / "ready") == 0);
  CHECK(DotFiles(spool / "state") == 0);
  CHECK(DotFiles(spool / "packs") == 0);
}

}  // namespace

TEST_CASE("A SIGKILL storm over 5,000 small partitions in packs: every row exactly once") {
  Storm("packs_storm", {"--chunk-bytes", "64k"}, kStormPartitions, 24, true);
}

// Twin: the same storm with packing off still passes (one request per partition).
TEST_CASE("The same storm with --pack-below 0 (300 partitions): every row exactly once") {
  Storm("packs_storm_off", {"--chunk-bytes", "64k", "--pack-below", "0"}, kTwinPartitions, 20,
        false);
}

// A torn member (its last line without '\n') is taken out of its pack and sent alone in
// the same pass: its whole lines are delivered, its tail goes to dead/, and `--once`
// says 65 now, not on the next run (issue 38 item 5). The twin: a pack of sound members
// exits 0 with ready/ empty. @ref LLP 0027#changed
TEST_CASE("A torn pack member is handled in the pass that found it") {
  for (const bool torn : {true, false}) {
    CAPTURE(torn);
    const fs::path dir = CentralProcess::ScratchDir(torn ? "packs_torn" : "packs_sound");
    const fs::path spool = dir / "spool";
    auto input = SmallPartitions(spool, 10);
    if (torn) {
      // The fourth partition loses the newline of its last row: 4 whole rows and a tail.
      const fs::path p = spool / "ready" / "20260101T000000.000Z-1-00000004.ndjson";
      fs::resize_file(p, fs::file_size(p) - 1);
      input.erase(input.begin() + 3 * 5 + 4);
    }
    CentralProcess central(dir / "central");
    REQUIRE(central.Start());
    DaemonProcess once(dir, "once", [&] {
      auto a = ForwardArgs(spool, central, {"--chunk-bytes", "64k"});
      a.push_back("--once");
      return a;
    }());
    REQUIRE(once.started());
    const auto code = once.Wait(kRunTimeout);
    CHECK(code == std::optional<int>(torn ? 65 : 0));
    CHECK(CountFiles(spool / "ready", ".ndjson") == 0);  // nothing left for a next run
    // The torn tail as a dead letter (its rows and its record), nothing else.
    CHECK(CountFiles(spool / "dead", ".ndjson") == (torn ? 1u : 0u));
    std::map<std::string, int> stored;
    for (const auto& r : central.received_rows()) stored[r] += 1;
    CHECK(stored.size() == input.size());
    for (const auto& row : input) CHECK(stored[row] == 1);
  }
}
