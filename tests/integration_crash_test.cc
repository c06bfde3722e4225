// SPDX-License-Identifier: Apache-2.0
// Crash safety of the `fwdsink` daemon: SIGKILL it at several points while it forwards
// to a throttled receiver, restart it each time, and check that the receiver ends up
// with every input row exactly once (the cursor is persisted after each ack; a chunk
// re-sent after a crash carries the same Idempotency-Key and is deduplicated), and
// that each crash re-sent at most two chunks the receiver already had (the README's
// promise, LLP 0023#crash-bound). The second case kills it while it splits chunks
// (413 from a body limit, 400 to isolate malformed rows) and dead-letters rows.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cstdint>
#include <fstream>
#include <map>

#include "central_process.h"
#include "daemon_process.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ReadLines;
using namespace std::chrono_literals;

// ~4 MB of rows is ~600 KB on the wire (zstd); at 150 KB/s after a 64 KB burst the
// whole run needs ~4 s of throttled sending, so every kill lands mid-stream.
constexpr const char* kSpoolBytes = "4m";
constexpr const char* kPartitions = "4";
constexpr const char* kRate = "150000";
constexpr const char* kBurst = "65536";
constexpr const char* kChunkBytes = "64k";
// When each run is killed, measured from its start. Bounded: 4 runs, < 3 s in all.
constexpr std::chrono::milliseconds kKillAfter[] = {300ms, 700ms, 500ms, 900ms};
constexpr int kFinalRuns = 5;  // --once passes allowed to finish the job
constexpr auto kRunTimeout = 30s;

