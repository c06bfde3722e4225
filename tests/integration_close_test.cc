// SPDX-License-Identifier: Apache-2.0
// Real-time bounds on shutdown: the only place outside the sink's end-to-end tests
// where a wall-clock limit is the contract (close() within 100 ms). The short sleeps
// here let a thread reach its blocking call; the assertions bound how long the abort
// takes, never how long a sleep lasted.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/abortable_wait.h"
#include "fwdsink/driver.h"
#include "scripted_server.h"
#include "test_files.h"

using namespace std::chrono_literals;

namespace {
constexpr auto kReachBlockingCall = 50ms;  // time given to a thread to start waiting
constexpr auto kCloseBound = 100ms;        // DESIGN.md: close() returns within ~100 ms
}  // namespace

TEST_CASE("WaitForBlockedOnAnotherThreadWakesPromptlyOnStop") {
  std::stop_source src;
  std::chrono::steady_clock::time_point woke;
  bool completed = true;
  std::thread waiter([&] {
    completed = fwdsink::WaitFor(src.get_token(), 300s);
    woke = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(kReachBlockingCall);
  const auto stopped = std::chrono::steady_clock::now();
  src.request_stop();
  waiter.join();
  CHECK_FALSE(completed);
  CHECK(woke - stopped < kCloseBound);
}

TEST_CASE("DriverCloseEndsARealPauseBetweenTicksPromptly") {
  fwdsink_test::ScriptedServer server;
  fwdsink::DriverOptions o;
  o.spool_dir = fwdsink::test::FreshDir("integration_close", "driver");
  o.forward.url = server.url();
  o.tick_pauses = {300s};                         // an idle driver sleeps long between ticks
  auto created = fwdsink::Driver::Create(o, {});  // real clock and sleeper
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  auto driver = std::move(created).value();
  std::thread runner([&] { driver->Run(); });
  std::this_thread::sleep_for(kReachBlockingCall);
  const auto t0 = std::chrono::steady_clock::now();
  driver->Close();
  runner.join();
  CHECK(std::chrono::steady_clock::now() - t0 < kCloseBound);
}

namespace {

// Seals a partition of `rows` rows straight into ready/ (the producer's rename).
void AddPartition(const std::filesystem::path& spool, const std::string& name, int rows) {
  std::filesystem::create_directories(spool / "ready");
  std::string text;
  for (int i = 0; i < rows; ++i)
    text += "{\"p\":\"" + name + "\",\"i\":" + std::to_string(i) + "}\n";
  REQUIRE(fwdsink::test::WriteFile(spool / "ready" / (name + ".ndjson"), text));
}

// The end offset of each partition's acknowledged chunks, from the keys the server
// answered 200 ("<partition>:<begin>-<end>").
std::map<std::string, std::uint64_t> AckedEnds(const std::vector<fwdsink_test::Recorded>& reqs,
                                               std::size_t acked) {
  std::map<std::string, std::uint64_t> ends;
  for (std::size_t i = 0; i < acked && i < reqs.size(); ++i) {
    const std::string& key = reqs[i].key;
    const auto colon = key.rfind(':');
    const auto dash = key.rfind('-');
    const std::uint64_t end = std::stoull(key.substr(dash + 1));
    auto& e = ends[key.substr(0, colon)];
    e = std::max(e, end);
  }
  return ends;
}

// Every sender busy: `senders` partitions of 10 chunks each, the first `acked` requests
// answered at once and every later one held for 300 s. Returns the server's requests
// once `senders` of them hang (or after 5 s).
struct BusySenders {
  fwdsink_test::ScriptedServer server;
  std::filesystem::path spool;
  std::unique_ptr<fwdsink::Driver> driver;

  BusySenders(std::string_view tag, fwdsink::ConcurrencyPolicy concurrency, std::size_t acked) {
    spool = fwdsink::test::FreshDir("integration_close", tag);
    for (int p = 0; p < 4; ++p) AddPartition(spool, "p" + std::to_string(p), 40);
    for (std::size_t i = 0; i < acked; ++i) server.Then(200);
    for (int i = 0; i < 16; ++i) server.Then(fwdsink_test::Reply{.delay = 300s});
    fwdsink::DriverOptions o;
    o.spool_dir = spool;
    o.forward.url = server.url();
    o.forward.compression = fwdsink::Compression::kIdentity;
    o.forward.chunker.chunk_bytes = 64;  // ~3 rows a chunk: 10+ chunks a partition
    o.concurrency = concurrency;
    auto created = fwdsink::Driver::Create(o, {});
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    driver = std::move(created).value();
  }
  // Waits (bounded) until `n` requests reached the server.
  bool WaitForRequests(std::size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (server.requests().size() >= n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

}  // namespace

TEST_CASE("DriverCloseIsPromptWithEverySenderBusyAndEachCursorAtItsLastAck") {
  constexpr std::size_t kSenders = 4;
  constexpr std::size_t kAcked = 6;
  BusySenders busy("busy4", {.adaptive = false, .max = kSenders}, kAcked);
  std::thread runner([&] { busy.driver->Run(); });
  // Six chunks acknowledged, then one request hanging per sender.
  REQUIRE(busy.WaitForRequests(kAcked + kSenders));
  std::this_thread::sleep_for(kReachBlockingCall);
  CHECK(busy.driver->counters().senders_busy == kSenders);
  CHECK(busy.driver->counters().concurrency_limit == kSenders);
  const auto t0 = std::chrono::steady_clock::now();
  busy.driver->Close();
  runner.join();
  CHECK(std::chrono::steady_clock::now() - t0 < kCloseBound);
  const auto reqs = busy.server.requests();
  CHECK(reqs.size() == kAcked + kSenders);  // nothing more was sent after the hang
  // Every partition's cursor sits at the end of its last acknowledged chunk: no further
  // (a held request was not acknowledged), no shorter (every ack was persisted).
  const auto ends = AckedEnds(reqs, kAcked);
  for (int p = 0; p < 4; ++p) {
    const std::string name = "p" + std::to_string(p);
    CAPTURE(name);
    const auto cursor = busy.driver->spool().LoadCursor(name);
    const auto it = ends.find(name);
    if (it == ends.end()) {
      CHECK(cursor.offset == 0);
    } else {
      CHECK(cursor.status == fwdsink::CursorStatus::kOk);
      CHECK(cursor.offset == it->second);
    }
  }
  CHECK(busy.driver->sink_counters().aborts == kSenders);
}

TEST_CASE("DriverWithConcurrencyOneKeepsOneRequestInFlight") {
  // Twin: --concurrency 1 is the old driver, one partition at a time.
  BusySenders busy("busy1", {.adaptive = false, .max = 1}, 3);
  std::thread runner([&] { busy.driver->Run(); });
  REQUIRE(busy.WaitForRequests(4));
  std::this_thread::sleep_for(kReachBlockingCall * 2);
  CHECK(busy.driver->counters().senders_busy == 1);
  busy.driver->Close();
  runner.join();
  const auto reqs = busy.server.requests();
  CHECK(reqs.size() == 4);
  for (const auto& r : reqs) CHECK(r.key.rfind("p0:", 0) == 0);  // oldest first, alone
  CHECK(busy.driver->spool().LoadCursor("p0").offset == AckedEnds(reqs, 3)["p0"]);
}
