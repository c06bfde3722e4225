// SPDX-License-Identifier: Apache-2.0
// Attempt on the fake clock: each step returns when it wants to be woken (a Retry-After,
// a ladder rung, a gate hold, a pace) and it never sleeps itself: the clock's sleeps
// stay empty, whatever the attempt decides.
#include "engine/attempt.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "fwdsink/endpoints.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using fwdsink::Attempt;
using fwdsink::AttemptRecord;
using fwdsink::TransportResult;
using Kind = fwdsink::Attempt::Step::Kind;
using EndKind = fwdsink::Attempt::End::Kind;

namespace {

fwdsink::ForwardOptions Options() {
  fwdsink::ForwardOptions o;
  o.url = "http://127.0.0.1:9/ingest";  // never connected to: the test answers
  o.backpressure.jitter = 0;            // exact waits
  o.backpressure.inline_budget = 60s;
  return o;
}

// Everything one sink's attempts share, with the fake clock and a test's answers.
struct Rig {
  fwdsink::FakeClock clock;
  fwdsink::ForwardOptions options = Options();
  std::shared_ptr<fwdsink::Endpoints> endpoints =
      fwdsink::Endpoints::Make(options, fwdsink::ForwardDeps{});
  fwdsink::SinkCredentials credentials = Links(options);
  fwdsink::Counters counters;
  fwdsink::UniformRandom random;
  std::stop_source stop;
  std::vector<fwdsink::Event> events;
  std::vector<AttemptRecord> records;
  fwdsink::AttemptObserver observer = [this](const AttemptRecord& r) { records.push_back(r); };
  fwdsink::PacingReport pacing;
  fwdsink::Route route;
  fwdsink::Bisection bisection;
  fwdsink::SendCore core{.options = options,
                         .endpoints = *endpoints,
                         .credentials = credentials,
                         .counters = counters,
                         .time = clock,
                         .random = random,
                         .stop = stop.get_token(),
                         .content_encoding = {},
                         .emit = [this](fwdsink::Event e) { events.push_back(std::move(e)); },
                         .set_state = [](fwdsink::ForwardSink::State) {},
                         .observer = observer,
                         .pacing = pacing,
                         .route = route,
                         .bisection = bisection};
  std::string wire = "{\"seq\":1}\n{\"seq\":2}\n";
  fwdsink::Request request{.partition = "p",
                           .range = {.begin = 0, .end = 20, .rows = 2},
                           .key = "p:0-20",
                           .body = wire,
                           .wire = &wire};

  static fwdsink::SinkCredentials Links(const fwdsink::ForwardOptions& o) {
    fwdsink::SinkCredentials c;
    auto transport = fwdsink::HttpTransport::Create(o.url, o.transport);
    REQUIRE(transport.ok());
    c.links.push_back(fwdsink::EndpointLink{.transport = std::move(transport).value()});
    return c;
  }
  fwdsink::MonotonicTime now() const { return clock.MonotonicNow(); }
};

TransportResult Http(int status, std::optional<std::string> retry_after = std::nullopt) {
  TransportResult r;
  r.response.status = status;
  r.response.retry_after = std::move(retry_after);
  return r;
}

}  // namespace

TEST_CASE("Attempt: a Retry-After is a wake time on the endpoint, and the same request again") {
  Rig rig;
  Attempt attempt(rig.core, rig.request);
  const auto start = rig.now();
  REQUIRE(attempt.Start().kind == Kind::kPost);
  const fwdsink::HeaderList headers = attempt.headers();
  const Attempt::Step wait = attempt.Answered(Http(429, "7"), 0us);
  REQUIRE(wait.kind == Kind::kWait);
  CHECK(wait.wake_at - start == 7s);
  CHECK(wait.on_endpoint);
  CHECK(rig.clock.sleeps().empty());  // it asked to be woken; it did not sleep
  CHECK(rig.counters.status_429.load() == 1);
  CHECK(rig.counters.waits.load() == 1);
  rig.clock.Advance(7s);
  REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  CHECK(attempt.headers() == headers);  // the same key and headers on the re-send
  REQUIRE(attempt.Answered(Http(200), 0us).kind == Kind::kDone);
  CHECK(attempt.end().kind == EndKind::kVerdict);
  CHECK(attempt.end().verdict.action == fwdsink::Action::kAcknowledge);
  CHECK(attempt.attempts() == 1);
  CHECK(rig.clock.sleeps().empty());
  // The observer heard both answers where they happened: a refusal, then an accepted
  // request whose chunk had waited.
  REQUIRE(rig.records.size() == 2);
  CHECK(rig.records[0].kind == AttemptRecord::Kind::kRefused);
  CHECK(rig.records[0].status == 429);
  CHECK(rig.records[1].kind == AttemptRecord::Kind::kAccepted);
  CHECK(rig.records[1].pushed_back);
}

