// SPDX-License-Identifier: Apache-2.0
// A partition changed while the daemon was down (issue 38 item 2, LLP
// 0020#file-identity): partly delivered, the daemon SIGKILLed, the file replaced by
// another of the same name and size or cut below its cursor, and `--once` quarantines
// it (exit 65, driver.handover_changed "changed_while_stopped") instead of resuming at
// the old cursor (rows never sent) or restarting it (rows twice). The twin: rows
// appended while it was down are sent, every row once, exit 0.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

constexpr int kRows = 10'000;  // 1 MB: 16 chunks of 64 KiB

std::vector<std::string> Rows(const std::string& tag, int from, int n) {
  std::vector<std::string> rows;
  for (int i = from; i < from + n; ++i) {
    std::string row = "{\"tag\":\"" + tag + "\",\"i\":" + std::to_string(i) + ",\"pad\":\"";
    while (row.size() < 97) row += 'x';
    rows.push_back(row + "\"}");
  }
  return rows;
}

// Sends part of the partition and SIGKILLs the daemon once its cursor is on disk.
void SendPart(const fs::path& dir, const fs::path& spool, const CentralProcess& central) {
  DaemonProcess run(dir, "part",
                    {"forward", "--spool", spool.string(), "--url",
                     "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest",
                     "--chunk-bytes", "64k", "--window", "1", "--compression", "identity"});
  REQUIRE(run.started());
  REQUIRE(fwdsink::test::WaitFor(
      [&] {
        std::error_code ec;  // state/ is made by the daemon when it opens the spool
        for (const auto& e : fs::directory_iterator(spool / "state", ec)) {
          if (e.path().extension() == ".cursor") return true;
        }
        return false;
      },
      20s));
  run.Signal(SIGKILL);
  REQUIRE(run.Wait(10s).has_value());
}

struct Once {
  int code;
  std::string log;
};
Once RunOnce(const fs::path& dir, const fs::path& spool, const CentralProcess& central) {
  DaemonProcess run(dir, "once",
                    {"forward", "--once", "--spool", spool.string(), "--url",
                     "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest",
                     "--chunk-bytes", "64k", "--window", "1", "--compression", "identity"});
  REQUIRE(run.started());
  const auto code = run.Wait(60s);
  REQUIRE(code.has_value());
  return {*code, run.err()};
}

}  // namespace

TEST_CASE("A partition changed while the daemon was down is quarantined, not resumed") {
  enum class Change { kReplaced, kTruncated, kAppended };
  for (const Change change : {Change::kReplaced, Change::kTruncated, Change::kAppended}) {
    const std::string name = change == Change::kReplaced    ? "replaced"
                             : change == Change::kTruncated ? "truncated"
                                                            : "appended";
    CAPTURE(name);
    const fs::path dir = CentralProcess::ScratchDir("file_identity_" + name);
    const fs::path spool = dir / "spool";
    fs::create_directories(spool / "ready");
    const fs::path partition = spool / "ready" / "p.ndjson";
    auto rows = Rows("first", 0, kRows);
    fwdsink::test::WriteLines(partition, rows);
    CentralProcess central(dir / "central");
    // Slow enough that the kill lands mid-partition: 64 KiB chunks at 200 kB/s.
    REQUIRE(central.Start({"--rate", "200000", "--burst", "70000"}));
    SendPart(dir, spool, central);
    REQUIRE(central.received_rows().size() < rows.size());
    switch (change) {
      case Change::kReplaced:
        // Another file, the same name and size, handed over by rename.
        fwdsink::test::WriteLines(partition, Rows("other", 0, kRows));
        break;
      case Change::kTruncated: fs::resize_file(partition, 100 * 3); break;
      case Change::kAppended: {
        auto more = Rows("first", kRows, 100);
        std::ofstream out(partition, std::ios::app | std::ios::binary);
        for (const auto& r : more) out << r << '\n';
        rows.insert(rows.end(), more.begin(), more.end());
        break;
      }
    }
    REQUIRE(central.Stop().has_value());
    REQUIRE(central.Start());  // unthrottled now
    const Once once = RunOnce(dir, spool, central);
    std::map<std::string, int> stored;
    for (const auto& r : central.received_rows()) stored[r] += 1;
    int twice = 0;
    for (const auto& [row, n] : stored) twice += n > 1;
    CHECK(twice == 0);
    if (change == Change::kAppended) {
      CHECK_MESSAGE(once.code == 0, once.log);
      CHECK(stored.size() == rows.size());  // the appended rows too
      continue;
    }
    CHECK_MESSAGE(once.code == 65, once.log);
    CHECK(once.log.find("\"reason\":\"changed_while_stopped\"") != std::string::npos);
    CHECK(once.log.find(name == "replaced" ? "replaced" : "truncated") != std::string::npos);
    CHECK_FALSE(fs::exists(partition));
    CHECK(fs::exists(spool / "quarantine"));
    CHECK(once.log.find("\"event\":\"forward.delivered\"") == std::string::npos);
  }
}
