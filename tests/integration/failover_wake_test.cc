// SPDX-License-Identifier: Apache-2.0
// A failover wakes every sender waiting on the endpoint it leaves: the registration
// on the fake clock, and two senders on real sockets (two in-process scripted servers
// on 127.0.0.1), the fake clock doing every wait but the one parked. @ref LLP 0019#wake
#include <doctest/doctest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "fwdsink/endpoints.h"
#include "fwdsink/forward_sink.h"
#include "support/fake_clock.h"
#include "support/it_support.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::Endpoints;
using fwdsink::HealthReport;
using fwdsink::Outcome;
using fwdsink::test::AtExit;
using fwdsink_test::ScriptedServer;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view kSuite = "failover_wake";

fwdsink::ForwardOptions TwoUrls(const std::string& primary, const std::string& fallback) {
  fwdsink::ForwardOptions o;
  o.url = primary;
  o.fallback_urls = {fallback};
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = 1 << 20;  // one chunk per partition
  o.transport.read_timeout = 5s;
  o.backpressure.jitter = 0;
  o.backpressure.ladder = {20s, 40s};
  o.failover = {.failures_to_leave = 2, .failover_after = 30s, .failback_after = 60s};
  return o;
}

HealthReport Failed(std::size_t endpoint) {
  return {.endpoint = endpoint, .kind = HealthReport::Kind::kFailed, .wait = 20s};
}

// A sleeper that parks the calling thread until its token is stopped (a wake or
// Close()), recording each wait asked for. A wait that no token ends is cut after a
// long real bound and reported as elapsed, so a missing wake fails the test instead of
// hanging it; nothing here measures time.
class ParkingSleeper final : public fwdsink::Sleeper {
 public:
  [[nodiscard]] bool SleepFor(milliseconds d, std::stop_token stop) override {
    std::unique_lock lock(mu_);
    asked_.push_back(d);
    parked_ = true;
    cv_.notify_all();
    const bool woken = cv_.wait_for(lock, stop, std::chrono::seconds(20), [] { return false; });
    parked_ = false;
    (void)woken;
    return !stop.stop_requested();
  }
  // Blocks until a thread is parked here.
  void WaitParked() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return parked_; });
  }
  bool parked() const {
    std::lock_guard lock(mu_);
    return parked_;
  }
  std::vector<milliseconds> asked() const {
    std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  bool parked_ = false;              // guarded by mu_
  std::vector<milliseconds> asked_;  // guarded by mu_
};

std::filesystem::path WritePartition(const std::string& name) {
  const auto path = fwdsink::test::FreshDir(kSuite, name) / "p.ndjson";
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 3; ++i) out << "{\"" << name << "\":" << i << "}\n";
  return path;
}

}  // namespace