TEST_CASE("Attempt: without Retry-After the wake time is the ladder's rung") {
  Rig rig;
  rig.options.backpressure.inline_budget = 300s;  // room for two rungs (30 s + 60 s)
  Attempt attempt(rig.core, rig.request);
  const auto start = rig.now();
  REQUIRE(attempt.Start().kind == Kind::kPost);
  const Attempt::Step first = attempt.Answered(Http(503), 0us);
  REQUIRE(first.kind == Kind::kWait);
  CHECK(first.wake_at - start == 30s);
  rig.clock.Advance(30s);
  REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  const Attempt::Step second = attempt.Answered(Http(503), 0us);
  REQUIRE(second.kind == Kind::kWait);
  CHECK(second.wake_at - rig.now() == 60s);  // the next rung
  CHECK(rig.clock.sleeps().empty());
  CHECK(rig.records[0].kind == AttemptRecord::Kind::kRefused);
}

TEST_CASE("Attempt: a gate hold another sender set is a wake time, then the post") {
  Rig rig;
  rig.endpoints->at(0).gate->HoldUntil(rig.now() + 5s, "byte_rate");
  Attempt attempt(rig.core, rig.request);
  const auto start = rig.now();
  const Attempt::Step held = attempt.Start();
  REQUIRE(held.kind == Kind::kWait);
  CHECK(held.wake_at - start == 5s);
  CHECK(held.on_endpoint);
  CHECK(rig.counters.gate_waits.load() == 1);
  REQUIRE(rig.events.size() == 1);
  CHECK(rig.events[0].name == "forward.gate_wait");
  rig.clock.Advance(5s);
  CHECK(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  CHECK(rig.clock.sleeps().empty());
}

TEST_CASE("Attempt: a pace is a wake time not on the endpoint") {
  Rig rig;
  fwdsink::EndpointPacer& pacer = *rig.endpoints->at(0).pacer;
  // An advertised quota of one request every 2 s, its burst already spent.
  pacer.OnAccepted(rig.now(), 20,
                   fwdsink::AdvertisedQuota{
                       .unit = fwdsink::QuotaUnit::kRequests, .rate_per_s = 0.5, .burst = 1});
  REQUIRE(pacer.Reserve(rig.now(), 20) == 0ms);
  Attempt attempt(rig.core, rig.request);
  const auto start = rig.now();
  const Attempt::Step paced = attempt.Start();
  REQUIRE(paced.kind == Kind::kWait);
  CHECK_FALSE(paced.on_endpoint);  // a failover does not cut a pace short
  CHECK(paced.wake_at - start > 0ms);
  CHECK(paced.wake_at - start <= 2s);
  CHECK(rig.counters.pacer_waits.load() == 1);
  rig.clock.Advance(std::chrono::duration_cast<std::chrono::milliseconds>(paced.wake_at - start));
  CHECK(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  CHECK(rig.clock.sleeps().empty());
}

TEST_CASE("Attempt: twins that must not wait") {
  SUBCASE("a 200 on the first post ends it with no wait and no refusal counted") {
    Rig rig;
    Attempt attempt(rig.core, rig.request);
    REQUIRE(attempt.Start().kind == Kind::kPost);
    REQUIRE(attempt.Answered(Http(200), 0us).kind == Kind::kDone);
    CHECK(attempt.end().verdict.action == fwdsink::Action::kAcknowledge);
    CHECK(rig.counters.waits.load() == 0);
    REQUIRE(rig.records.size() == 1);
    CHECK_FALSE(rig.records[0].pushed_back);
  }
  SUBCASE("a wait past the inline budget is a give-up, not a wake time") {
    Rig rig;
    Attempt attempt(rig.core, rig.request);
    REQUIRE(attempt.Start().kind == Kind::kPost);
    REQUIRE(attempt.Answered(Http(429, "120"), 0us).kind == Kind::kDone);
    CHECK(attempt.end().kind == EndKind::kGiveUp);
    CHECK(attempt.end().would_wait == 120s);
    CHECK(rig.counters.waits.load() == 0);
  }
  SUBCASE("Close() during a wait ends the attempt") {
    Rig rig;
    Attempt attempt(rig.core, rig.request);
    REQUIRE(attempt.Start().kind == Kind::kPost);
    REQUIRE(attempt.Answered(Http(429, "7"), 0us).kind == Kind::kWait);
    REQUIRE(attempt.Woke(Attempt::Woken::kStopped).kind == Kind::kDone);
    CHECK(attempt.end().kind == EndKind::kAborted);
  }
}

namespace {
TransportResult Broken(fwdsink::WirePhase phase,
                       fwdsink::TransportError error = fwdsink::TransportError::kIo) {
  TransportResult r;
  r.error = error;
  r.message = "broken";
  r.phase = phase;
  return r;
}
}  // namespace

// A connection that breaks under a request is retried soon on a fresh one: 250 ms, then
// 1 s (a refused connect right after a break is the same restart), then the ladder.
// @ref LLP 0014#reconnect
TEST_CASE("Attempt: a broken connection is retried at the reconnect rungs, then the ladder") {
  Rig rig;
  rig.options.backpressure.inline_budget = 300s;
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);
  const Attempt::Step first = attempt.Answered(Broken(fwdsink::WirePhase::kBody), 0us);
  REQUIRE(first.kind == Kind::kWait);
  CHECK(first.wake_at - rig.now() == 250ms);
  REQUIRE(rig.events.size() == 1);
  CHECK(rig.events[0].name == fwdsink::events::kForwardTransportError);
  CHECK(rig.events[0].phase == "body");
  CHECK(rig.events[0].wait_source == "reconnect");
  CHECK(rig.counters.transport_errors_body.load() == 1);
  rig.clock.Advance(250ms);
  REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  const Attempt::Step second = attempt.Answered(
      Broken(fwdsink::WirePhase::kConnect, fwdsink::TransportError::kConnect), 0us);
  REQUIRE(second.kind == Kind::kWait);
  CHECK(second.wake_at - rig.now() == 1s);
  CHECK(rig.counters.transport_errors_connect.load() == 1);
  rig.clock.Advance(1s);
  REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  const Attempt::Step third = attempt.Answered(
      Broken(fwdsink::WirePhase::kConnect, fwdsink::TransportError::kConnect), 0us);
  REQUIRE(third.kind == Kind::kWait);
  CHECK(third.wake_at - rig.now() == 30s);  // the ladder's first rung: the endpoint is down
  CHECK(rig.events.back().wait_source == "ladder");
  CHECK(rig.counters.transport_errors.load() == 3);
  CHECK(rig.clock.sleeps().empty());
}

// Twins: an endpoint that cannot be reached at all meets the ladder at once; a 503
// without Retry-After is the ladder's too, whatever broke before.
TEST_CASE("Attempt: a refused connect without a break first, and a 503, use the ladder") {
  Rig rig;
  rig.options.backpressure.inline_budget = 300s;
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);
  const Attempt::Step refused = attempt.Answered(
      Broken(fwdsink::WirePhase::kConnect, fwdsink::TransportError::kConnect), 0us);
  REQUIRE(refused.kind == Kind::kWait);
  CHECK(refused.wake_at - rig.now() == 30s);
  CHECK(rig.events.back().name == fwdsink::events::kForwardTransportError);
  CHECK(rig.events.back().phase == "connect");
  Attempt other(rig.core, rig.request);
  REQUIRE(other.Start().kind == Kind::kPost);
  REQUIRE(other.Answered(Broken(fwdsink::WirePhase::kResponseHead), 0us).kind == Kind::kWait);
  rig.clock.Advance(250ms);
  REQUIRE(other.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  const Attempt::Step busy = other.Answered(Http(503), 0us);
  REQUIRE(busy.kind == Kind::kWait);
  CHECK(busy.wake_at - rig.now() == 60s);  // the ladder's rung for its second failure
  CHECK(rig.events.back().name == fwdsink::events::kForwardBackpressure);
  CHECK(rig.events.back().phase.empty());
}

// A 417 to a request that carried Expect is re-sent at once without it; the endpoint
// keeps Expect off. @ref LLP 0017#expect-417
TEST_CASE("Attempt: a 417 to Expect posts again at once with Expect off for the endpoint") {
  Rig rig;
  rig.options.expect_continue = fwdsink::ExpectContinue::kAlways;  // a request with Expect
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);
  CHECK(attempt.limits().allow_expect);
  TransportResult refused = Http(417);
  refused.expect_sent = true;
  REQUIRE(attempt.Answered(refused, 0us).kind == Kind::kPost);
  CHECK_FALSE(attempt.limits().allow_expect);
  CHECK(rig.endpoints->at(0).expect_off->load());
  CHECK(attempt.attempts() == 0);  // not a failed attempt
  REQUIRE(attempt.Answered(Http(200), 0us).kind == Kind::kDone);
  CHECK(attempt.end().verdict.action == fwdsink::Action::kAcknowledge);
  REQUIRE(rig.events.size() == 1);
  CHECK(rig.events[0].name == fwdsink::events::kForwardExpectOff);
  CHECK(rig.clock.sleeps().empty());
}