// Every row currently sealed in spool/ready, in no particular order.
std::vector<std::string> ReadyRows(const fs::path& spool) {
  std::vector<std::string> rows;
  for (const auto& e : fs::directory_iterator(spool / "ready")) {
    if (e.path().extension() != ".ndjson") continue;
    auto part = ReadLines(e.path());
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

// Chunks the receiver got again under a key it had already accepted, and their bytes.
std::size_t DuplicateChunks(const CentralProcess& central) {
  std::size_t n = 0;
  for (const auto& line : central.request_log()) {
    if (line.is_object() && line.value("reason", "") == "duplicate") ++n;
  }
  return n;
}
std::uint64_t DuplicateBytes(const CentralProcess& central) {
  std::uint64_t n = 0;
  for (const auto& line : central.request_log()) {
    if (line.is_object() && line.value("reason", "") == "duplicate") {
      n += line.value("body_bytes", std::uint64_t{0});
    }
  }
  return n;
}

// The rows in spool/dead/*.ndjson.
std::vector<std::string> DeadRows(const fs::path& spool) {
  std::vector<std::string> rows;
  if (!fs::exists(spool / "dead")) return rows;
  for (const auto& e : fs::directory_iterator(spool / "dead")) {
    if (e.path().extension() != ".ndjson") continue;
    auto part = ReadLines(e.path());
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

// A README promise: a crash re-sends at most this many chunks with the same key (a
// split chunk counts as one: its halves come back under their own keys).
constexpr std::size_t kMaxResentPerCrash = 2;

// Kills the daemon (run with `extra` flags) at several points, restarts it, lets it
// finish; every row must arrive exactly once, and each crash re-send at most two chunks
// per sender in flight.
void CrashAndFinish(const std::string& tag, const std::vector<std::string>& extra,
                    std::size_t senders) {
  const fs::path dir = CentralProcess::ScratchDir(tag);
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--rate", kRate, "--burst", kBurst}));
  const std::string url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";

  DaemonProcess gen(
      dir, "generate",
      {"generate", "--spool", spool.string(), "--bytes", kSpoolBytes, "--partitions", kPartitions});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(kRunTimeout) == std::optional<int>(0));
  std::vector<std::string> input = ReadyRows(spool);
  REQUIRE(input.size() > 10'000);

  const std::vector<std::string> forward = {
      "forward",   "--spool",  spool.string(), "--url",      url, "--chunk-bytes",
      kChunkBytes, "--ladder", "0.1,0.2",      "--max-wait", "1", "--log-json"};
  std::vector<std::string> forward_args = forward;
  forward_args.insert(forward_args.end(), extra.begin(), extra.end());

  int killed_mid_stream = 0;
  for (std::size_t i = 0; i < std::size(kKillAfter); ++i) {
    CAPTURE(i);
    DaemonProcess run(dir, "run" + std::to_string(i), forward_args);
    REQUIRE(run.started());
    std::this_thread::sleep_for(kKillAfter[i]);  // the crash point, not a timing check
    run.Signal(SIGKILL);
    const auto code = run.Wait(kRunTimeout);
    REQUIRE(code.has_value());
    CHECK(*code == 128 + SIGKILL);  // it was still forwarding: the kill landed mid-stream
    if (*code == 128 + SIGKILL) ++killed_mid_stream;
  }
  CHECK(killed_mid_stream == static_cast<int>(std::size(kKillAfter)));
  // Twin of "exactly once": the kills really interrupted the work; some rows were
  // still left to send, so the final run has something to do.
  CHECK(central.received_rows().size() < input.size());

  std::optional<int> last;
  for (int run = 0; run < kFinalRuns && last != std::optional<int>(0); ++run) {
    // A run still going at the timeout is killed when `once` goes out of scope.
    DaemonProcess once(dir, "final" + std::to_string(run), [&] {
      auto a = forward_args;
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
  CHECK(std::adjacent_find(received.begin(), received.end()) == received.end());  // no dups
  CHECK(received == input);
  CHECK(DuplicateChunks(central) <= kMaxResentPerCrash * senders * std::size(kKillAfter));
}

}  // namespace

TEST_CASE("SIGKILL at several points, restart, finish: every row exactly once") {
  CrashAndFinish("daemon_crash", {"--concurrency", "1"}, 1);
}

// Four partitions in flight at every kill: each sender's cursor is its own partition's,
// and each lags its acks by two chunks at most. @ref LLP 0018#cursors
TEST_CASE("SIGKILL with four senders in flight, restart, finish: every row exactly once") {
  CrashAndFinish("daemon_crash_conc", {"--concurrency", "4"}, 4);
}

TEST_CASE("SIGKILL while splitting (413 and 400) and dead-lettering: every row once") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_crash_split");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // A 12 KiB body limit makes every 48 KiB chunk split twice (413); the rate keeps the
  // whole run a few seconds long, so the kills land mid-stream.
  REQUIRE(central.Start({"--rate", "600000", "--burst", "65536", "--max-body", "12288"}));
  const std::string url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
  DaemonProcess gen(dir, "generate",
                    {"generate", "--spool", spool.string(), "--bytes", "900k", "--partitions", "3",
                     "--seed", "7"});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(kRunTimeout) == std::optional<int>(0));
  // Break every 499th row: the server refuses its chunk with 400, bisection isolates it.
  std::vector<std::string> good, poison;
  for (const auto& e : fs::directory_iterator(spool / "ready")) {
    auto lines = ReadLines(e.path());
    std::ofstream out(e.path(), std::ios::binary | std::ios::trunc);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i % 499 == 250) lines[i] = "{\"broken\":" + std::to_string(i) + e.path().stem().string();
      (lines[i].starts_with("{\"broken") ? poison : good).push_back(lines[i]);
      out << lines[i] << '\n';
    }
  }
  REQUIRE(poison.size() >= 6);
  const std::vector<std::string> forward = {
      "forward", "--spool",       spool.string(), "--url",    url,       "--chunk-bytes",
      "48k",     "--compression", "identity",     "--ladder", "0.1,0.2", "--max-wait",
      "1",       "--log-json"};
  constexpr std::chrono::milliseconds kKills[] = {400ms, 700ms, 300ms};
  for (std::size_t i = 0; i < std::size(kKills); ++i) {
    CAPTURE(i);
    DaemonProcess run(dir, "run" + std::to_string(i), forward);
    REQUIRE(run.started());
    std::this_thread::sleep_for(kKills[i]);  // the crash point, not a timing check
    run.Signal(SIGKILL);
    const auto code = run.Wait(kRunTimeout);
    REQUIRE(code.has_value());
    CHECK(*code == 128 + SIGKILL);
  }
  CHECK(central.Stats()["accepted_chunks"] > 0);
  std::optional<int> last;
  for (int run = 0; run < kFinalRuns && last != std::optional<int>(0); ++run) {
    auto a = forward;
    a.push_back("--once");
    DaemonProcess once(dir, "final" + std::to_string(run), a);
    last = once.Wait(kRunTimeout);
  }
  REQUIRE(last == std::optional<int>(0));
  std::vector<std::string> received = central.received_rows();
  std::sort(received.begin(), received.end());
  std::sort(good.begin(), good.end());
  CHECK(received.size() == good.size());
  CHECK(received == good);
  std::vector<std::string> dead = DeadRows(spool);
  std::sort(dead.begin(), dead.end());
  std::sort(poison.begin(), poison.end());
  CHECK(dead == poison);  // each refused row once in dead/, none lost, none twice
  // Two chunks' worth per crash, halves of a split chunk included (identity: wire bytes
  // are chunk bytes).
  CHECK(DuplicateBytes(central) <= kMaxResentPerCrash * 48 * 1024 * std::size(kKills));
}
