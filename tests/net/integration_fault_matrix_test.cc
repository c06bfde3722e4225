// SPDX-License-Identifier: Apache-2.0
// The fault matrix (issue 37, ctest label `net`, LLP 0014#fault-proxy): every toxic of
// the fault proxy x Expect on/off x --window 1/16 x one big partition / a pack of small
// ones, against fwdsink-central behind fwdsink-fault-proxy, the daemon with its
// defaults but for the deadlines a black hole needs. Each case: the toxic fired, the
// daemon is still running when every row is in, every row is stored exactly once, the
// request the toxic broke went again with the same key and length, and the daemon's
// forward.transport_error names the phase; then SIGTERM, exit 0 (the harness checks it).
// Plus a soak: the receiver's front restarted every 0.5-2 s for 30 s under 4
// partitions and the defaults.
//
// One TEST_CASE per toxic, so ctest runs them side by side (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault_proxy_process.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::FaultProxyProcess;
namespace fs = std::filesystem;

constexpr int kBigRows = 10'000;  // 1 MB in one partition: 8 chunks of 128 KiB
constexpr int kPackMembers = 20;  // 20 partitions of 50 rows: one pack of ~100 kB
constexpr int kPackRows = 50;
constexpr auto kDeliver = 60s;  // the longest a case may take to deliver

const std::set<std::string> kPhases = {"connect", "head",          "await_continue",
                                       "body",    "response_head", "response_body"};

struct Variant {
  bool expect;
  int window;
  bool pack;
  std::string Name() const {
    return std::string(expect ? "expect" : "no-expect") + "-w" + std::to_string(window) +
           (pack ? "-pack" : "-big");
  }
};

std::vector<Variant> AllVariants() {
  std::vector<Variant> out;
  for (bool expect : {true, false}) {
    for (int window : {1, 16}) {
      for (bool pack : {false, true}) out.push_back({expect, window, pack});
    }
  }
  return out;
}

// Rows that say which case wrote them: {"case":"<id>","i":N,"pad":"x..."}, 100 bytes.
std::vector<std::string> Rows(const std::string& id, int from, int n) {
  std::vector<std::string> rows;
  for (int i = from; i < from + n; ++i) {
    std::string row = "{\"case\":\"" + id + "\",\"i\":" + std::to_string(i) + ",\"pad\":\"";
    row.append(99 - row.size() - 2, 'x');
    rows.push_back(row + "\"}");
  }
  return rows;
}