// A request that was under way (it ran as long as the last reconnect rung) before its
// connection broke starts the streak afresh; one that breaks at once walks to the ladder
// (the twin is the test above). @ref LLP 0014#reconnect
TEST_CASE("Attempt: a break after a long request starts the reconnect streak afresh") {
  Rig rig;
  rig.options.backpressure.inline_budget = 300s;
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);
  for (int i = 0; i < 5; ++i) {
    const Attempt::Step s = attempt.Answered(Broken(fwdsink::WirePhase::kBody), 2s);
    REQUIRE(s.kind == Kind::kWait);
    CHECK(s.wake_at - rig.now() == 250ms);
    rig.clock.Advance(250ms);
    REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  }
  CHECK(rig.counters.transport_errors_body.load() == 5);
}

// A refused connect after the kept-alive connection was found closed is a front that
// went away between requests: the reconnect rungs, not the ladder. @ref LLP 0014#reconnect
TEST_CASE("Attempt: a refused connect after a lost keep-alive connection reconnects soon") {
  Rig rig;
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);
  TransportResult lost = Broken(fwdsink::WirePhase::kConnect, fwdsink::TransportError::kConnect);
  lost.connection_lost = true;
  const Attempt::Step s = attempt.Answered(lost, 0us);
  REQUIRE(s.kind == Kind::kWait);
  CHECK(s.wake_at - rig.now() == 250ms);
}

