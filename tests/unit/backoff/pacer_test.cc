// SPDX-License-Identifier: Apache-2.0
// EndpointPacer on the fake clock: unthrottled it never waits; it honours an advertised
// quota; it falls on a refusal, rises while accepted, converges on a token bucket,
// forgets when refusals stop; off means off.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "fwdsink/pacer.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using fwdsink::AdvertisedQuota;
using fwdsink::EndpointPacer;
using fwdsink::MonotonicTime;
using fwdsink::PaceSource;
using fwdsink::PacingPolicy;
using fwdsink::QuotaUnit;
using std::chrono::milliseconds;

namespace {

constexpr std::uint64_t kChunk = 100'000;  // wire bytes per request

// Sends `n` chunks back to back, each accepted, advancing `clock` by `each`.
void AcceptMany(EndpointPacer& p, fwdsink::FakeClock& clock, int n, milliseconds each = 10ms) {
  for (int i = 0; i < n; ++i) {
    clock.Advance(p.Reserve(clock.MonotonicNow(), kChunk));
    clock.Advance(each);
    p.OnAccepted(clock.MonotonicNow(), kChunk, std::nullopt);
  }
}

// A token bucket in bytes (tokens may not go negative; a chunk needs all its bytes).
struct Bucket {
  double rate, burst, tokens;
  MonotonicTime at;
  bool Take(MonotonicTime now, double n) {
    tokens = std::min(burst, tokens + rate * std::chrono::duration<double>(now - at).count());
    at = now;
    if (tokens < n) return false;
    tokens -= n;
    return true;
  }
};

// Slow start only doubling: the cases that build a starved sender from a tiny first
// estimate (slow_start_requests_per_s would lift it to a fair share's order).
PacingPolicy PureDoubling(PacingPolicy policy = {}) {
  policy.slow_start_requests_per_s = 0;
  return policy;
}

// A sender that accepted `n` requests 10 ms apart, was refused (1 s wait) and then
// sent for `secs` seconds in slow start at its pace; returns its request rate then, and
// sets `estimate` to the first estimate and `doublings` to the seconds of slow start.
double SlowStart(const PacingPolicy& policy, int n, double secs, double& estimate,
                 double& doublings) {
  fwdsink::FakeClock clock;
  EndpointPacer p(policy);
  AcceptMany(p, clock, n);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  estimate = p.Current(clock.MonotonicNow()).requests_per_s;
  clock.Advance(1s);  // the wait: slow start accrues from its end
  const MonotonicTime t0 = clock.MonotonicNow();
  while (clock.MonotonicNow() - t0 < std::chrono::duration<double>(secs)) {
    AcceptMany(p, clock, 1);
  }
  doublings = std::chrono::duration<double>(clock.MonotonicNow() - t0).count();
  return p.Current(clock.MonotonicNow()).requests_per_s;
}

}  // namespace

TEST_CASE("UnthrottledThePacerNeverWaitsAndLearnsNothing") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  for (int i = 0; i < 1000; ++i) {
    CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 0ms);
    p.OnAccepted(clock.MonotonicNow(), kChunk, std::nullopt);
  }
  CHECK(p.Current(clock.MonotonicNow()).source == PaceSource::kNone);
}

TEST_CASE("ARefusalAfterAcceptedRequestsLearnsARateThatPaces") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  AcceptMany(p, clock, 10);  // 10 accepted in 100 ms: a burst
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  const auto r = p.Current(clock.MonotonicNow());
  CHECK(r.source == PaceSource::kLearned);
  // The burst spread over its time and the wait: 10 requests over 1.1 s.
  CHECK(r.requests_per_s == doctest::Approx(10 / 1.1).epsilon(0.01));
  clock.Advance(1s);
  CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 0ms);  // the first goes at once
  CHECK(p.Reserve(clock.MonotonicNow(), kChunk) > 50ms);  // the next is spaced
  SUBCASE("twin: refused before anything was accepted, nothing is learned") {
    EndpointPacer q;
    q.OnRefused(clock.MonotonicNow(), 5s, std::nullopt);
    CHECK(q.Current(clock.MonotonicNow()).source == PaceSource::kNone);
    CHECK(q.Reserve(clock.MonotonicNow(), kChunk) == 0ms);
  }
}

