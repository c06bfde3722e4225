// SPDX-License-Identifier: Apache-2.0
// Real-time bounds on shutdown: the only place outside the sink's end-to-end tests
// where a wall-clock limit is the contract (close() within 100 ms). Each test first
// waits for the phase it cuts short (the thread blocked in its pause, the requests held
// by the server with their bodies read; phase_wait.h), then bounds how long the abort
// takes, never how long a sleep lasted.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
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
#include "support/it_support.h"
#include "support/phase_wait.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;

namespace {
constexpr auto kCloseBound = 100ms;  // DESIGN.md: close() returns within ~100 ms
// Longer than any abort may take, short enough that a pause that is not cut short fails
// the bound in seconds rather than hanging the test.
constexpr auto kLongPause = 30s;
using fwdsink::test::BlockedOnFutex;
using fwdsink::test::PhaseSleeper;
using fwdsink::test::ThisThreadId;
}  // namespace

TEST_CASE("WaitForBlockedOnAnotherThreadWakesPromptlyOnStop") {
  std::stop_source src;
  std::chrono::steady_clock::time_point woke;
  bool completed = true;
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid = ThisThreadId();
    completed = fwdsink::WaitFor(src.get_token(), kLongPause);
    woke = std::chrono::steady_clock::now();
  });
  // The phase: the waiter is blocked in the condition variable's wait, not about to
  // enter it (a stop before the call returns at once and proves nothing).
  const bool blocked =
      fwdsink::test::WaitFor([&] { return tid.load() != 0 && BlockedOnFutex(tid.load()); });
  CHECK(blocked);
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
  o.tick_pauses = {kLongPause};  // an idle driver sleeps long between ticks
  PhaseSleeper sleeper;          // the real sleeper, telling when the pause has begun
  fwdsink::ForwardDeps deps;
  deps.sleeper = &sleeper;
  auto created = fwdsink::Driver::Create(o, std::move(deps));  // real clock
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  auto driver = std::move(created).value();
  std::thread runner([&] { driver->Run(); });
  // The phase: the first (empty) tick is over and the driver is blocked in its pause.
  const bool paused = fwdsink::test::WaitFor([&] { return sleeper.sleeping(); });
  CHECK(paused);
  CHECK(sleeper.entered() == 1);
  CHECK(driver->counters().ticks == 1);
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
  // The phase: the server holds one request per sender, headers and body read (its
  // handler runs after the whole request), and every sender is in its send.
  const bool sending = fwdsink::test::WaitFor([&] {
    const auto states = busy.driver->sender_states();
    return states.size() == kSenders &&
           std::all_of(states.begin(), states.end(), [](const auto& s) {
             return s.phase == fwdsink::ForwardSink::State::Phase::kSending;
           });
  });
  CHECK(sending);
  // And every answer the server gave has been taken: a sender can be sending its next
  // chunk before it has read the answer to the one before (a window), and a loaded
  // machine once closed in between (the cursor at 102 where the server had acked 206).
  const bool taken =
      fwdsink::test::WaitFor([&] { return busy.driver->sink_counters().chunks_acked >= kAcked; });
  CHECK(taken);
  CHECK(busy.server.requests().size() == kAcked + kSenders);
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
  // Time in which a second sender would have started: nothing more may happen.
  std::this_thread::sleep_for(100ms);
  CHECK(busy.driver->counters().senders_busy == 1);
  busy.driver->Close();
  runner.join();
  const auto reqs = busy.server.requests();
  CHECK(reqs.size() == 4);
  for (const auto& r : reqs) CHECK(r.key.rfind("p0:", 0) == 0);  // oldest first, alone
  CHECK(busy.driver->spool().LoadCursor("p0").offset == AckedEnds(reqs, 3)["p0"]);
}

// The one send path (LLP 0014#one-path) for a pack: its Retry-After wait is the call's
// wait, so Close() cuts it as it cuts a partition's, and the members stay in ready/
// under their manifest for the next start.
TEST_CASE("DriverCloseCutsAPacksRetryAfterWaitAndKeepsItsMembers") {
  for (const bool close : {true, false}) {
    CAPTURE(close);
    fwdsink_test::ScriptedServer server;
    const auto spool =
        fwdsink::test::FreshDir("integration_close", close ? "pack_wait" : "pack_wait_twin");
    for (const auto& n : {"p1", "p2", "p3"}) AddPartition(spool, n, 2);
    // Twin: a Retry-After of 1 s waited out, then the pack is delivered.
    server.Then(429, {{"Retry-After", close ? "30" : "1"}});
    fwdsink::DriverOptions o;
    o.spool_dir = spool;
    o.forward.url = server.url();
    o.forward.backpressure.jitter = 0;
    o.concurrency = {.adaptive = false, .max = 1};
    PhaseSleeper sleeper;
    fwdsink::ForwardDeps deps;
    deps.sleeper = &sleeper;
    auto created = fwdsink::Driver::Create(o, std::move(deps));
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    auto driver = std::move(created).value();
    fwdsink::TickReport report;
    std::thread runner([&] { report = driver->Tick(); });
    // The phase: the pack was refused and its sender is blocked in the wait.
    const bool waiting =
        fwdsink::test::WaitFor([&] { return server.requests().size() == 1 && sleeper.sleeping(); });
    CHECK(waiting);
    CHECK(server.requests().front().key.rfind("pack:", 0) == 0);
    const auto t0 = std::chrono::steady_clock::now();
    if (close) driver->Close();
    runner.join();
    if (!close) {
      CHECK(report.delivered == 3);
      CHECK(server.requests().size() == 2);  // the same pack again, once
      CHECK(server.requests().back().key == server.requests().front().key);
      continue;
    }
    CHECK(std::chrono::steady_clock::now() - t0 < kCloseBound);
    CHECK(report.aborted);
    CHECK(report.delivered == 0);
    CHECK(server.requests().size() == 1);
    CHECK(fwdsink::test::FileNames(spool / "ready").size() == 3);  // nothing lost
    CHECK(fwdsink::test::FileNames(spool / "packs").size() == 1);  // resent under it
  }
}
