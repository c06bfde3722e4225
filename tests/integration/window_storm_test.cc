// SPDX-License-Identifier: Apache-2.0
// A SIGKILL storm against the window of chunks (issue 22): the daemon forwards 8
// partitions with `--window 4` to a throttled fwdsink-central and is killed at random
// moments at least kKills times, restarted each time, then drained. Every row must be
// in the receiver's store exactly once, and each restart may re-send (as duplicate keys
// the receiver had already accepted) at most `window` chunks per partition: the journal
// is durable before a new range leaves, so a crash owes only the journaled ranges.
// LABEL storm. The seed is printed; FWDSINK_STORM_SEED=<n> replays the kill moments.
// @ref LLP 0023#crash-bound
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/request_log.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ReadyRows;
using fwdsink::test::SettledLogSize;
using fwdsink::test::WaitFor;
using namespace std::chrono_literals;

constexpr int kKills = 22;
constexpr std::size_t kWindow = 4;
constexpr const char* kWindowFlag = "4";
// ~6 MB of rows in 8 partitions is ~0.9 MB on the wire (zstd) in ~100 chunks of 64 KiB;
// at 45 KB/s the job needs ~20 s of sending, so the kills (a few accepted chunks apart)
// land mid-stream and the drain still has work.
constexpr const char* kSpoolBytes = "6m";
constexpr const char* kPartitions = "8";
constexpr const char* kRate = "45000";
constexpr const char* kBurst = "32768";
constexpr const char* kChunkBytes = "64k";
constexpr int kFinalRuns = 5;
constexpr auto kRunTimeout = 60s;
constexpr auto kEventTimeout = 20s;

// The keys re-sent as duplicates by the requests log[from, to), per partition.
std::map<std::string, std::set<std::string>> Resent(const std::vector<nlohmann::json>& log,
                                                    std::size_t from, std::size_t to) {
  std::map<std::string, std::set<std::string>> out;
  for (std::size_t i = from; i < to; ++i) {
    if (log[i].value("reason", "") != "duplicate") continue;
    const std::string key = log[i].value("key", std::string());
    out[key.substr(0, key.rfind(':'))].insert(key);
  }
  return out;
}

std::uint64_t Seed() {
  const char* v = std::getenv("FWDSINK_STORM_SEED");
  if (v && *v) return std::strtoull(v, nullptr, 10);
  return static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count() %
                                    1'000'000);
}

}  // namespace

TEST_CASE("WindowStorm: SIGKILLs at random moments, then a drain: every row exactly once") {
  const std::uint64_t seed = Seed();
  MESSAGE("FWDSINK_STORM_SEED=" << seed);
  INFO("FWDSINK_STORM_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const fs::path dir = CentralProcess::ScratchDir("window_storm");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--rate", kRate, "--burst", kBurst}));
  const std::string url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
  DaemonProcess gen(dir, "generate",
                    {"generate", "--spool", spool.string(), "--bytes", kSpoolBytes, "--partitions",
                     kPartitions, "--seed", "11"});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(kRunTimeout) == std::optional<int>(0));
  std::vector<std::string> input = ReadyRows(spool);
  REQUIRE(input.size() > 10'000);

  const std::vector<std::string> forward = {
      "forward",   "--spool",   spool.string(), "--url",    url,       "--chunk-bytes",
      kChunkBytes, "--window",  kWindowFlag,    "--ladder", "0.1,0.2", "--max-wait",
      "1",         "--log-json"};

  std::vector<std::size_t> starts;  // where each run's requests begin in the log
  int kills = 0;
  for (int i = 0; i < kKills; ++i) {
    CAPTURE(i);
    starts.push_back(SettledLogSize(central));
    const auto accepted_before = central.Stats()["accepted_chunks"].get<std::size_t>();
    // A random moment: after 1 to 6 more accepted chunks, plus up to 40 ms, so a kill
    // may land while requests are in flight, answers are read or the journal is saved.
    const std::size_t after = 1 + rng() % 6;
    const auto extra = std::chrono::milliseconds(rng() % 40);
    DaemonProcess run(dir, "run" + std::to_string(i), forward);
    REQUIRE(run.started());
    const bool reached = WaitFor(
        [&] {
          const auto stats = central.Stats();
          return stats.is_object() &&
                 stats["accepted_chunks"].get<std::size_t>() >= accepted_before + after;
        },
        kEventTimeout);
    std::this_thread::sleep_for(extra);
    run.Signal(SIGKILL);
    const auto code = run.Wait(kRunTimeout);
    INFO("daemon stderr:\n" << run.err());
    REQUIRE(reached);
    REQUIRE(code.has_value());
    if (*code != 128 + SIGKILL) break;  // it had finished: nothing left to kill
    ++kills;
  }
  CHECK(kills >= 20);
  CHECK(central.received_rows().size() < input.size());  // twin: the drain has work

  starts.push_back(SettledLogSize(central));
  std::optional<int> last;
  for (int run = 0; run < kFinalRuns && last != std::optional<int>(0); ++run) {
    DaemonProcess once(dir, "final" + std::to_string(run), [&] {
      auto a = forward;
      a.push_back("--once");
      return a;
    }());
    REQUIRE(once.started());
    last = once.Wait(kRunTimeout);
  }
  REQUIRE(last == std::optional<int>(0));

  std::vector<std::string> received = central.received_rows();
  CHECK(received.size() == input.size());
  std::sort(input.begin(), input.end());
  std::sort(received.begin(), received.end());
  CHECK(std::adjacent_find(received.begin(), received.end()) == received.end());
  CHECK(received == input);

  // Run by run: the first run re-sent nothing; each run after a kill re-sent at most
  // `window` chunks per partition (the first final pass carries the last kill's).
  const auto log = central.request_log();
  starts.push_back(log.size());
  CHECK(Resent(log, starts[0], starts[1]).empty());
  std::size_t resent = 0, worst = 0;
  for (std::size_t run = 1; run + 1 < starts.size(); ++run) {
    CAPTURE(run);
    for (const auto& [partition, keys] : Resent(log, starts[run], starts[run + 1])) {
      CAPTURE(partition);
      CHECK(keys.size() <= kWindow);
      resent += keys.size();
      worst = std::max(worst, keys.size());
    }
  }
  MESSAGE("kills: " << kills << ", chunks re-sent in all: " << resent
                    << ", most per partition per crash: " << worst << " (window " << kWindow
                    << ")");
}