TEST_CASE("RisesWhileAcceptedAndFallsOnTheNextRefusal") {
  fwdsink::FakeClock clock;
  PacingPolicy policy;
  EndpointPacer p(policy);
  AcceptMany(p, clock, 10);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  clock.Advance(1s);
  // 10 chunks of 100 kB over their 100 ms and the 1 s wait.
  const double start = p.Current(clock.MonotonicNow()).bytes_per_s;
  CHECK(start == doctest::Approx(1e6 / 1.1));
  const MonotonicTime t0 = clock.MonotonicNow();
  AcceptMany(p, clock, 20);  // slow start: doubling per second of sending
  const double sent_s = std::chrono::duration<double>(clock.MonotonicNow() - t0).count();
  CHECK(sent_s == doctest::Approx(1.295));  // the 20 paced requests took 1.295 s
  const double risen = p.Current(clock.MonotonicNow()).bytes_per_s;
  // (start + 2 requests/s x 100 kB) x 2^1.295 - 200 kB/s: the documented slow start.
  CHECK(risen == doctest::Approx(2'521'454).epsilon(1e-5));
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  const double fallen = p.Current(clock.MonotonicNow()).bytes_per_s;
  CHECK(fallen == doctest::Approx(risen * 0.55));  // leaving slow start cuts to 0.55 x
  CHECK(fallen == doctest::Approx(1'386'800).epsilon(1e-5));
  SUBCASE("a sender slower than the pace is cut from what it really sent") {
    clock.Advance(1s);
    AcceptMany(p, clock, 3, 2s);  // 3 chunks in 6 s: 50 kB/s, far below the pace
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
    CHECK(p.Current(clock.MonotonicNow()).bytes_per_s < 0.1 * fallen);
  }
  SUBCASE("a second refusal with nothing accepted in between does not cut again") {
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
    CHECK(p.Current(clock.MonotonicNow()).bytes_per_s == doctest::Approx(fallen));
  }
  SUBCASE("senders refused together cut once, even with an acceptance in between") {
    // Several senders in flight (LLP 0018): one of them, sent before the cut, is
    // accepted after it, another is refused within the cut's wait.
    clock.Advance(100ms);
    p.OnAccepted(clock.MonotonicNow(), kChunk, std::nullopt);
    clock.Advance(100ms);
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
    CHECK(p.Current(clock.MonotonicNow()).bytes_per_s == doctest::Approx(fallen));
    SUBCASE("twin: a refusal after the wait, with an acceptance, cuts again") {
      clock.Advance(1s);
      p.OnAccepted(clock.MonotonicNow(), kChunk, std::nullopt);
      p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
      CHECK(p.Current(clock.MonotonicNow()).bytes_per_s < fallen);
    }
  }
  SUBCASE("after slow start, increase is additive and decrease is by `decrease`") {
    clock.Advance(1s);  // the wait: no increase accrues during it
    const MonotonicTime t0 = clock.MonotonicNow();
    AcceptMany(p, clock, 50);  // paced: the pacer, not the sender, sets the rate
    const double secs = std::chrono::duration<double>(clock.MonotonicNow() - t0).count();
    const double added = p.Current(clock.MonotonicNow()).bytes_per_s - fallen;
    // The larger of a fraction of the rate and the absolute step (one request's bytes
    // times increase_requests_per_s): 0.3 % of 1.39 MB/s is 4.2 kB/s, below 0.05
    // requests/s x 100 kB = 5 kB/s, so 5 kB/s per second. @ref LLP 0016#fairness
    CHECK(secs == doctest::Approx(3.523));
    CHECK(added == doctest::Approx(secs * 5000.0).epsilon(1e-3));
    const double before = p.Current(clock.MonotonicNow()).bytes_per_s;
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
    CHECK(p.Current(clock.MonotonicNow()).bytes_per_s == doctest::Approx(before * 0.94));
  }
}

