// SPDX-License-Identifier: Apache-2.0
// The sink's send loop over two endpoints: real sockets (two in-process scripted
// servers on 127.0.0.1), the fake clock doing every wait. @ref LLP 0019
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fwdsink/endpoints.h"
#include "fwdsink/forward_sink.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::Outcome;
using fwdsink::test::FreshDir;
using fwdsink_test::ScriptedServer;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view kSuite = "failover_sink";
constexpr std::size_t kChunkBytes = 64;  // a few ~20-byte rows per chunk

std::filesystem::path WritePartition(const std::string& name, int rows) {
  const auto path = FreshDir(kSuite, name) / "p1.ndjson";
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < rows; ++i) out << "{\"i\":" << i << ",\"pad\":\"xxxxxxxx\"}\n";
  return path;
}

httplib::Headers RetryAfter(const std::string& v) { return {{"Retry-After", v}}; }

// Options for a primary and one fallback; ladder 1 s, 2 s, ...; no jitter.
fwdsink::ForwardOptions TwoUrls(const ScriptedServer& primary, const ScriptedServer& fallback) {
  fwdsink::ForwardOptions o;
  o.url = primary.url();
  o.fallback_urls = {fallback.url()};
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = kChunkBytes;
  o.transport.read_timeout = 5s;
  o.backpressure.jitter = 0;
  o.backpressure.ladder = {1s, 2s, 4s};
  o.failover = {.failures_to_leave = 2, .failover_after = 30s, .failback_after = 60s};
  // Scripts are consumed in arrival order: one chunk in flight (LLP 0014#window).
  o.window = 1;
  return o;
}

struct Harness {
  fwdsink::FakeClock clock;
  std::vector<fwdsink::Event> events;
  fwdsink::ForwardDeps deps;
  std::unique_ptr<fwdsink::ForwardSink> sink;

  explicit Harness(const fwdsink::ForwardOptions& o) {
    deps.time = &clock;
    deps.sleeper = &clock;
    deps.on_event = [this](const fwdsink::Event& e) { events.push_back(e); };
    deps.endpoints = fwdsink::Endpoints::Make(o, deps);
    sink = Make(o);
  }
  // Another sender from a copy of the same deps (as the driver makes them).
  std::unique_ptr<fwdsink::ForwardSink> Make(const fwdsink::ForwardOptions& o) const {
    auto created = fwdsink::ForwardSink::Create(o, deps);
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    return std::move(created).value();
  }
  fwdsink::ForwardResult Forward(const std::filesystem::path& path,
                                 fwdsink::ForwardSink* s = nullptr) {
    return (s ? s : sink.get())->ForwardPartition("p1", path, 0, [](const auto&) { return true; });
  }
  int Count(std::string_view name) const {
    int n = 0;
    for (const auto& e : events) n += e.name == name ? 1 : 0;
    return n;
  }
  fwdsink::EndpointCountersSnapshot At(std::size_t i) const {
    return fwdsink::Snapshot(deps.endpoints->at(i).counters);
  }
};

}  // namespace

TEST_CASE("FailoverAfterTwoFailuresSendsTheSameChunkToTheFallbackAtOnce") {
  ScriptedServer primary, fallback;
  primary.Then(500);
  primary.Then(500);
  const auto path = WritePartition("two_failures", 3);
  Harness h(TwoUrls(primary, fallback));
  const auto r = h.Forward(path);
  CHECK(r.outcome == Outcome::kDelivered);
  // One ladder wait between the two failures; none before the fallback.
  CHECK(h.clock.sleeps() == std::vector<milliseconds>{1s});
  const auto p = primary.requests();
  const auto f = fallback.requests();
  REQUIRE(p.size() == 2);
  REQUIRE_FALSE(f.empty());
  // A retried chunk keeps its key and its bytes on every endpoint.
  CHECK(f.front().key == p.front().key);
  CHECK(f.front().body == p.front().body);
  CHECK(h.Count(fwdsink::events::kForwardFailover) == 1);
  CHECK(h.sink->counters().failovers == 1);
  CHECK(h.sink->counters().endpoint_in_use == 1);
  CHECK(h.At(0).failures == 2);
  CHECK(h.At(0).left == 1);
  CHECK(h.At(1).chunks_acked == f.size());
  for (const auto& e : h.events) CHECK_FALSE(e.endpoint.empty());  // labelled
}

TEST_CASE("ShortRetryAfterIsBackpressureTheSenderStays") {
  ScriptedServer primary, fallback;
  for (int i = 0; i < 3; ++i) primary.Then(429, RetryAfter("5"));
  const auto path = WritePartition("short_hold", 3);
  Harness h(TwoUrls(primary, fallback));
  CHECK(h.Forward(path).outcome == Outcome::kDelivered);
  // The three holds; after them only the pacer's restart after an outage (three
  // refusals in a row over 15 s: one request per 5 s, in slow start), never longer
  // than the hold. @ref LLP 0016#herd
  const auto sleeps = h.clock.sleeps();
  MESSAGE("sleeps: " << sleeps.size());
  REQUIRE(sleeps.size() >= 3);
  CHECK(std::vector<milliseconds>(sleeps.begin(), sleeps.begin() + 3) ==
        std::vector<milliseconds>{5s, 5s, 5s});
  for (std::size_t i = 3; i < sleeps.size(); ++i) CHECK(sleeps[i] <= 5s);
  CHECK(fallback.requests().empty());
  CHECK(h.Count(fwdsink::events::kForwardFailover) == 0);
  CHECK(h.At(0).holds == 3);
}

