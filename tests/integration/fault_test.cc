// SPDX-License-Identifier: Apache-2.0
// Fault injection in the spool's system calls (LLP 0023#fault-injection): each
// open, write, fsync and rename in the cursor (state/) and dead-letter (dead/) paths
// is made to fail in turn by an LD_PRELOAD shim (tests/fault/fault_shim.cc); the
// daemon then runs to completion with the fault cleared, and the deduplicating
// receiver must hold every good row exactly once, and dead/ every poisoned row once.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ReadLines;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;
constexpr int kMaxPasses = 6;  // fault-free --once passes allowed to finish the job

// Sets environment variables for the child processes spawned in its lifetime.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
  }

 private:
  std::map<std::string, std::string> vars_;
};

struct Input {
  std::vector<std::string> good;    // rows the receiver must hold, once each
  std::vector<std::string> poison;  // rows dead/ must hold, once each
};

// Three partitions of 100-byte rows; two of them carry one malformed row each.
Input WriteSpool(const fs::path& spool) {
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  Input in;
  for (const char* name : {"a", "b", "c"}) {
    auto lines =
        fwdsink::test::WriteRows(spool / "ready" / (std::string(name) + ".ndjson"), 30, 100);
    for (auto& l : lines) l.insert(1, "\"p\":\"" + std::string(name) + "\",");
    if (std::string(name) != "b") lines[17] = std::string("{\"broken\":\"") + name;
    fwdsink::test::WriteLines(spool / "ready" / (std::string(name) + ".ndjson"), lines);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      (lines[i].starts_with("{\"broken") ? in.poison : in.good).push_back(lines[i]);
    }
  }
  return in;
}

// Rows of `want` missing from `got`, and rows of `got` beyond their count in `want`.
std::pair<std::size_t, std::size_t> LostAndDuplicated(std::vector<std::string> want,
                                                      std::vector<std::string> got) {
  std::map<std::string, long> balance;
  for (auto& r : want) balance[r] += 1;
  for (auto& r : got) balance[r] -= 1;
  std::size_t lost = 0, dup = 0;
  for (const auto& [row, n] : balance) {
    if (n > 0) lost += static_cast<std::size_t>(n);
    if (n < 0) dup += static_cast<std::size_t>(-n);
  }
  return {lost, dup};
}

}  // namespace

TEST_CASE("EveryFaultInTheCursorAndDeadLetterPathsLosesAndDuplicatesNothing") {
  const fs::path root = CentralProcess::ScratchDir("fault_matrix");
  std::size_t scenarios = 0, injected = 0, lost_total = 0, dup_total = 0;
  for (const char* op : {"open", "write", "fsync", "rename"}) {
    for (const char* where : {"/state", "/dead"}) {
      for (const char* nth : {"1", "3"}) {
        const std::string tag = std::string(op) + where + "-" + nth;
        CAPTURE(tag);
        const fs::path dir = root / (std::string(op) + "_" + (where + 1) + "_" + nth);
        fs::create_directories(dir);
        CentralProcess central(dir / "central");
        REQUIRE(central.Start());
        const fs::path spool = dir / "spool";
        const Input input = WriteSpool(spool);
        const std::vector<std::string> args = {
            "forward", "--once", "--spool", spool.string(), "--url",
            "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest", "--chunk-bytes", "1k",
            // A window of chunks in flight (LLP 0014#window-refusal).
            "--window", "16", "--log-json"};
        const fs::path log = dir / "faults.log";
        {
          ScopedEnv env({{"LD_PRELOAD", FWDSINK_FAULT_SHIM},
                         {"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=1"},
                         {"FWDSINK_FAULT_OP", op},
                         {"FWDSINK_FAULT_PATH", spool.string() + where},
                         {"FWDSINK_FAULT_NTH", nth},
                         {"FWDSINK_FAULT_LOG", log.string()}});
          DaemonProcess faulty(dir, "faulty", args);
          REQUIRE(faulty.started());
          const auto code = faulty.Wait(kRunTimeout);
          REQUIRE(code.has_value());
          CHECK(*code != 128 + 6);  // no abort (a DCHECK, a sanitizer) under the fault
        }
        std::optional<int> last;
        for (int pass = 0; pass < kMaxPasses && last != std::optional<int>(0); ++pass) {
          DaemonProcess clean(dir, "pass" + std::to_string(pass), args);
          last = clean.Wait(kRunTimeout);
        }
        CHECK(last == std::optional<int>(0));
        const auto faults = ReadLines(log).size();
        const auto [lost, dup] = LostAndDuplicated(input.good, central.received_rows());
        const auto [dead_lost, dead_dup] =
            LostAndDuplicated(input.poison, fwdsink::test::DeadRows(spool / "dead"));
        CHECK(lost == 0);
        CHECK(dup == 0);
        CHECK(dead_lost == 0);
        CHECK(dead_dup == 0);
        ++scenarios;
        injected += faults;
        lost_total += lost + dead_lost;
        dup_total += dup + dead_dup;
        central.Stop();
      }
    }
  }
  // The matrix really injected faults (the twin of "nothing lost"): every scenario's
  // call exists on these paths, so each one fired.
  MESSAGE("fault matrix: " << scenarios << " scenarios, " << injected << " faults injected, "
                           << lost_total << " rows lost, " << dup_total << " duplicated");
  CHECK(scenarios == 16);
  CHECK(injected == 16);
}
