// SPDX-License-Identifier: Apache-2.0
// DecideWait and Validate, on plain data: no clock, no sleeps.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <vector>

#include "fwdsink/backoff.h"
#include "fwdsink/retry_after.h"
#include "saturating.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using fwdsink::BackpressurePolicy;
using fwdsink::DecideWait;
using fwdsink::WaitSource;
using std::chrono::milliseconds;

namespace {
const BackpressurePolicy kDefault{};
const std::optional<milliseconds> kNoRetryAfter = std::nullopt;
constexpr milliseconds kNoElapsed{0};

// Walks `attempts` consecutive failures of one chunk on a fake clock, with the given
// Retry-After each time, taking every wait the policy decides; returns the waits and
// whether (and at which attempt) it gave up.
struct Walk {
  std::vector<milliseconds> waits;
  std::size_t gave_up_at = 0;  // attempt number, 0 = never
};
Walk WalkStorm(const BackpressurePolicy& p, std::size_t attempts,
               std::optional<milliseconds> retry_after, milliseconds request_time) {
  fwdsink::FakeClock clock;
  const auto first_attempt = clock.MonotonicNow();
  Walk w;
  for (std::size_t attempt = 1; attempt <= attempts; ++attempt) {
    clock.Advance(request_time);  // the request itself takes time
    const auto elapsed =
        std::chrono::duration_cast<milliseconds>(clock.MonotonicNow() - first_attempt);
    const auto d = DecideWait(p, attempt, retry_after, elapsed);
    if (d.give_up) {
      w.gave_up_at = attempt;
      break;
    }
    w.waits.push_back(d.wait);
    REQUIRE(clock.SleepFor(d.wait, {}));
  }
  return w;
}
}  // namespace

TEST_CASE("PositiveRetryAfterIsHonouredOverTheLadder") {
  const auto d = DecideWait(kDefault, 1, 5s, kNoElapsed);
  CHECK_FALSE(d.give_up);
  CHECK(d.wait == 5s);  // not 30 s
  CHECK(d.source == WaitSource::kRetryAfter);
  CHECK_FALSE(d.capped);
  SUBCASE("a short Retry-After late in the ladder is still honoured") {
    const auto late = DecideWait(kDefault, 4, 5s, kNoElapsed);
    CHECK(late.wait == 5s);  // not 300 s
  }
}

TEST_CASE("LongRetryAfterIsCappedAtMaxWait") {
  const auto d = DecideWait(kDefault, 1, 3600s, kNoElapsed);
  CHECK(d.wait == 300s);
  CHECK(d.capped);
  CHECK(d.source == WaitSource::kRetryAfter);
  SUBCASE("twin: a Retry-After under the cap is not marked capped") {
    const auto under = DecideWait(kDefault, 1, 299s, kNoElapsed);
    CHECK(under.wait == 299s);
    CHECK_FALSE(under.capped);
  }
}

TEST_CASE("AbsentRetryAfterWalksTheLadderAndStopsAtTheCap") {
  BackpressurePolicy p;
  p.inline_budget = 24h;  // keep the budget out of this test
  const std::vector<milliseconds> expected = {30s, 60s, 120s, 300s, 300s, 300s};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    const auto d = DecideWait(p, i + 1, kNoRetryAfter, kNoElapsed);
    CHECK(d.wait == expected[i]);
    CHECK(d.source == WaitSource::kLadder);
    CHECK(d.rung == std::min<std::size_t>(i, 3));
  }
  // No increase past the cap.
  CHECK(DecideWait(p, 1000, kNoRetryAfter, kNoElapsed).wait == 300s);
}

TEST_CASE("MaxWaitCapsTheLadderTooWithoutRetryAfter") {
  const BackpressurePolicy p{
      .ladder = {30s, 60s, 600s, 3600s}, .max_wait = 120s, .inline_budget = 24h};
  CHECK(DecideWait(p, 1, kNoRetryAfter, kNoElapsed).wait == 30s);
  CHECK(DecideWait(p, 2, kNoRetryAfter, kNoElapsed).wait == 60s);
  CHECK(DecideWait(p, 3, kNoRetryAfter, kNoElapsed).wait == 120s);
  CHECK(DecideWait(p, 3, kNoRetryAfter, kNoElapsed).capped);
  CHECK(DecideWait(p, 4, kNoRetryAfter, kNoElapsed).wait == 120s);
}