TEST_CASE("EndpointsWakeTheWaitersOfTheEndpointAFailoverLeaves") {
  fwdsink::FakeClock clock;
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  const auto endpoints = Endpoints::Make(TwoUrls("http://127.0.0.1:1", "http://127.0.0.1:2"), deps);
  std::stop_source close;

  SUBCASE("a failover away from 0 wakes its waiters, and only those") {
    const Endpoints::Waiting on_primary = endpoints->WaitOn(0, 0, close.get_token());
    const Endpoints::Waiting on_fallback = endpoints->WaitOn(1, 0, close.get_token());
    CHECK_FALSE(on_primary.left());
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    CHECK_FALSE(on_primary.token().stop_requested());  // one failure: the endpoint stays
    const auto d = endpoints->Report(Failed(0), clock.MonotonicNow());
    REQUIRE(d.move == fwdsink::HealthDecision::Move::kFailover);
    CHECK(on_primary.token().stop_requested());
    CHECK(on_primary.left());
    CHECK_FALSE(on_fallback.token().stop_requested());
    CHECK_FALSE(on_fallback.left());
  }
  SUBCASE("a wait that begins after a move the sender did not see has left at once") {
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    REQUIRE(endpoints->active() == 1);
    CHECK(endpoints->WaitOn(0, 0, close.get_token()).left());
    CHECK_FALSE(endpoints->WaitOn(1, 0, close.get_token()).left());
    // twin: the sender that saw the move (its own report, or a later Choose) waits.
    std::uint64_t seen = 0;
    (void)endpoints->Choose(clock.MonotonicNow(), &seen);
    CHECK(seen == 1);
    CHECK_FALSE(endpoints->WaitOn(0, seen, close.get_token()).left());
  }
  SUBCASE("twin: a move to an endpoint known down wakes nobody (the ladder paces)") {
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    std::uint64_t seen = 0;
    const Endpoints::Waiting on_fallback = endpoints->WaitOn(1, 1, close.get_token());
    (void)endpoints->Report(Failed(1), clock.MonotonicNow());
    const auto d = endpoints->Report(Failed(1), clock.MonotonicNow(), &seen);
    REQUIRE(d.active == 0);  // back to the primary, which is down
    CHECK_FALSE(d.resend_now);
    CHECK(seen == 1);
    CHECK_FALSE(on_fallback.token().stop_requested());
  }
  SUBCASE("Close() ends the wait, and it is no move") {
    const Endpoints::Waiting on = endpoints->WaitOn(0, 0, close.get_token());
    close.request_stop();
    CHECK(on.token().stop_requested());
    CHECK_FALSE(on.left());
  }
  SUBCASE("a wait that ended is not woken again") {
    { const Endpoints::Waiting on = endpoints->WaitOn(0, 0, close.get_token()); }
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    (void)endpoints->Report(Failed(0), clock.MonotonicNow());
    CHECK(endpoints->active() == 1);  // and no dangling registration was touched (ASan)
  }
}

TEST_CASE("AFailoverWakesASenderInItsRetryWaitAndItResendsTheSameChunkAtOnce") {
  ScriptedServer primary, fallback;
  primary.Then(500);  // the first sender's first attempt: one failure, a 20 s rung
  const auto o = TwoUrls(primary.url(), fallback.url());
  fwdsink::FakeClock clock;
  ParkingSleeper parking;
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  deps.sleeper = &clock;
  deps.endpoints = Endpoints::Make(o, deps);
  fwdsink::ForwardDeps parked_deps = deps;  // the same endpoints, its own sleeper
  parked_deps.sleeper = &parking;
  auto first = fwdsink::ForwardSink::Create(o, parked_deps);
  auto second = fwdsink::ForwardSink::Create(o, deps);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  const auto a = WritePartition("a");
  const auto b = WritePartition("b");
  const auto acked = [](const auto&) { return true; };
  auto sent = std::async(std::launch::async,
                         [&] { return first.value()->ForwardPartition("a", a, 0, acked); });
  const AtExit close{[&] { first.value()->Close(); }};
  parking.WaitParked();
  REQUIRE(primary.requests().size() == 1);

  SUBCASE("the second failure moves the endpoint: the parked sender goes to the fallback") {
    primary.Then(500);
    CHECK(second.value()->ForwardPartition("b", b, 0, acked).outcome == Outcome::kDelivered);
    REQUIRE(sent.wait_for(10s) == std::future_status::ready);
    CHECK(sent.get().outcome == Outcome::kDelivered);
    CHECK(parking.asked() == std::vector<milliseconds>{20s});  // woken, not slept again
    const auto p = primary.requests();
    const auto f = fallback.requests();
    REQUIRE(p.size() == 2);
    REQUIRE(f.size() == 2);
    // The parked sender's chunk: the same key and bytes on the fallback.
    const auto resent = f[0].key == p[0].key ? f[0] : f[1];
    CHECK(resent.key == p[0].key);
    CHECK(resent.body == p[0].body);
    CHECK(p[0].key.rfind("a:", 0) == 0);
  }
  SUBCASE("twin: a sender that succeeds on the primary wakes nobody") {
    CHECK(second.value()->ForwardPartition("b", b, 0, acked).outcome == Outcome::kDelivered);
    CHECK(deps.endpoints->active() == 0);
    CHECK(parking.parked());  // still asleep on its rung
    first.value()->Close();
    REQUIRE(sent.wait_for(10s) == std::future_status::ready);
    CHECK(sent.get().outcome == Outcome::kAborted);
    CHECK(fallback.requests().empty());
  }
}