TEST_CASE("AStarvedSenderClimbsByTheSameAbsoluteStepAsALargeOne") {
  // A fleet member that learned a tiny share (one request every couple of seconds)
  // must not creep up by 0.3 % of that: it climbs by increase_requests_per_s, the unit
  // every sender on the limiter shares (Chiu & Jain). @ref LLP 0016#fairness
  auto starve = [](PacingPolicy policy) {
    fwdsink::FakeClock clock;
    EndpointPacer p(policy);
    AcceptMany(p, clock, 3, 1s);  // 3 requests in 3 s
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
    clock.Advance(1s);
    AcceptMany(p, clock, 2, 10ms);
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);  // leaves slow start
    clock.Advance(1s);
    const auto before = p.Current(clock.MonotonicNow());
    const MonotonicTime t0 = clock.MonotonicNow();
    while (clock.MonotonicNow() - t0 < 20s) AcceptMany(p, clock, 1, 10ms);
    const auto after = p.Current(clock.MonotonicNow());
    MESSAGE("requests/s " << before.requests_per_s << " -> " << after.requests_per_s);
    CHECK(before.requests_per_s < 1.0);  // starved indeed
    return std::pair{after.requests_per_s - before.requests_per_s,
                     after.bytes_per_s - before.bytes_per_s};
  };
  // No probe past the exit (pacer_probe_test has it): the step itself is checked here.
  const auto [requests, bytes] = starve(PureDoubling({.probe_past_exit = 0}));
  CHECK(requests >= 0.8);   // 20 s x 0.05 requests/s per second, less rounding
  CHECK(requests <= 1.05);  // the last request may end up to a second past 20 s
  CHECK(bytes >= 0.8 * kChunk);
  SUBCASE("twin: without the absolute step it creeps by a fraction of its own rate") {
    const auto [r0, b0] =
        starve(PureDoubling({.increase_requests_per_s = 0, .probe_past_exit = 0}));
    CHECK(r0 < 0.1 * requests);
    CHECK(b0 < 0.1 * bytes);
  }
}

TEST_CASE("ConvergesOnAByteBucketWithFewRefusals") {
  // 8 MB/s, burst 2 MB, 256 KiB chunks, 5 ms per request; Retry-After 1 s floors.
  fwdsink::FakeClock clock;
  EndpointPacer p;
  Bucket bucket{8e6, 2e6, 2e6, clock.MonotonicNow()};
  constexpr std::uint64_t kSize = 262144;
  const MonotonicTime start = clock.MonotonicNow();
  double late_bytes = 0;
  int refusals = 0, late_refusals = 0, requests = 0;
  while (clock.MonotonicNow() - start < 60s) {
    clock.Advance(p.Reserve(clock.MonotonicNow(), kSize));
    clock.Advance(5ms);
    ++requests;
    const bool late = clock.MonotonicNow() - start >= 20s;
    if (bucket.Take(clock.MonotonicNow(), kSize)) {
      p.OnAccepted(clock.MonotonicNow(), kSize, std::nullopt);
      if (late) late_bytes += kSize;
    } else {
      ++refusals;
      if (late) ++late_refusals;
      p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
      clock.Advance(1s);  // Retry-After: 1, the floor
    }
  }
  const double late_rate = late_bytes / 40.0;
  MESSAGE("refusals " << refusals << " (" << late_refusals << " after 20 s) of " << requests
                      << ", rate over the last 40 s " << late_rate / 8e6);
  CHECK(late_rate >= 0.85 * 8e6);
  CHECK(late_rate <= 8e6 * 1.01);
  CHECK(refusals <= requests / 20);
  SUBCASE("twin: without pacing the same sender is refused far more often") {
    EndpointPacer off({.enabled = false});
    Bucket b2{8e6, 2e6, 2e6, clock.MonotonicNow()};
    int off_refusals = 0;
    const MonotonicTime s2 = clock.MonotonicNow();
    while (clock.MonotonicNow() - s2 < 60s) {
      clock.Advance(off.Reserve(clock.MonotonicNow(), kSize));
      clock.Advance(5ms);
      if (!b2.Take(clock.MonotonicNow(), kSize)) {
        ++off_refusals;
        clock.Advance(1s);
      }
    }
    CHECK(off_refusals > 4 * refusals);
  }
}