// A refused connect within 5 s of the endpoint's last answer (to any sender) is a front
// restarting: the reconnect rungs; 5 s later it is an outage: the ladder (the twin).
TEST_CASE("Attempt: a refused connect soon after the endpoint answered reconnects soon") {
  Rig rig;
  rig.options.backpressure.inline_budget = 300s;
  Attempt first(rig.core, rig.request);
  REQUIRE(first.Start().kind == Kind::kPost);
  REQUIRE(first.Answered(Http(200), 0us).kind == Kind::kDone);
  const TransportResult refused =
      Broken(fwdsink::WirePhase::kConnect, fwdsink::TransportError::kConnect);
  rig.clock.Advance(4s);
  Attempt soon(rig.core, rig.request);
  REQUIRE(soon.Start().kind == Kind::kPost);
  const Attempt::Step restart = soon.Answered(refused, 0us);
  REQUIRE(restart.kind == Kind::kWait);
  CHECK(restart.wake_at - rig.now() == 250ms);
  rig.clock.Advance(2s);  // 6 s after the last answer
  Attempt later(rig.core, rig.request);
  REQUIRE(later.Start().kind == Kind::kPost);
  const Attempt::Step outage = later.Answered(refused, 0us);
  REQUIRE(outage.kind == Kind::kWait);
  CHECK(outage.wake_at - rig.now() == 30s);
}

