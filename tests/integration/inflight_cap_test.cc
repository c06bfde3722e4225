// SPDX-License-Identifier: Apache-2.0
// --max-inflight-bytes is a cap (issue 38 item 3, LLP 0014#inflight-cap): 16 partitions
// sent by 16 senders with a window of 8, every answer held 100 ms, and the bodies open at
// the receiver at once never pass 128 KiB (before, each sender's first chunk went
// whatever the others held: 512 KiB here). The twin: a row larger than the whole cap
// still goes, alone.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
namespace fs = std::filesystem;

constexpr std::uint64_t kCap = 128 * 1024;

std::vector<std::string> Rows(int partition, int n) {
  std::vector<std::string> rows;
  for (int i = 0; i < n; ++i) {
    std::string row =
        "{\"p\":" + std::to_string(partition) + ",\"i\":" + std::to_string(i) + ",\"pad\":\"";
    while (row.size() < 97) row += 'x';
    rows.push_back(row + "\"}");
  }
  return rows;
}

// Writes `partitions` partitions of `rows` rows into spool/ready (one of them, `long_in`,
// ends with a row of `long_bytes`); returns how many rows in all.
std::size_t WritePartitions(const fs::path& spool, int partitions, int rows, int long_in = -1,
                            std::size_t long_bytes = 0) {
  fs::create_directories(spool / "ready");
  std::size_t n = 0;
  for (int p = 0; p < partitions; ++p) {
    auto part = Rows(p, rows);
    if (p == long_in) part.push_back("{\"long\":\"" + std::string(long_bytes, 'y') + "\"}");
    fwdsink::test::WriteLines(spool / "ready" / ("p" + std::to_string(p) + ".ndjson"), part);
    n += part.size();
  }
  return n;
}

struct Run {
  int code = -1;
  std::string log;
  std::uint64_t peak = 0;
  std::size_t stored = 0, twice = 0;
};

// Sends every partition of `spool` once through a receiver that holds each answer 100 ms.
Run SendOnce(const fs::path& dir, const fs::path& spool) {
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--header-delay-ms", "100"}));
  DaemonProcess once(dir, "once",
                     {"forward", "--once", "--spool", spool.string(), "--url",
                      "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest",
                      "--chunk-bytes", "32k", "--window", "8", "--concurrency", "16",
                      "--max-inflight-bytes", std::to_string(kCap), "--compression", "identity"});
  REQUIRE(once.started());
  const auto code = once.Wait(120s);
  REQUIRE(code.has_value());
  Run run{.code = *code, .log = once.err()};
  run.peak = central.Stats().value("peak_open_body_bytes", std::uint64_t{0});
  std::map<std::string, int> stored;
  for (const auto& r : central.received_rows()) stored[r] += 1;
  run.stored = stored.size();
  for (const auto& [row, n] : stored) run.twice += n > 1;
  return run;
}

}  // namespace

TEST_CASE("Bodies in flight stay under --max-inflight-bytes with 16 senders") {
  const fs::path dir = CentralProcess::ScratchDir("inflight_cap");
  const fs::path spool = dir / "spool";
  const std::size_t rows = WritePartitions(spool, 16, 2'000);  // 200 KB: seven 32 KiB chunks
  const Run run = SendOnce(dir, spool);
  CHECK_MESSAGE(run.code == 0, run.log);
  CHECK(run.stored == rows);
  CHECK(run.twice == 0);
  MESSAGE("peak bodies open at the receiver: " << run.peak << " bytes (cap " << kCap << ")");
  CHECK(run.peak > 0);
  CHECK(run.peak <= kCap);
}

TEST_CASE("Twin: a row larger than the whole cap still goes, alone") {
  const fs::path dir = CentralProcess::ScratchDir("inflight_cap_long_row");
  const fs::path spool = dir / "spool";
  const std::size_t rows = WritePartitions(spool, 4, 500, /*long_in=*/2, 300'000);
  const Run run = SendOnce(dir, spool);
  CHECK_MESSAGE(run.code == 0, run.log);
  CHECK(run.stored == rows);
  CHECK(run.twice == 0);
  MESSAGE("peak bodies open at the receiver: " << run.peak << " bytes");
  CHECK(run.peak >= 300'000);       // the long row went
  CHECK(run.peak <= 300'000 + 13);  // and nothing went beside it
}