// Writes the case's partitions into SPOOL/ready; returns every row.
std::vector<std::string> WriteInput(const fs::path& spool, const std::string& id, bool pack) {
  fs::create_directories(spool / "ready");
  std::vector<std::string> all;
  const int files = pack ? kPackMembers : 1;
  const int per = pack ? kPackRows : kBigRows;
  for (int f = 0; f < files; ++f) {
    auto rows = Rows(id, f * per, per);
    char name[64];
    std::snprintf(name, sizeof name, "%s-%03d.ndjson", id.c_str(), f);
    fwdsink::test::WriteLines(spool / "ready" / name, rows);
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

// How many times each of `rows` is stored at the receiver.
std::map<std::string, int> Stored(const CentralProcess& central, const std::string& id) {
  std::map<std::string, int> seen;
  const std::string marker = "\"case\":\"" + id + "\"";
  for (const auto& r : central.received_rows()) {
    if (r.find(marker) != std::string::npos) seen[r] += 1;
  }
  return seen;
}

std::vector<std::string> DaemonArgs(const fs::path& spool, const std::string& url,
                                    const Variant& v) {
  return {"forward", "--spool", spool.string(), "--url", url, "--compression",
          "identity",  // so a chunk of 128 KiB is over the Expect threshold
          "--chunk-bytes", "128k", "--pack-below", "64k", "--window", std::to_string(v.window),
          "--expect-continue-bytes", v.expect ? "always" : "0",
          // A black hole ends at the response deadline: make it short.
          "--connect-timeout", "1", "--response-timeout", "1", "--min-throughput", "1m", "--poll",
          "0.2", "--log-json"};
}

// One case of the matrix on a running receiver and proxy.
void RunCase(const std::string& toxic, const Variant& v, CentralProcess& central,
             FaultProxyProcess& proxy, const fs::path& dir) {
  const std::string id = toxic + "-" + v.Name();
  CAPTURE(id);
  const fs::path spool = dir / id / "spool";
  const auto input = WriteInput(spool, id, v.pack);
  const bool link_toxic = toxic == "slow_close";
  const long before = proxy.Requests();
  if (toxic == "slow_close") {
    REQUIRE(proxy.Command("slow_close 300") == "ok");
  } else if (!link_toxic) {
    // The second request from now (the first of a pack, when it is one request with a
    // short first chunk ahead of it, still breaks: every request counts).
    REQUIRE(proxy.Command("arm " + toxic + " 1 " + (v.pack ? "0" : "1")) == "ok");
  }
  DaemonProcess daemon(dir / id, "forward", DaemonArgs(spool, proxy.url(), v));
  REQUIRE(daemon.started());
  // Delivered: every row at the receiver, and the daemon knows it (ready/ is empty; a
  // receiver stores a request before its answer can break).
  const bool delivered = fwdsink::test::WaitFor(
      [&] { return Stored(central, id).size() == input.size() && daemon.ReadyLeft() == 0; },
      kDeliver, 50ms);
  CHECK_MESSAGE(delivered, daemon.err().substr(0, 4000));
  // Still running: nothing but our signal may stop it.
  CHECK_FALSE(daemon.Wait(0ms).has_value());
  const auto stored = Stored(central, id);
  CHECK(stored.size() == input.size());
  int twice = 0;
  for (const auto& [row, n] : stored) twice += n > 1;
  CHECK(twice == 0);
  if (toxic == "slow_close") REQUIRE(proxy.Command("slow_close 0") == "ok");
  if (!link_toxic) {
    // The broken request went again, with the same key and length (a restart of the
    // proxy resets the request whose head set it off).
    const auto log = proxy.Log();
    const nlohmann::json* broken = nullptr;
    for (const auto& r : log) {
      if (r.value("toxic", "") == toxic && r.value("req", -1L) >= before) broken = &r;
    }
    REQUIRE_MESSAGE(broken != nullptr, "the toxic never fired");
    bool resent = false;
    for (const auto& r : log) {
      resent = resent ||
               (r["req"].get<long>() > (*broken)["req"].get<long>() &&
                r["key"] == (*broken)["key"] && r["content_length"] == (*broken)["content_length"]);
    }
    CHECK_MESSAGE(resent, "no re-send of " << broken->dump());
  }
  if (toxic != "slow_close") {
    // The daemon said where it broke.
    const std::string err = daemon.err();
    const auto at = err.find("\"event\":\"forward.transport_error\"");
    REQUIRE_MESSAGE(at != std::string::npos, err.substr(0, 4000));
    const auto line = err.substr(at, err.find('\n', at) - at);
    const auto p = line.find("\"phase\":\"");
    REQUIRE(p != std::string::npos);
    const std::string phase = line.substr(p + 9, line.find('"', p + 9) - p - 9);
    CAPTURE(phase);
    CHECK(kPhases.contains(phase));
    CHECK(err.find("\"event\":\"forward.aborted\"") == std::string::npos);
  }
  daemon.Signal(SIGTERM);
  CHECK(daemon.Wait(10s) == std::optional<int>(0));
}

void RunToxic(const std::string& toxic) {
  const auto dir = CentralProcess::ScratchDir("net_" + toxic);
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  FaultProxyProcess proxy(dir / "proxy");
  // A link of 8 MB/s: an upload lasts long enough for a toxic to land mid-way.
  REQUIRE(proxy.Start(central.port(), {"--rate", "8000000"}));
  for (const Variant& v : AllVariants()) RunCase(toxic, v, central, proxy, dir);
}

}  // namespace

TEST_CASE("net: reset_head") { RunToxic("reset_head"); }
TEST_CASE("net: reset_await") { RunToxic("reset_await"); }
TEST_CASE("net: reset_body") { RunToxic("reset_body"); }
TEST_CASE("net: close_head") { RunToxic("close_head"); }
TEST_CASE("net: close_continue") { RunToxic("close_continue"); }
TEST_CASE("net: answer_reset") { RunToxic("answer_reset"); }
TEST_CASE("net: blackhole") { RunToxic("blackhole"); }
TEST_CASE("net: slow_close") { RunToxic("slow_close"); }
TEST_CASE("net: down") { RunToxic("down"); }

// The receiver's front restarted every 0.5-2 s for 30 s under 4 partitions and the
// defaults: every row once, the daemon up throughout.
TEST_CASE("net: soak, the front restarted every 0.5-2 s for 30 s") {
  const auto dir = CentralProcess::ScratchDir("net_soak");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  FaultProxyProcess proxy(dir / "proxy");
  // 1.5 MB/s: four partitions of 16 MB (about half of it on the wire with zstd: the pads
  // are random) take the whole soak, and a chunk of 1 MiB (~0.4 s on the link) can
  // land between two restarts.
  REQUIRE(proxy.Start(central.port(), {"--rate", "1500000"}));
  const fs::path spool = dir / "spool";
  std::vector<std::string> input;
  std::mt19937 pads(7);
  for (int p = 0; p < 4; ++p) {
    auto rows = Rows("soak", p * 160'000, 160'000);  // 16 MB each
    for (auto& r : rows) {
      for (auto at = r.find("xxxx"); at != std::string::npos && at < r.size() - 2; ++at) {
        if (r[at] == 'x') r[at] = "0123456789abcdef"[pads() % 16];
      }
    }
    fs::create_directories(spool / "ready");
    fwdsink::test::WriteLines(spool / "ready" / ("soak-" + std::to_string(p) + ".ndjson"), rows);
    input.insert(input.end(), rows.begin(), rows.end());
  }
  DaemonProcess daemon(dir, "forward",
                       {"forward", "--spool", spool.string(), "--url", proxy.url(), "--log-json"});
  REQUIRE(daemon.started());
  std::mt19937 random(37);  // a fixed seed: the same restarts on every run
  const auto soak_end = std::chrono::steady_clock::now() + 30s;
  int restarts = 0;
  while (std::chrono::steady_clock::now() < soak_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + random() % 1500));
    REQUIRE(proxy.Command("down " + std::to_string(50 + random() % 250)) == "ok");
    ++restarts;
    REQUIRE_FALSE(daemon.Wait(0ms).has_value());
  }
  MESSAGE("front restarts: " << restarts);
  REQUIRE(proxy.Command("rate 0") == "ok");  // the soak is over: let the rest through
  // Polled on the receiver's count (its rows are 64 MB to read); checked row by row after.
  const bool delivered = fwdsink::test::WaitFor(
      [&] {
        const auto stats = central.Stats();
        return daemon.ReadyLeft() == 0 && stats.is_object() &&
               stats.value("accepted_rows", std::size_t{0}) >= input.size();
      },
      150s, 200ms);
  CHECK_MESSAGE(delivered, daemon.err().substr(0, 4000));
  CHECK_FALSE(daemon.Wait(0ms).has_value());
  const auto stored = Stored(central, "soak");
  CHECK(stored.size() == input.size());
  int twice = 0;
  for (const auto& [row, n] : stored) twice += n > 1;
  CHECK(twice == 0);
  MESSAGE("delivered " << stored.size() << " rows; the last at the end of the soak + "
                       << std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::steady_clock::now() - soak_end)
                              .count()
                       << " s");
  CHECK(daemon.err().find("\"event\":\"forward.transport_error\"") != std::string::npos);
  daemon.Signal(SIGTERM);
  CHECK(daemon.Wait(10s) == std::optional<int>(0));
}