// A send that reserved its slot before a newer answer arrived passes the gate and the
// pacer again before it goes (issue 38 item 6, LLP 0016#recheck): a window's requests
// held for a connection, or asleep on their pace, do not go under a newer `remaining: 0`
// or Retry-After. The twins: with no newer answer, the held request goes at once, and
// it is counted once.
TEST_CASE("Attempt: a reservation older than a newer remaining 0 is taken again") {
  Rig rig;
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);  // held by the loop for a connection
  SUBCASE("another request's answer: none left, reset in 5 s") {
    // As ratelimit.cc reads Limit 10, Remaining 0, Reset 5: one request per 5 s.
    const fwdsink::AdvertisedQuota none_left{.rate_per_s = 0.2, .burst = 10, .remaining = 0};
    rig.endpoints->at(0).pacer->OnAccepted(rig.now(), 20, none_left);
    const Attempt::Step step = attempt.Recheck();
    REQUIRE(step.kind == Kind::kWait);
    CHECK(step.wake_at - rig.now() >= 5s);
    rig.clock.Advance(std::chrono::ceil<std::chrono::milliseconds>(step.wake_at - rig.now()));
    REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  }
  SUBCASE("another request's 429 with Retry-After: 7") {
    rig.endpoints->at(0).gate->HoldUntil(rig.now() + 7s, "throttled");
    const Attempt::Step step = attempt.Recheck();
    REQUIRE(step.kind == Kind::kWait);
    CHECK(step.wake_at - rig.now() >= 7s);
    CHECK(step.on_endpoint);
  }
  SUBCASE("twin: a count with room left changes nothing") {
    const fwdsink::AdvertisedQuota room{.rate_per_s = 0.2, .burst = 10, .remaining = 10};
    rig.endpoints->at(0).pacer->OnAccepted(rig.now(), 20, room);
    CHECK(attempt.Recheck().kind == Kind::kPost);
  }
  SUBCASE("twin: no newer answer, it goes at once") {
    CHECK(attempt.Recheck().kind == Kind::kPost);
  }
  CHECK(rig.counters.chunks_sent.load() == 1);  // rechecked, never counted twice
}