TEST_CASE("NonPositiveOrUnusableRetryAfterFallsBackToTheLadderNeverZero") {
  const auto now = std::chrono::system_clock::time_point{} + 1'700'000'000s;
  for (const char* raw : {"0", "-1", "1.5", "garbage", "", "Sun, 06 Nov 1994 08:49:37 GMT"}) {
    CAPTURE(raw);
    const auto parsed = fwdsink::ParseRetryAfter(raw, now);
    const auto d = DecideWait(kDefault, 1, parsed, kNoElapsed);
    CHECK(d.source == WaitSource::kLadder);
    CHECK(d.wait == 30s);
    CHECK(d.wait > 0ms);
  }
  SUBCASE("twin: a positive value does not fall back") {
    const auto d = DecideWait(kDefault, 1, fwdsink::ParseRetryAfter("1", now), kNoElapsed);
    CHECK(d.source == WaitSource::kRetryAfter);
    CHECK(d.wait == 1s);
  }
}

TEST_CASE("EveryWaitIsStrictlyPositive") {
  // Even a sub-millisecond Retry-After rounded to 0 ms elsewhere, or a tiny rung.
  const BackpressurePolicy p{.ladder = {1ms}, .max_wait = 1ms, .inline_budget = 1h};
  for (std::size_t a = 1; a < 50; ++a) {
    CHECK(DecideWait(p, a, milliseconds{0}, kNoElapsed).wait >= 1ms);
    CHECK(DecideWait(p, a, kNoRetryAfter, kNoElapsed).wait >= 1ms);
  }
}

TEST_CASE("BudgetStormGivesUpWhenTheNextWaitWouldPassTheBudgetAndNotEarlier") {
  // Default budget 300 s; ladder 30, 60, 120, ...; each request takes 1 s.
  // Attempt 1 at t=1: 1+30=31 ok -> t=31. Attempt 2 at t=32: 32+60=92 ok -> t=92.
  // Attempt 3 at t=93: 93+120=213 ok -> t=213. Attempt 4 at t=214: 214+300 > 300: give up.
  const auto w = WalkStorm(kDefault, 100, kNoRetryAfter, 1s);
  CHECK(w.waits == std::vector<milliseconds>{30s, 60s, 120s});
  CHECK(w.gave_up_at == 4);

  SUBCASE("a wait that lands exactly on the budget is still taken") {
    const BackpressurePolicy p{.ladder = {100s}, .max_wait = 100s, .inline_budget = 300s};
    // t=0: 0+100 ok; t=100: 200 ok; t=200: 300 == budget, ok; t=300: 400 > 300.
    const auto exact = WalkStorm(p, 100, kNoRetryAfter, 0s);
    CHECK(exact.waits.size() == 3);
    CHECK(exact.gave_up_at == 4);
  }
  SUBCASE("with Retry-After: 1 the storm retries until the budget, not one attempt less") {
    const BackpressurePolicy p{.ladder = {30s}, .max_wait = 300s, .inline_budget = 10s};
    // Each round costs 1 s of request + 1 s wait: t=1 ok (2), t=3 ok (4), ..., t=9: 10 ok,
    // t=11: give up. Five waits.
    const auto ra = WalkStorm(p, 100, 1s, 1s);
    CHECK(ra.waits.size() == 5);
    CHECK(ra.gave_up_at == 6);
  }
  SUBCASE("the check uses the capped wait, not the raw Retry-After") {
    // Retry-After 3600 s would pass the budget, but the wait actually taken is 300 s.
    const auto d = DecideWait(kDefault, 1, 3600s, kNoElapsed);
    CHECK_FALSE(d.give_up);
    CHECK(d.wait == 300s);
  }
}

TEST_CASE("NegativeElapsedFailsClosed") {
  const auto d = DecideWait(kDefault, 1, kNoRetryAfter, -1ms);
  CHECK(d.give_up);
  CHECK(d.reason == fwdsink::GiveUpReason::kInvalidElapsed);
  SUBCASE("twin: zero elapsed is fine") {
    CHECK_FALSE(DecideWait(kDefault, 1, kNoRetryAfter, 0ms).give_up);
  }
}

TEST_CASE("OverflowProtectionHundredsOfAttemptsWithHugeRungs") {
  const BackpressurePolicy p{.ladder = {milliseconds::max() / 2, milliseconds::max()},
                             .max_wait = 300s,
                             .inline_budget = milliseconds::max(),
                             .jitter = 0.5};
  double u = 0.999;
  const fwdsink::UniformRandom rnd = [&u] { return u; };
  for (std::size_t attempt = 1; attempt <= 500; ++attempt) {
    const auto d = DecideWait(p, attempt, milliseconds::max(), milliseconds::max() - 1ms, rnd);
    CHECK(d.wait == 300s);
    const auto l = DecideWait(p, attempt, std::nullopt, 0ms, rnd);
    CHECK(l.wait == 300s);  // no increase past the cap
    CHECK(l.wait > 0ms);
  }
  CHECK(fwdsink::SaturatingAdd(milliseconds::max(), 1ms) == milliseconds::max());
  CHECK(fwdsink::SaturatingAdd(1ms, 2ms) == 3ms);
}