TEST_CASE("LongRetryAfterLeavesAtOnceAndClosesOnlyThatEndpointsGate") {
  ScriptedServer primary, fallback;
  primary.Then(429, RetryAfter("120"));
  const auto path = WritePartition("long_hold", 3);
  Harness h(TwoUrls(primary, fallback));
  CHECK(h.Forward(path).outcome == Outcome::kDelivered);
  CHECK(h.clock.sleeps().empty());  // no 120 s wait: the fallback took the chunk
  CHECK(primary.requests().size() == 1);
  CHECK(h.deps.endpoints->at(0).gate->Remaining(h.clock.MonotonicNow()).remaining > 100s);
  CHECK(h.deps.endpoints->at(1).gate->Remaining(h.clock.MonotonicNow()).remaining == 0ms);
}

TEST_CASE("ThePrimaryIsProbedWithARealChunkAndTakenBackNoSoonerThanFailback") {
  ScriptedServer primary, fallback;
  primary.Then(500);
  primary.Then(500);
  Harness h(TwoUrls(primary, fallback));
  REQUIRE(h.Forward(WritePartition("fail_back_1", 3)).outcome == Outcome::kDelivered);
  REQUIRE(h.sink->counters().failovers == 1);
  const std::size_t primary_before = primary.requests().size();

  SUBCASE("twin: before failback_after, everything stays on the fallback") {
    h.clock.Advance(58s);  // 1 s was slept already
    REQUIRE(h.Forward(WritePartition("fail_back_2", 3)).outcome == Outcome::kDelivered);
    CHECK(primary.requests().size() == primary_before);
    CHECK(h.sink->counters().probes == 0);
  }
  SUBCASE("after failback_after, the next chunk probes the primary; its 2xx takes it back") {
    h.clock.Advance(60s);
    const auto path = WritePartition("fail_back_3", 3);
    const std::size_t fallback_before = fallback.requests().size();
    REQUIRE(h.Forward(path).outcome == Outcome::kDelivered);
    // The probe is the partition's first chunk itself (two 25-byte rows), not a
    // made-up request; after it the rest goes to the primary too.
    const auto p = primary.requests();
    REQUIRE(p.size() == primary_before + 2);
    CHECK(p[primary_before].key == "p1:0-50");
    CHECK(p[primary_before].body == fwdsink::test::ReadFile(path).substr(0, 50));
    CHECK(p[primary_before + 1].key == "p1:50-75");
    CHECK(fallback.requests().size() == fallback_before);
    CHECK(h.sink->counters().probes == 1);
    CHECK(h.sink->counters().failbacks == 1);
    CHECK(h.Count(fwdsink::events::kForwardFailback) == 1);
    CHECK(h.deps.endpoints->active() == 0);
  }
  SUBCASE("a failed probe: the chunk goes on to the fallback without a wait") {
    primary.Then(500);
    h.clock.Advance(60s);
    const std::size_t sleeps = h.clock.sleeps().size();
    const std::size_t fallback_before = fallback.requests().size();
    const auto path = WritePartition("fail_back_4", 3);
    REQUIRE(h.Forward(path).outcome == Outcome::kDelivered);
    // The probed chunk, refused, goes on to the fallback unchanged: key and bytes.
    const auto p = primary.requests();
    const auto f = fallback.requests();
    REQUIRE(p.size() == primary_before + 1);
    REQUIRE(f.size() == fallback_before + 2);
    CHECK(p.back().key == "p1:0-50");
    CHECK(p.back().body == fwdsink::test::ReadFile(path).substr(0, 50));
    CHECK(f[fallback_before].key == p.back().key);
    CHECK(f[fallback_before].body == p.back().body);
    CHECK(f[fallback_before + 1].key == "p1:50-75");
    CHECK(h.sink->counters().probe_failures == 1);
    CHECK(h.clock.sleeps().size() == sleeps);
    CHECK(h.deps.endpoints->active() == 1);
    CHECK(primary.requests().size() == primary_before + 1);
  }
}

TEST_CASE("SendersFromCopiesOfOneDepsShareTheChoiceOfEndpoint") {
  ScriptedServer primary, fallback;
  primary.Then(500);
  primary.Then(500);
  const auto o = TwoUrls(primary, fallback);
  Harness h(o);
  auto second = h.Make(o);
  REQUIRE(h.Forward(WritePartition("shared_1", 3)).outcome == Outcome::kDelivered);
  const std::size_t primary_before = primary.requests().size();
  REQUIRE(h.Forward(WritePartition("shared_2", 3), second.get()).outcome == Outcome::kDelivered);
  CHECK(primary.requests().size() == primary_before);  // the second sender went to the fallback
  CHECK(second->counters().failovers == 0);
}

TEST_CASE("EndpointsMadeForOtherUrlsAreRefused") {
  ScriptedServer primary, fallback;
  auto o = TwoUrls(primary, fallback);
  Harness h(o);
  o.fallback_urls.clear();
  auto created = fwdsink::ForwardSink::Create(o, h.deps);
  REQUIRE_FALSE(created.ok());
  CHECK(created.status().field() == "fallback_urls");
}

TEST_CASE("FallbackUrlsAreValidated") {
  fwdsink::ForwardOptions o;
  o.url = "http://127.0.0.1:1/a";
  o.fallback_urls = {"ftp://x/"};
  CHECK(fwdsink::Validate(o).field() == "fallback_urls[0]");
  o.fallback_urls = {"http://127.0.0.1:2/a", "http://127.0.0.1:1/a"};
  CHECK(fwdsink::Validate(o).field() == "fallback_urls[1]");
  o.fallback_urls = {"http://127.0.0.1:2/a"};
  CHECK(fwdsink::Validate(o).ok());
  o.failover.failback_after = 0ms;
  CHECK(fwdsink::Validate(o).field() == "failover.failback_after");
}
