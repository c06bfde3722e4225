// SPDX-License-Identifier: Apache-2.0
// The driver's slots: a sender's long wait lends its slot to the other partitions and
// takes it back ahead of them (SenderSlot over SlotPool); and, at the driver, a
// partition asleep on its retry wait holds no other back. @ref LLP 0018#lend
#include <doctest/doctest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "driver/sender_slots.h"
#include "fwdsink/driver.h"
#include "support/fake_clock.h"
#include "support/it_support.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::SenderSlot;
using fwdsink::SlotPool;
using fwdsink::test::AtExit;
using fwdsink::test::WaitFor;
using fwdsink_test::ScriptedServer;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view kSuite = "sender_slots";

// A sleeper that runs `during` in place of the sleep (on the fake clock: no time).
struct CallbackSleeper final : fwdsink::Sleeper {
  std::function<void()> during;
  [[nodiscard]] bool SleepFor(milliseconds, std::stop_token stop) override {
    if (during) during();
    return !stop.stop_requested();
  }
};

// Parks the sleeping thread for a wait of 10 s or more until Wake() (then the wait
// elapsed on the fake clock) or its token stops; shorter waits (the pacer's) are the
// fake clock's.
class ParkingSleeper final : public fwdsink::Sleeper {
 public:
  explicit ParkingSleeper(fwdsink::FakeClock& clock) : clock_(clock) {}
  [[nodiscard]] bool SleepFor(milliseconds d, std::stop_token stop) override {
    if (d < 10s) return clock_.SleepFor(d, std::move(stop));
    std::unique_lock lock(mu_);
    asked_.push_back(d);
    ++parked_;
    cv_.notify_all();
    const bool woken = cv_.wait_for(lock, stop, 20s, [this] { return woken_; });
    woken_ = false;
    --parked_;
    if (woken) clock_.Advance(d);
    return !stop.stop_requested();
  }
  int parked() const {
    std::lock_guard lock(mu_);
    return parked_;
  }
  void Wake() {
    std::lock_guard lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  std::vector<milliseconds> asked() const {
    std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  fwdsink::FakeClock& clock_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  int parked_ = 0;                   // guarded by mu_
  bool woken_ = false;               // guarded by mu_
  std::vector<milliseconds> asked_;  // guarded by mu_
};

}  // namespace

TEST_CASE("ALongWaitLendsTheSlotAndAShortOneKeepsIt") {
  SlotPool pool([] { return std::size_t{1}; });
  fwdsink::DriverCounters counters;
  std::stop_source driver;
  CallbackSleeper inner;
  bool worth_lending = true;
  SenderSlot sender(
      pool, inner, driver.get_token(), [&] { return worth_lending; }, counters);
  REQUIRE(sender.AcquireOwn());
  std::size_t busy_during = 99;
  inner.during = [&] { busy_during = pool.busy(); };

  SUBCASE("a ladder rung or a Retry-After: lent, and held again after") {
    CHECK(sender.SleepFor(SenderSlot::kLendFrom, driver.get_token()));
    CHECK(busy_during == 0);
    CHECK(sender.held());
    CHECK(pool.busy() == 1);
  }
  SUBCASE("twin: the pacer's spacing keeps the slot") {
    CHECK(sender.SleepFor(SenderSlot::kLendFrom - 1ms, driver.get_token()));
    CHECK(busy_during == 1);
    CHECK(sender.held());
  }
  SUBCASE("twin: a wait while the endpoint is held (Retry-After) keeps the slot") {
    worth_lending = false;
    CHECK(sender.SleepFor(30s, driver.get_token()));
    CHECK(busy_during == 1);
    CHECK(sender.held());
  }
  SUBCASE("a wait without a slot (a stopped yield) lends nothing") {
    sender.ReleaseOwn();
    CHECK(sender.SleepFor(30s, driver.get_token()));
    CHECK(busy_during == 0);
    CHECK_FALSE(sender.held());
    CHECK(pool.busy() == 0);
  }
  SUBCASE("the driver stopping ends the wait for the slot back") {
    inner.during = [&] {
      CHECK(pool.Acquire(driver.get_token()));  // another sender took the lent slot
      driver.request_stop();
    };
    CHECK_FALSE(sender.SleepFor(30s, driver.get_token()));
    CHECK_FALSE(sender.held());
    CHECK(pool.busy() == 1);  // only the other sender's
  }
}

TEST_CASE("ASenderBackFromAWaitGoesFirstAndTheSenderInItsSlotYieldsAtItsNextChunk") {
  SlotPool pool([] { return std::size_t{1}; });
  fwdsink::DriverCounters counters;
  std::stop_source driver;
  CallbackSleeper inner_a;
  fwdsink::FakeClock clock;
  const auto always = [] { return true; };
  SenderSlot a(pool, inner_a, driver.get_token(), always, counters);
  SenderSlot b(pool, clock, driver.get_token(), always, counters);
  REQUIRE(a.AcquireOwn());
  std::promise<void> b_took_it;
  inner_a.during = [&] {
    CHECK(b.AcquireOwn());  // while a waits, b sends
    b_took_it.set_value();
  };
  auto a_sleeps =
      std::async(std::launch::async, [&] { return a.SleepFor(30s, driver.get_token()); });
  const AtExit stop_a{[&] { driver.request_stop(); }};
  b_took_it.get_future().wait();

  SUBCASE("b's next Yield hands the slot to a, and b waits for it") {
    REQUIRE(WaitFor([&] { return pool.returning() == 1; }));  // a waits to reclaim
    auto b_yields = std::async(std::launch::async, [&] {
      b.Yield();
      return b.held();
    });
    const AtExit stop_b{[&] { driver.request_stop(); }};
    REQUIRE(a_sleeps.wait_for(10s) == std::future_status::ready);
    CHECK(a_sleeps.get());
    CHECK(a.held());
    CHECK(pool.busy() == 1);
    a.ReleaseOwn();  // a's partition done: b goes on
    REQUIRE(b_yields.wait_for(10s) == std::future_status::ready);
    CHECK(b_yields.get());
    CHECK(b.held());
  }
  SUBCASE("twin: with nobody back from a wait, Yield within the limit keeps the slot") {
    b.ReleaseOwn();  // b's partition done: a takes its slot back
    REQUIRE(a_sleeps.wait_for(10s) == std::future_status::ready);
    CHECK(a_sleeps.get());
    CHECK(pool.returning() == 0);
    a.Yield();
    CHECK(a.held());
    CHECK(pool.busy() == 1);
  }
  SUBCASE("a new partition does not start ahead of a sender back from a wait") {
    REQUIRE(WaitFor([&] { return pool.returning() == 1; }));
    CallbackSleeper unused;
    SenderSlot c(pool, unused, driver.get_token(), always, counters);
    auto c_starts = std::async(std::launch::async, [&] { return c.AcquireOwn(); });
    const AtExit stop_c{[&] { driver.request_stop(); }};
    b.ReleaseOwn();
    REQUIRE(a_sleeps.wait_for(10s) == std::future_status::ready);
    CHECK(a.held());  // a got it, not c
    a.ReleaseOwn();
    REQUIRE(c_starts.wait_for(10s) == std::future_status::ready);
    CHECK(c_starts.get());
    c.ReleaseOwn();
  }
}

// The driver: two partitions, the first refused with a 503 and no Retry-After (a 20 s
// rung). While its sender sleeps on the rung, the second partition is sent.
TEST_CASE("APartitionAsleepOnItsRetryWaitHoldsNoOtherBack") {
  ScriptedServer server;
  server.Then(503);  // the first partition's first attempt
  const auto spool = fwdsink::test::FreshDir(kSuite, "driver");
  std::filesystem::create_directories(spool / "ready");
  for (const char* name : {"20260101T000001.000Z-1-1", "20260101T000002.000Z-1-2"}) {
    std::ofstream(spool / "ready" / (std::string(name) + ".ndjson"))
        << "{\"p\":\"" << name << "\"}\n";
  }
  fwdsink::DriverOptions o;
  o.spool_dir = spool;
  o.forward.url = server.url();
  o.forward.compression = fwdsink::Compression::kIdentity;
  o.forward.backpressure.jitter = 0;
  o.forward.backpressure.ladder = {20s};
  o.pack_below = 0;  // two partitions, two calls (packed, they would be one request)
  // One slot, so that only lending it lets the second partition go: issue 24's limit
  // held at 1 (the limit starts at 4 since issue 39, LLP 0018#start).
  o.concurrency.initial = 1;
  fwdsink::FakeClock clock;
  ParkingSleeper parking(clock);
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  deps.sleeper = &parking;

  SUBCASE("adaptive concurrency (its limit starts at 1): the second is sent during the wait") {
    auto driver = fwdsink::Driver::Create(o, deps);
    REQUIRE(driver.ok());
    auto tick = std::async(std::launch::async, [&] { return driver.value()->Tick(); });
    const AtExit close{[&] { driver.value()->Close(); }};
    REQUIRE(WaitFor([&] { return parking.parked() == 1; }));
    REQUIRE(WaitFor([&] { return server.requests().size() == 2; }));
    CHECK(parking.parked() == 1);  // the first still asleep on its rung
    CHECK(server.requests()[1].key.rfind("20260101T000002.000Z-1-2:", 0) == 0);
    parking.Wake();
    REQUIRE(tick.wait_for(10s) == std::future_status::ready);
    const auto r = tick.get();
    CHECK(r.delivered == 2);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 3);
    CHECK(reqs[2].key == reqs[0].key);  // the first re-sent in place after its rung
    CHECK(reqs[2].body == reqs[0].body);
    CHECK(parking.asked() == std::vector<milliseconds>{20s});
  }
  SUBCASE("twin: a Retry-After holds every sender, so the wait keeps the slot") {
    fwdsink_test::ScriptedServer held;
    held.Then(503, {{"Retry-After", "20"}});
    o.forward.url = held.url();
    auto driver = fwdsink::Driver::Create(o, deps);
    REQUIRE(driver.ok());
    auto tick = std::async(std::launch::async, [&] { return driver.value()->Tick(); });
    const AtExit close{[&] { driver.value()->Close(); }};
    REQUIRE(WaitFor([&] { return parking.parked() == 1; }));
    parking.Wake();
    REQUIRE(tick.wait_for(10s) == std::future_status::ready);
    CHECK(tick.get().delivered == 2);
    const auto reqs = held.requests();
    REQUIRE(reqs.size() == 3);
    CHECK(reqs[1].key == reqs[0].key);  // the first re-sent before the second began
    CHECK(reqs[2].key.rfind("20260101T000002.000Z-1-2:", 0) == 0);
    CHECK(parking.asked() == std::vector<milliseconds>{20s});
  }
  SUBCASE("twin: --concurrency 1, one sender: the second waits for the first") {
    o.concurrency = {.adaptive = false, .max = 1};
    auto driver = fwdsink::Driver::Create(o, deps);
    REQUIRE(driver.ok());
    auto tick = std::async(std::launch::async, [&] { return driver.value()->Tick(); });
    const AtExit close{[&] { driver.value()->Close(); }};
    REQUIRE(WaitFor([&] { return parking.parked() == 1; }));
    CHECK(server.requests().size() == 1);
    parking.Wake();
    REQUIRE(tick.wait_for(10s) == std::future_status::ready);
    CHECK(tick.get().delivered == 2);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 3);
    CHECK(reqs[1].key == reqs[0].key);  // the first finished before the second began
    CHECK(reqs[2].key.rfind("20260101T000002.000Z-1-2:", 0) == 0);
  }
}