TEST_CASE("JitterStaysInItsBandAndNeverShortensRetryAfter") {
  const BackpressurePolicy p{
      .ladder = {100s}, .max_wait = 300s, .inline_budget = 24h, .jitter = 0.2};
  double u = 0.0;
  const fwdsink::UniformRandom rnd = [&u] { return u; };
  u = 0.0;
  CHECK(DecideWait(p, 1, std::nullopt, 0ms, rnd).wait == 80s);
  u = 0.5;
  CHECK(DecideWait(p, 1, std::nullopt, 0ms, rnd).wait == 100s);
  u = 0.0;
  CHECK(DecideWait(p, 1, 10s, 0ms, rnd).wait == 10s);  // never below Retry-After
  // A Retry-After is lengthened by at most min(10 %, 1 s) (LLP 0016#jitter), but for
  // the one-time phase at the third refusal in a row (the outage test below).
  u = 0.5;
  CHECK(DecideWait(p, 1, 10s, 0ms, rnd).wait == 10500ms);
  SUBCASE("twin: jitter off means the exact rung whatever the generator says") {
    const BackpressurePolicy off{
        .ladder = {100s}, .max_wait = 300s, .inline_budget = 24h, .jitter = 0};
    u = 0.0;
    CHECK(DecideWait(off, 1, std::nullopt, 0ms, rnd).wait == 100s);
  }
}

TEST_CASE("ValidateNamesTheBadField") {
  CHECK(fwdsink::Validate(kDefault).ok());

  auto field_of = [](BackpressurePolicy p) {
    const fwdsink::Status e = fwdsink::Validate(p);
    if (!e.ok()) CHECK(e.code() == fwdsink::StatusCode::kInvalidConfig);
    return e.ok() ? std::string("<valid>") : e.field();
  };
  BackpressurePolicy p;
  p.ladder.clear();
  CHECK(field_of(p) == "ladder");
  p = {};
  p.ladder[2] = 0s;
  CHECK(field_of(p) == "ladder[2]");
  p = {};
  p.ladder[0] = -5s;
  CHECK(field_of(p) == "ladder[0]");
  p = {};
  p.max_wait = 0s;
  CHECK(field_of(p) == "max_wait");
  p = {};
  p.inline_budget = 29s;  // below the first rung of 30 s
  CHECK(field_of(p) == "inline_budget");
  p = {};
  p.inline_budget = 30s;  // exactly the first rung is enough for one retry
  CHECK(field_of(p) == "<valid>");
  p = {};
  p.jitter = 1.0;
  CHECK(field_of(p) == "jitter");
  p = {};
  p.jitter = -0.1;
  CHECK(field_of(p) == "jitter");
}

TEST_CASE("JitterLongerOnlyLengthensByAtMostATenthOrOneSecond") {
  double u = 0.0;
  const fwdsink::UniformRandom rnd = [&u] { return u; };
  for (double x : {0.0, 0.25, 0.5, 0.999999}) {
    u = x;
    CAPTURE(x);
    const auto short_wait = fwdsink::JitterLonger(5s, 0.5, rnd);
    CHECK(short_wait >= 5s);
    CHECK(short_wait <= 5500ms);  // a tenth of 5 s
    const auto long_wait = fwdsink::JitterLonger(120s, 0.5, rnd);
    CHECK(long_wait >= 120s);
    CHECK(long_wait <= 121s);  // at most one second, however long the wait
  }
  u = 0.5;
  CHECK(fwdsink::JitterLonger(5s, 0.5, rnd) == 5250ms);
  CHECK(fwdsink::JitterLonger(milliseconds::max(), 0.5, rnd) == milliseconds::max());
  SUBCASE("twin: jitter 0 or no generator leaves the wait exact") {
    CHECK(fwdsink::JitterLonger(5s, 0.0, rnd) == 5s);
    CHECK(fwdsink::JitterLonger(5s, 0.5, {}) == 5s);
  }
}