TEST_CASE("HonoursAnAdvertisedByteQuota") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  // 1 MB/s, burst 500 kB, 100 kB left now.
  const AdvertisedQuota q{
      .unit = QuotaUnit::kContentBytes, .rate_per_s = 1e6, .burst = 500'000, .remaining = 100'000};
  p.OnAccepted(clock.MonotonicNow(), kChunk, q);
  const auto r = p.Current(clock.MonotonicNow());
  CHECK(r.source == PaceSource::kAdvertised);
  CHECK(r.bytes_per_s == doctest::Approx(1e6));
  CHECK(r.burst_bytes == 500'000);
  CHECK(p.Reserve(clock.MonotonicNow(), 100'000) == 0ms);    // what is left goes now
  CHECK(p.Reserve(clock.MonotonicNow(), 100'000) == 100ms);  // then 100 kB per 100 ms
  CHECK(p.Reserve(clock.MonotonicNow(), 100'000) == 200ms);
  SUBCASE("twin: a full bucket lets a burst through at once") {
    EndpointPacer full;
    AdvertisedQuota f = q;
    f.remaining = 500'000;
    full.OnAccepted(clock.MonotonicNow(), kChunk, f);
    for (int i = 0; i < 5; ++i) CHECK(full.Reserve(clock.MonotonicNow(), 100'000) == 0ms);
    CHECK(full.Reserve(clock.MonotonicNow(), 100'000) == 100ms);
  }
}

TEST_CASE("HonoursAnAdvertisedRequestQuota") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  // 20 left over 10 s (X-RateLimit style): 2 requests/s.
  const AdvertisedQuota q{.rate_per_s = 2.0, .burst = 100, .remaining = 0};
  p.OnAccepted(clock.MonotonicNow(), kChunk, q);
  CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 500ms);
  CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 1000ms);
}

TEST_CASE("AdvertisedZeroLeftWaitsAtMostMaxWait") {
  fwdsink::FakeClock clock;
  EndpointPacer p({.max_wait = 300s});
  const AdvertisedQuota q{.rate_per_s = 1.0 / 86400, .burst = 1, .remaining = 0};
  p.OnAccepted(clock.MonotonicNow(), kChunk, q);
  CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 300s);
}

TEST_CASE("DecaysToNoLimitWhenRefusalsStop") {
  fwdsink::FakeClock clock;
  PacingPolicy policy;
  EndpointPacer p(policy);
  AcceptMany(p, clock, 10);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  CHECK(p.Current(clock.MonotonicNow()).source == PaceSource::kLearned);
  // The README's promise: a learned limit is forgotten after 60 s without refusals.
  SUBCASE("quiet for 60 s: no limit again") {
    clock.Advance(61s);
    CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 0ms);
    CHECK(p.Current(clock.MonotonicNow()).source == PaceSource::kNone);
    CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 0ms);
  }
  SUBCASE("twin: quiet for 59 s, still learned") {
    clock.Advance(59s);
    (void)p.Reserve(clock.MonotonicNow(), kChunk);
    CHECK(p.Current(clock.MonotonicNow()).source == PaceSource::kLearned);
  }
}

TEST_CASE("OffNeverWaitsEvenAfterRefusalsAndQuotas") {
  fwdsink::FakeClock clock;
  EndpointPacer p({.enabled = false});
  AcceptMany(p, clock, 10);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  p.OnAccepted(clock.MonotonicNow(), kChunk,
               AdvertisedQuota{.rate_per_s = 0.5, .burst = 1, .remaining = 0});
  CHECK(p.Reserve(clock.MonotonicNow(), kChunk) == 0ms);
  CHECK(p.Current(clock.MonotonicNow()).source == PaceSource::kNone);
}

namespace {
// Refuses `n` requests in a row, each after the previous wait, then accepts one.
void OutageThenAccept(EndpointPacer& p, fwdsink::FakeClock& clock, int n, milliseconds wait) {
  for (int i = 0; i < n; ++i) {
    clock.Advance(p.Reserve(clock.MonotonicNow(), kChunk));
    clock.Advance(10ms);
    p.OnRefused(clock.MonotonicNow(), wait, std::nullopt);
    clock.Advance(wait);
  }
  clock.Advance(p.Reserve(clock.MonotonicNow(), kChunk));
  clock.Advance(10ms);
  p.OnAccepted(clock.MonotonicNow(), kChunk, std::nullopt);
}
}  // namespace

TEST_CASE("BackFromAnOutageThePacerRestartsAtOneRequestPerRetryAfterInSlowStart") {
  // TCP's restart after a timeout: a fleet refused for a whole outage with
  // Retry-After: 5 must not send its backlog back to back once it is let in.
  // @ref LLP 0016#herd
  fwdsink::FakeClock clock;
  EndpointPacer p;
  OutageThenAccept(p, clock, 12, 5s);  // a minute refused, nothing learned before
  const auto r = p.Current(clock.MonotonicNow());
  CHECK(r.source == PaceSource::kLearned);
  CHECK(r.requests_per_s == doctest::Approx(0.2));  // one per Retry-After
  CHECK(r.bytes_per_s == doctest::Approx(kChunk / 5.0));
  const auto next = p.Reserve(clock.MonotonicNow(), kChunk);
  CHECK(next >= 4900ms);
  CHECK(next <= 5s);
  clock.Advance(next);
  AcceptMany(p, clock, 4);  // slow start: it rises from there
  CHECK(p.Current(clock.MonotonicNow()).requests_per_s > 0.2 * 8);  // doubling
  SUBCASE("twin: a short throttle (refused twice, figure 4) is not an outage") {
    EndpointPacer q;
    OutageThenAccept(q, clock, 2, 5s);
    CHECK(q.Current(clock.MonotonicNow()).source == PaceSource::kNone);
    CHECK(q.Reserve(clock.MonotonicNow(), kChunk) == 0ms);
  }
  SUBCASE("twin: refused three times in 3 s under a 1 s Retry-After is a throttle") {
    EndpointPacer q;
    OutageThenAccept(q, clock, 3, 1s);
    CHECK(q.Current(clock.MonotonicNow()).source == PaceSource::kNone);
  }
  SUBCASE("twin: ladder waits spread a fleet on their own: no restart") {
    EndpointPacer q;
    OutageThenAccept(q, clock, 3, 30s);
    CHECK(q.Current(clock.MonotonicNow()).source == PaceSource::kNone);
  }
}

TEST_CASE("TheByteFloorIsNeverBelowTheRequestFloorInBytes") {
  // A byte rate cut to min_bytes_per_s would pace 100 kB requests at one per 25 s,
  // far under min_requests_per_s: a sender starved once would stay starved.
  // @ref LLP 0016#herd
  auto learn = [](std::uint64_t chunk) {
    fwdsink::FakeClock clock;
    EndpointPacer p;
    for (int i = 0; i < 2; ++i) {
      clock.Advance(10ms);
      p.OnAccepted(clock.MonotonicNow(), chunk, std::nullopt);
    }
    p.OnRefused(clock.MonotonicNow(), 300s, std::nullopt);  // 2 requests over 300 s
    return p.Current(clock.MonotonicNow());
  };
  const auto big = learn(kChunk);
  CHECK(big.requests_per_s == doctest::Approx(0.2));  // min_requests_per_s
  CHECK(big.bytes_per_s == doctest::Approx(20'000));  // 0.2 x 100 kB
  SUBCASE("twin: small requests keep min_bytes_per_s") {
    const auto small = learn(1000);
    CHECK(small.bytes_per_s == doctest::Approx(4096));
  }
}

TEST_CASE("ASlowPaceRisesPerSecondNotPerRequest") {
  // Paced at one request every few seconds, the interval between requests is sending,
  // not a silence: the additive step accrues for half of it (not just 1 s), so a small
  // share climbs per second at least half as fast as a large one. @ref LLP 0016#herd
  auto climb = [](milliseconds idle) {
    fwdsink::FakeClock clock;
    EndpointPacer p(PureDoubling({.probe_past_exit = 0}));  // the step, not the probe
    AcceptMany(p, clock, 2);
    p.OnRefused(clock.MonotonicNow(), 30s, std::nullopt);  // learned at the floor
    clock.Advance(30s);
    AcceptMany(p, clock, 2);
    p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);  // leaves slow start
    clock.Advance(1s);
    const double before = p.Current(clock.MonotonicNow()).requests_per_s;
    CHECK(before < 0.6);  // one request every couple of seconds
    const MonotonicTime t0 = clock.MonotonicNow();
    while (clock.MonotonicNow() - t0 < 20s) {
      clock.Advance(idle);
      AcceptMany(p, clock, 1, 10ms);  // at the pace
    }
    return p.Current(clock.MonotonicNow()).requests_per_s - before;
  };
  // About half of 20 s x 0.05 requests/s per second (increase_requests_per_s) at the
  // pace (slower than 1 s); with a 1 s cap per request it would be 0.3 requests/s.
  const double rise = climb(0s);
  MESSAGE("rise over 20 s at the pace: " << rise << " requests/s");
  CHECK(rise >= 0.4);
  CHECK(rise <= 1.05);
  SUBCASE("twin: a silence longer than the pace's interval still counts as one") {
    // A request every 10 s or more where the pace allows one per ~2 s: the gaps are
    // idle (about 0.19 requests/s; counting the whole gaps would give 1.0).
    const double idle = climb(10s);
    MESSAGE("rise over 20 s with 10 s gaps: " << idle << " requests/s");
    CHECK(idle < 0.3);
  }
}

TEST_CASE("SlowStartAddsAStepEverySenderSharesSoTheFirstEstimatesLuckFades") {
  // Two daemons on one limiter: one caught 2 requests of its initial burst, the other 8
  // (a first estimate ~4x larger). Slow start doubles (e + u) - u, u = 2 requests/s:
  // after 3 s the larger is well under 4x the smaller. @ref LLP 0016#fairness
  const PacingPolicy policy;
  constexpr double u = 2.0;  // requests/s, the default slow_start_requests_per_s
  double e_small = 0, e_large = 0, t_small = 0, t_large = 0;
  const double small = SlowStart(policy, 2, 3.0, e_small, t_small);
  const double large = SlowStart(policy, 8, 3.0, e_large, t_large);
  MESSAGE("first estimates " << e_small << ", " << e_large << " -> " << small << ", " << large);
  // n requests 10 ms apart, then the 1 s wait: n / (n x 0.01 + 1) requests/s.
  CHECK(e_small == doctest::Approx(2 / 1.02));
  CHECK(e_large == doctest::Approx(8 / 1.08));
  CHECK(t_small == doctest::Approx(3.004));
  CHECK(t_large == doctest::Approx(3.009));
  // Exactly (e + u) 2^t - u: the affine steps compose, however the seconds are cut.
  CHECK(small == doctest::Approx((e_small + u) * std::exp2(t_small) - u).epsilon(1e-6));
  CHECK(large == doctest::Approx((e_large + u) * std::exp2(t_large) - u).epsilon(1e-6));
  CHECK(small == doctest::Approx(29.7742).epsilon(1e-5));
  CHECK(large == doctest::Approx(73.7302).epsilon(1e-5));
  CHECK(large / small < 0.7 * (e_large / e_small));
  SUBCASE("twin: pure doubling keeps the first estimates' ratio") {
    const double small0 = SlowStart(PureDoubling(), 2, 3.0, e_small, t_small);
    const double large0 = SlowStart(PureDoubling(), 8, 3.0, e_large, t_large);
    CHECK(small0 == doctest::Approx(e_small * std::exp2(t_small)).epsilon(1e-6));
    CHECK(large0 / small0 == doctest::Approx(e_large / e_small).epsilon(0.05));
  }
}

// The schedule's epoch goes up when a server's count leaves less than our reservations
// assumed, so a reservation taken before it is taken again (LLP 0016#recheck); the twin:
// a count with the room we expected leaves it as it is.
TEST_CASE("A count that moves the schedule later starts a new epoch") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  const auto now = clock.MonotonicNow();
  p.OnAccepted(now, 100, AdvertisedQuota{.rate_per_s = 10.0, .burst = 10, .remaining = 10});
  const std::uint64_t first = p.schedule_epoch();
  CHECK(p.Reserve(now, 100) == 0ms);
  CHECK(p.Reserve(now, 100) == 0ms);  // two reserved: 8 left as far as we know
  SUBCASE("the server says 8 left: what we reserved, nothing new") {
    p.OnAccepted(now, 100, AdvertisedQuota{.rate_per_s = 10.0, .burst = 10, .remaining = 8});
    CHECK(p.schedule_epoch() == first);
  }
  SUBCASE("the server says none left: our reservations are stale") {
    p.OnAccepted(now, 100, AdvertisedQuota{.rate_per_s = 10.0, .burst = 10, .remaining = 0});
    CHECK(p.schedule_epoch() > first);
  }
}
