// Crash safety of the `fwdsink` daemon: SIGKILL it at several points while it forwards
// to a throttled receiver, restart it each time, and check that the receiver ends up
// with every input row exactly once (the cursor is persisted after each ack; a chunk
// re-sent after a crash carries the same Idempotency-Key and is deduplicated).
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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

}  // namespace

TEST_CASE("SIGKILL at several points, restart, finish: every row exactly once") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_crash");
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

  int killed_mid_stream = 0;
  for (std::size_t i = 0; i < std::size(kKillAfter); ++i) {
    CAPTURE(i);
    DaemonProcess run(dir, "run" + std::to_string(i), forward);
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
  CHECK(std::adjacent_find(received.begin(), received.end()) == received.end());  // no dups
  CHECK(received == input);
}
