// SPDX-License-Identifier: Apache-2.0
// A journal replayed at another chunk size or encoding (issue 38 item 1, LLP
// 0014#journal-any-size): a partition partly sent with 8 KiB chunks and a window of 4 is
// SIGKILLed once its cursor record owes journaled ranges, and the restart runs with
// --chunk-bytes 5k, 64k, or another --compression. Each owed range is re-sent under its
// own key, as it was cut, every row is stored once, nothing goes to dead/, exit 0. The
// twin: the file truly cut inside a journaled range still goes to dead/ (exit 65).
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fwdsink/spool.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
namespace fs = std::filesystem;

constexpr int kRows = 4'000;  // 400 KB: ~50 chunks of 8 KiB

std::vector<std::string> Rows(int n) {
  std::vector<std::string> rows;
  for (int i = 0; i < n; ++i) {
    std::string row = "{\"i\":" + std::to_string(i) + ",\"pad\":\"";
    while (row.size() < 97) row += 'x';
    rows.push_back(row + "\"}");
  }
  return rows;
}

std::vector<std::string> Forward(const fs::path& spool, const CentralProcess& central,
                                 const std::string& chunk_bytes, const std::string& compression) {
  return {"forward",
          "--spool",
          spool.string(),
          "--url",
          "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest",
          "--chunk-bytes",
          chunk_bytes,
          "--window",
          "4",
          "--compression",
          compression};
}

// The journal's owed ranges of the one partition, as the daemon left them.
std::vector<fwdsink::CursorRange> Owed(const fs::path& spool) {
  auto opened = fwdsink::Spool::Open(spool);
  REQUIRE(opened.ok());
  std::vector<fwdsink::CursorRange> owed;
  for (const auto& r : opened->LoadCursor("p").ranges) {
    if (!r.acked) owed.push_back(r);
  }
  return owed;
}

// Sends part of the partition at 8 KiB and SIGKILLs the daemon once its record owes
// ranges past the cursor (the window's journal on disk). Returns those ranges.
std::vector<fwdsink::CursorRange> CrashWithAJournal(const fs::path& dir, const fs::path& spool,
                                                    const CentralProcess& central) {
  DaemonProcess run(dir, "crash", Forward(spool, central, "8k", "identity"));
  REQUIRE(run.started());
  REQUIRE(fwdsink::test::WaitFor(
      [&] { return fs::exists(spool / "state") && !Owed(spool).empty(); }, 20s, 2ms));
  run.Signal(SIGKILL);
  REQUIRE(run.Wait(10s).has_value());
  return Owed(spool);
}

struct Once {
  int code = -1;
  std::string log;
};

// The restart: `--once` at `chunk_bytes` and `compression`.
Once RunOnce(const fs::path& dir, const fs::path& spool, const CentralProcess& central,
             const std::string& chunk_bytes, const std::string& compression) {
  auto args = Forward(spool, central, chunk_bytes, compression);
  args.insert(args.begin() + 1, "--once");
  DaemonProcess once(dir, "once", args);
  REQUIRE(once.started());
  const auto code = once.Wait(60s);
  REQUIRE(code.has_value());
  return {*code, once.err()};
}

// Files in spool/dead/ (none when nothing was dead-lettered).
int DeadFiles(const fs::path& spool) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(spool / "dead", ec))
    n += e.is_regular_file();
  return n;
}

std::string Key(const fwdsink::CursorRange& r) {
  return "p:" + std::to_string(r.begin) + "-" + std::to_string(r.end);
}

}  // namespace

TEST_CASE("A journal cut at 8 KiB is replayed exactly at 5 KiB, 64 KiB and zstd") {
  struct Restart {
    std::string name, chunk_bytes, compression;
  };
  for (const Restart& restart :
       {Restart{"smaller", "5k", "identity"}, Restart{"larger", "64k", "identity"},
        Restart{"zstd", "8k", "zstd"}}) {
    CAPTURE(restart.name);
    const fs::path dir = CentralProcess::ScratchDir("journal_replay_" + restart.name);
    const fs::path spool = dir / "spool";
    fs::create_directories(spool / "ready");
    const auto rows = Rows(kRows);
    fwdsink::test::WriteLines(spool / "ready" / "p.ndjson", rows);
    CentralProcess central(dir / "central");
    // Slow enough that a window of 8 KiB chunks is still owed when the journal lands.
    REQUIRE(central.Start({"--rate", "100000", "--burst", "20000"}));
    const auto owed = CrashWithAJournal(dir, spool, central);
    REQUIRE_FALSE(owed.empty());
    REQUIRE(central.received_rows().size() < rows.size());
    const std::size_t before = central.request_log().size();

    const Once once = RunOnce(dir, spool, central, restart.chunk_bytes, restart.compression);
    CHECK_MESSAGE(once.code == 0, once.log);
    CHECK(once.log.find("not_at_line_start") == std::string::npos);
    CHECK(DeadFiles(spool) == 0);

    // Each owed range went again under its own key, as it was cut.
    std::set<std::string> keys;
    const auto log = central.request_log();
    for (std::size_t i = before; i < log.size(); ++i) keys.insert(log[i].value("key", ""));
    for (const auto& r : owed) CHECK_MESSAGE(keys.count(Key(r)) == 1, Key(r));

    std::map<std::string, int> stored;
    for (const auto& r : central.received_rows()) stored[r] += 1;
    int twice = 0;
    for (const auto& [row, n] : stored) twice += n > 1;
    CHECK(twice == 0);
    CHECK(stored.size() == rows.size());
  }
}

TEST_CASE("Twin: a file cut inside a journaled range still goes to dead/") {
  const fs::path dir = CentralProcess::ScratchDir("journal_replay_torn");
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  const fs::path partition = spool / "ready" / "p.ndjson";
  fwdsink::test::WriteLines(partition, Rows(kRows));
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--rate", "100000", "--burst", "20000"}));
  const auto owed = CrashWithAJournal(dir, spool, central);
  REQUIRE_FALSE(owed.empty());
  // Torn: the file now ends in the middle of the last owed range, inside a row.
  fs::resize_file(partition, owed.back().end - 10);
  const Once once = RunOnce(dir, spool, central, "5k", "identity");
  CHECK_MESSAGE(once.code == 65, once.log);
  CHECK(DeadFiles(spool) > 0);
}