TEST_CASE("JitterSpreadStaysWithinPlusMinusTheFractionAndPositive") {
  double u = 0.0;
  const fwdsink::UniformRandom rnd = [&u] { return u; };
  u = 0.0;
  CHECK(fwdsink::JitterSpread(30s, 0.5, rnd) == 15s);
  u = 0.999999;
  CHECK(fwdsink::JitterSpread(30s, 0.5, rnd) <= 45s);
  CHECK(fwdsink::JitterSpread(30s, 0.5, rnd) > 44s);
  u = 0.0;
  CHECK(fwdsink::JitterSpread(1ms, 0.99, rnd) == 1ms);  // never zero: no spin
  u = -3.0;  // a broken generator is clamped, not trusted
  CHECK(fwdsink::JitterSpread(30s, 0.5, rnd) == 15s);
  SUBCASE("twin: jitter 0 leaves the wait exact") {
    u = 0.9;
    CHECK(fwdsink::JitterSpread(30s, 0.0, rnd) == 30s);
  }
}

TEST_CASE("JitterIsOnByDefault") {
  CHECK(BackpressurePolicy{}.jitter == 0.5);
  double u = 0.0;
  const fwdsink::UniformRandom rnd = [&u] { return u; };
  CHECK(DecideWait(BackpressurePolicy{}, 1, std::nullopt, 0ms, rnd).wait == 15s);
  CHECK(DecideWait(BackpressurePolicy{}, 1, 5s, 0ms, rnd).wait == 5s);  // never shorter
}

TEST_CASE("ALongOutageGetsOneRandomPhaseOfUpToOneRetryAfterAtTheThirdRefusal") {
  // A fleet told the same Retry-After for a whole outage returns in one second unless
  // its phases differ: from the third refusal of a chunk in a row (two full periods
  // waited: an outage, not a throttle) the wait is lengthened once by U(0, RA).
  // @ref LLP 0016#herd
  const BackpressurePolicy p{};  // jitter 0.5, outage_phase_attempt 3
  double u = 0.99;
  const fwdsink::UniformRandom rnd = [&u] { return u; };
  const milliseconds ra = 5s;
  const milliseconds short_bound = ra + 500ms;  // + min(10 %, 1 s)
  CHECK(p.outage_phase_attempt == 3);
  // Figure 4: a short throttle, refused twice, still ends within Retry-After + 1 s.
  CHECK(DecideWait(p, 1, ra, 0ms, rnd).wait <= short_bound);
  CHECK(DecideWait(p, 2, ra, 5s, rnd).wait <= short_bound);
  const auto third = DecideWait(p, 3, ra, 10s, rnd);
  CHECK(third.source == WaitSource::kRetryAfter);
  CHECK(third.wait >= ra + 4900ms);  // 0.99 of one Retry-After more
  CHECK(third.wait <= short_bound + ra);
  CHECK(DecideWait(p, 4, ra, 20s, rnd).wait <= short_bound);  // once per outage
  SUBCASE("never shorter: a phase of zero is the plain Retry-After") {
    u = 0.0;
    CHECK(DecideWait(p, 3, ra, 10s, rnd).wait == ra);
  }
  SUBCASE("twin: jitter off, no phase") {
    const BackpressurePolicy off{.jitter = 0};
    CHECK(DecideWait(off, 3, ra, 10s, rnd).wait == ra);
  }
  SUBCASE("twin: outage_phase_attempt 0, no phase") {
    const BackpressurePolicy never{.outage_phase_attempt = 0};
    CHECK(DecideWait(never, 3, ra, 10s, rnd).wait <= short_bound);
  }
  SUBCASE("twin: the ladder keeps its own jitter, no phase on top") {
    // Rung 3 (120 s) at u = 0.99: 120 x (1 - 0.5 + 0.99) = 178.8 s.
    CHECK(DecideWait(p, 3, kNoRetryAfter, 10s, rnd).wait == 178800ms);
  }
}

// @ref LLP 0014#reconnect
TEST_CASE("ReconnectRungsAreShortLengthenedOnlyAndBudgeted") {
  BackpressurePolicy p;
  p.jitter = 0;
  auto d = fwdsink::DecideReconnect(p, 0, kNoElapsed);
  CHECK(d.source == WaitSource::kReconnect);
  CHECK(d.wait == 250ms);
  CHECK_FALSE(d.give_up);
  CHECK(fwdsink::DecideReconnect(p, 1, kNoElapsed).wait == 1s);
  // Past the budget: give up, as any other wait.
  CHECK(fwdsink::DecideReconnect(p, 1, p.inline_budget).give_up);
  // With jitter a rung is only ever lengthened, by at most a tenth.
  p.jitter = 0.5;
  for (double u : {0.0, 0.5, 0.999}) {
    const auto w = fwdsink::DecideReconnect(p, 0, kNoElapsed, [u] { return u; }).wait;
    CHECK(w >= 250ms);
    CHECK(w <= 275ms);
  }
  p.reconnect = {250ms, 0ms};
  CHECK(fwdsink::Validate(p).field() == "reconnect[1]");
}