TEST_CASE("Attempt: a paced send that wakes after a newer remaining 0 waits again") {
  Rig rig;
  auto& pacer = *rig.endpoints->at(0).pacer;
  // 2 a second, nothing left: the first send waits for its slot.
  pacer.OnAccepted(rig.now(), 20,
                   fwdsink::AdvertisedQuota{.rate_per_s = 2.0, .burst = 1, .remaining = 0});
  Attempt attempt(rig.core, rig.request);
  const Attempt::Step paced = attempt.Start();
  REQUIRE(paced.kind == Kind::kWait);
  rig.clock.Advance(std::chrono::ceil<std::chrono::milliseconds>(paced.wake_at - rig.now()));
  SUBCASE("a newer count says none left, reset in 5 s") {
    pacer.OnAccepted(rig.now(), 20,
                     fwdsink::AdvertisedQuota{.rate_per_s = 0.2, .burst = 10, .remaining = 0});
    const Attempt::Step again = attempt.Woke(Attempt::Woken::kElapsed);
    REQUIRE(again.kind == Kind::kWait);
    CHECK(again.wake_at - rig.now() >= 5s);
  }
  SUBCASE("twin: nothing newer, it goes when its slot comes") {
    CHECK(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  }
}

// Expect only while a refusal is likely: none on a fresh endpoint, while the memory of a
// 429 lasts yes, after it no again; `always` is the old rule. @ref LLP 0017#expect-when
TEST_CASE("Attempt: Expect after a 429 within the memory, none on a fresh endpoint") {
  Rig rig;
  Attempt attempt(rig.core, rig.request);
  REQUIRE(attempt.Start().kind == Kind::kPost);
  CHECK_FALSE(attempt.limits().allow_expect);  // fresh: no refusal is coming
  REQUIRE(attempt.Answered(Http(429, "1"), 0us).kind == Kind::kWait);
  rig.clock.Advance(1s);
  REQUIRE(attempt.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  CHECK(attempt.limits().allow_expect);  // the re-send, right after the refusal
  REQUIRE(attempt.Answered(Http(200), 0us).kind == Kind::kDone);
  // Another chunk to the endpoint within the minute after the wait: Expect; past it, no.
  rig.clock.Advance(59s);
  Attempt next(rig.core, rig.request);
  REQUIRE(next.Start().kind == Kind::kPost);
  CHECK(next.limits().allow_expect);
  rig.clock.Advance(1s);
  CHECK_FALSE(next.limits().allow_expect);
  SUBCASE("twin: `always` sends it on a fresh endpoint too") {
    Rig always;
    always.options.expect_continue = fwdsink::ExpectContinue::kAlways;
    Attempt fresh(always.core, always.request);
    REQUIRE(fresh.Start().kind == Kind::kPost);
    CHECK(fresh.limits().allow_expect);
  }
  SUBCASE("a 413 is a refusal too") {
    Rig refused;
    Attempt first(refused.core, refused.request);
    REQUIRE(first.Start().kind == Kind::kPost);
    (void)first.Answered(Http(413), 0us);
    Attempt again(refused.core, refused.request);
    REQUIRE(again.Start().kind == Kind::kPost);
    CHECK(again.limits().allow_expect);
  }
}

// An endpoint that lets the wait for 100 Continue run out twice in a row ignores the
// header: no Expect to it for 10 minutes, refusals or not (an event, a counter); then
// again while a refusal is likely. @ref LLP 0017#expect-when
TEST_CASE("Attempt: no Expect for 10 minutes after an endpoint ignored it twice") {
  Rig rig;
  rig.options.backpressure.inline_budget = 1h;  // one chunk refused across the pause
  const auto waited_out = [] {
    TransportResult r = Http(200);
    r.expect_sent = true;
    r.continue_wait_expired = true;  // no 100, no status: the body went after the wait
    return r;
  };
  rig.endpoints->at(0).expect->OnRefused(rig.now(), 0ms);  // a refusal is likely
  for (int i = 0; i < 2; ++i) {
    Attempt attempt(rig.core, rig.request);
    REQUIRE(attempt.Start().kind == Kind::kPost);
    CHECK(attempt.limits().allow_expect);
    REQUIRE(attempt.Answered(waited_out(), 0us).kind == Kind::kDone);
  }
  CHECK(rig.counters.expect_sent.load() == 2);
  CHECK(rig.counters.expect_timeouts.load() == 2);
  CHECK(rig.counters.expect_ignored.load() == 1);
  REQUIRE(rig.events.size() == 1);
  CHECK(rig.events[0].name == fwdsink::events::kForwardExpectIgnored);
  CHECK(rig.events[0].wait == 10min);
  // A 429 now would make a refusal likely, but the endpoint ignores the header.
  Attempt refused(rig.core, rig.request);
  REQUIRE(refused.Start().kind == Kind::kPost);
  REQUIRE(refused.Answered(Http(429, "1"), 0us).kind == Kind::kWait);
  rig.clock.Advance(1s);
  REQUIRE(refused.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  CHECK_FALSE(refused.limits().allow_expect);
  rig.clock.Advance(10min - 1s - 1ms);
  CHECK_FALSE(refused.limits().allow_expect);
  REQUIRE(refused.Answered(Http(429, "1"), 0us).kind == Kind::kWait);  // likely still
  rig.clock.Advance(1s);
  REQUIRE(refused.Woke(Attempt::Woken::kElapsed).kind == Kind::kPost);
  CHECK(refused.limits().allow_expect);  // ten minutes on: Expect again, when likely
  CHECK(rig.clock.sleeps().empty());
  SUBCASE("twin: a head answered in between keeps Expect on") {
    Rig other;
    other.endpoints->at(0).expect->OnRefused(other.now(), 0ms);
    for (const bool expired : {true, false, true}) {
      Attempt attempt(other.core, other.request);
      REQUIRE(attempt.Start().kind == Kind::kPost);
      CHECK(attempt.limits().allow_expect);
      TransportResult r = Http(200);
      r.expect_sent = true;
      r.continue_wait_expired = expired;
      REQUIRE(attempt.Answered(r, 0us).kind == Kind::kDone);
    }
    CHECK(other.counters.expect_ignored.load() == 0);
    CHECK(other.events.empty());
  }
}
