// SPDX-License-Identifier: Apache-2.0
// EndpointPacer's probe on the fake clock (LLP 0016#probe): past the rate refused last,
// with nothing refused for probe_after, the rise is faster than the additive step; below
// that rate it stays additive; a refusal at the same rate still cuts; a refusal soon after
// a decrease cuts deeper (LLP 0016#repeat); two senders on one bucket still converge
// toward equal shares.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "fwdsink/pacer.h"
#include "support/fake_clock.h"
#include "support/jain.h"

using namespace std::chrono_literals;
using fwdsink::EndpointPacer;
using fwdsink::Jain;
using fwdsink::MonotonicTime;
using fwdsink::PacingPolicy;
using std::chrono::milliseconds;

namespace {

constexpr std::uint64_t kChunk = 100'000;  // wire bytes per request
constexpr double kStep = 0.05;             // increase_requests_per_s, the additive step
// The probe as tuned on the simulator: the default (LLP 0016#probe).
const PacingPolicy kProbing{};
static_assert(PacingPolicy{}.probe_max_factor == 24);

double Secs(MonotonicTime::duration d) { return std::chrono::duration<double>(d).count(); }

// Sends `n` chunks at the pace, each accepted 10 ms after it went.
void AcceptMany(EndpointPacer& p, fwdsink::FakeClock& clock, int n) {
  for (int i = 0; i < n; ++i) {
    clock.Advance(p.Reserve(clock.MonotonicNow(), kChunk));
    clock.Advance(10ms);
    p.OnAccepted(clock.MonotonicNow(), kChunk, std::nullopt);
  }
}

double Rate(const EndpointPacer& p, const fwdsink::FakeClock& clock) {
  return p.Current(clock.MonotonicNow()).requests_per_s;
}

// A sender through its first refusal (after `before` requests), slow start (`during`
// more) and its exit. Ends at the end of the exit's 1 s wait.
void ThroughSlowStart(EndpointPacer& p, fwdsink::FakeClock& clock, int before = 10,
                      int during = 20) {
  AcceptMany(p, clock, before);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);  // first estimate before / 1.1 s
  clock.Advance(1s);
  AcceptMany(p, clock, during);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);  // leaves slow start: 0.55 x
  clock.Advance(1s);
}

// ThroughSlowStart, then one refusal after it (the decrease that gives the probe its
// reference); `refused` is the rate that last refusal cut from. Ends at the end of that
// refusal's 1 s wait.
void PastSlowStart(EndpointPacer& p, fwdsink::FakeClock& clock, double& refused) {
  ThroughSlowStart(p, clock);
  AcceptMany(p, clock, 10);
  refused = Rate(p, clock);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);  // after slow start: 0.94 x
  clock.Advance(1s);
}

// Sends at the pace for `secs` seconds; returns the request rate at the end.
double SendFor(EndpointPacer& p, fwdsink::FakeClock& clock, double secs) {
  const MonotonicTime t0 = clock.MonotonicNow();
  while (Secs(clock.MonotonicNow() - t0) < secs) AcceptMany(p, clock, 1);
  return Rate(p, clock);
}

}  // namespace

TEST_CASE("PastTheRefusedRateWithNothingRefusedTheRiseIsFasterThanTheAdditiveStep") {
  fwdsink::FakeClock clock;
  EndpointPacer p(kProbing);
  double refused = 0;
  PastSlowStart(p, clock, refused);
  const double cut = Rate(p, clock);
  MESSAGE("refused at " << refused << " requests/s, cut to " << cut);
  CHECK(cut == doctest::Approx(0.94 * refused));
  // The additive step decides: 0.3 % of the rate cut to is below 0.05 requests/s.
  REQUIRE(0.003 * cut < kStep);
  // Below the rate refused last, the rise is the additive step, however long nothing
  // is refused (slow near a limit that still holds): 0.06 x refused at 0.05 per second.
  const MonotonicTime t0 = clock.MonotonicNow();
  double at = cut, below = cut, t_below = 0;
  while (at < refused && Secs(clock.MonotonicNow() - t0) < 60) {
    below = at;
    t_below = Secs(clock.MonotonicNow() - t0);
    at = SendFor(p, clock, 0.5);
  }
  const double t_at = Secs(clock.MonotonicNow() - t0);
  MESSAGE("back at the refused rate after " << t_at << " s");
  CHECK(t_below > 6.0);  // probe_after: the probe may begin from here on
  CHECK(t_at == doctest::Approx(0.06 * refused / kStep).epsilon(0.05));
  CHECK(below - cut == doctest::Approx(kStep * t_below).epsilon(1e-3));
  // Past it, with nothing refused: 10 s later the rate has risen by far more than 10
  // additive steps ...
  const MonotonicTime t1 = clock.MonotonicNow();
  const double probed = SendFor(p, clock, 10.0);
  const double t_probe = Secs(clock.MonotonicNow() - t1);
  MESSAGE("over " << t_probe << " s of probing: " << at << " -> " << probed << " requests/s");
  CHECK(probed - at > 8 * kStep * t_probe);
  // ... but no faster than probe_max_factor (24) additive steps per second.
  CHECK(probed - at < 24 * kStep * t_probe);
  SUBCASE("twin: with probe_max_factor 1 the rise stays the additive step") {
    fwdsink::FakeClock c2;
    EndpointPacer q(PacingPolicy{.probe_max_factor = 1});
    double r2 = 0;
    PastSlowStart(q, c2, r2);
    const double cut2 = Rate(q, c2);
    const MonotonicTime s0 = c2.MonotonicNow();
    const double end = SendFor(q, c2, 30.0);
    CHECK(end - cut2 == doctest::Approx(kStep * Secs(c2.MonotonicNow() - s0)).epsilon(1e-3));
  }
  SUBCASE("twin: past slow start's exit, below 1.2 x the rate it cut to, it stays additive") {
    // Slow start's own overshoot is no limit to probe past, and 20 s at the additive
    // step takes this sender ~10 % above its exit: a lone sender whose exit lands just
    // under its limit is refused before it could probe.
    fwdsink::FakeClock c3;
    EndpointPacer q(kProbing);
    ThroughSlowStart(q, c3);
    const double exit = Rate(q, c3);
    const MonotonicTime s0 = c3.MonotonicNow();
    const double end = SendFor(q, c3, 20.0);
    const double step = std::max(kStep, 0.003 * exit);
    CHECK(end - exit == doctest::Approx(step * Secs(c3.MonotonicNow() - s0)).epsilon(1e-3));
  }
}

TEST_CASE("ARefusalAtTheSameRateStillCutsAndEndsTheProbe") {
  fwdsink::FakeClock clock;
  EndpointPacer p(kProbing);
  double refused = 0;
  PastSlowStart(p, clock, refused);
  // Back at the rate refused last and probing: the limit still holds there.
  const double probing = SendFor(p, clock, 19.0);
  REQUIRE(probing > refused);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  const double cut = Rate(p, clock);
  CHECK(cut == doctest::Approx(0.94 * probing));
  clock.Advance(1s);
  // The probe ends with the refusal: additive again, from the new cut.
  const MonotonicTime t0 = clock.MonotonicNow();
  const double after = SendFor(p, clock, 4.0);
  CHECK(after - cut == doctest::Approx(kStep * Secs(clock.MonotonicNow() - t0)).epsilon(1e-3));
  SUBCASE("twin: without the refusal the probe goes on") {
    fwdsink::FakeClock c2;
    EndpointPacer q(kProbing);
    double r2 = 0;
    PastSlowStart(q, c2, r2);
    const double p2 = SendFor(q, c2, 19.0);
    c2.Advance(1s);  // the same silence as the wait above
    const MonotonicTime s0 = c2.MonotonicNow();
    const double on = SendFor(q, c2, 4.0);
    CHECK(on - p2 > 4 * kStep * Secs(c2.MonotonicNow() - s0));
  }
}

namespace {

// Sends at the pace for `secs` seconds, is refused, waits the 1 s; returns the cut (the
// rate after the refusal over the rate before it).
double CutAfter(EndpointPacer& p, fwdsink::FakeClock& clock, double secs) {
  const double before = SendFor(p, clock, secs);
  p.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
  const double cut = Rate(p, clock) / before;
  clock.Advance(1s);
  return cut;
}

}  // namespace

// A fleet member whose slow start ended on others' bursts, far below its share, then
// alone (the others finished): nothing refuses it. @ref LLP 0016#probe
TEST_CASE("AStarvedSenderPastItsExitProbesOnceItClimbedAMarginAboveIt") {
  auto starved = [](const PacingPolicy& policy) {
    fwdsink::FakeClock clock;
    EndpointPacer p(policy);
    ThroughSlowStart(p, clock, 3, 2);  // the exit, at ~3 requests/s
    const double exit = Rate(p, clock);
    CHECK(exit < 4.0);
    return SendFor(p, clock, 30.0) - exit;
  };
  // 1.2 x the exit's rate is ~0.6 requests/s above it: 12 s at the additive step, then
  // the probe.
  const double rise = starved(kProbing);
  MESSAGE("rise over 30 s: " << rise << " requests/s");
  CHECK(rise > 5 * kStep * 30);
  SUBCASE("twin: with probe_past_exit 0 it climbs at the additive step") {
    const double additive = starved(PacingPolicy{.probe_past_exit = 0});
    CHECK(additive == doctest::Approx(kStep * 30).epsilon(0.05));
  }
}

// @ref LLP 0016#repeat
TEST_CASE("ARefusalSoonAfterADecreaseCutsDeeper") {
  fwdsink::FakeClock clock;
  EndpointPacer p(kProbing);
  double refused = 0;
  PastSlowStart(p, clock, refused);
  // One second of sending after the 0.94 cut, and refused again: the cut was not enough.
  CHECK(CutAfter(p, clock, 1.0) == doctest::Approx(0.85));
  // And again soon after that one: deeper again, from the new rate.
  CHECK(CutAfter(p, clock, 1.0) == doctest::Approx(0.85));
  SUBCASE("twin: refused after 1.5 s of sending or more, the cut is the usual 0.94") {
    fwdsink::FakeClock c2;
    EndpointPacer q(kProbing);
    PastSlowStart(q, c2, refused);
    CHECK(CutAfter(q, c2, 2.0) == doctest::Approx(0.94));
  }
  SUBCASE("twin: soon after slow start's exit the cut is the usual 0.94") {
    // The exit's 0.55 already allowed for slow start's overshoot.
    fwdsink::FakeClock c3;
    EndpointPacer q(kProbing);
    ThroughSlowStart(q, c3);
    CHECK(CutAfter(q, c3, 1.0) == doctest::Approx(0.94));
  }
  SUBCASE("twin: with repeat_within 0 every cut is 0.94") {
    fwdsink::FakeClock c4;
    EndpointPacer q(PacingPolicy{.repeat_within = 0ms});
    PastSlowStart(q, c4, refused);
    CHECK(CutAfter(q, c4, 1.0) == doctest::Approx(0.94));
  }
}

namespace {

// A token bucket in bytes (a chunk needs all its bytes).
struct Bucket {
  double rate, burst, tokens;
  MonotonicTime at;
  bool Take(MonotonicTime now, double n) {
    tokens = std::min(burst, tokens + rate * Secs(now - at));
    at = now;
    if (tokens < n) return false;
    tokens -= n;
    return true;
  }
};

// Two senders, each with its own pacer, on one 2 MB/s bucket (burst 0.5 MB); the second
// starts `join` later. Retry-After 1 s on a refusal. Returns the bytes each had accepted
// in the last `last` seconds of `secs`.
std::vector<double> TwoSenders(const PacingPolicy& policy, double join, double secs, double last) {
  fwdsink::FakeClock clock;
  const MonotonicTime start = clock.MonotonicNow();
  Bucket bucket{2e6, 5e5, 5e5, start};
  EndpointPacer pacers[2] = {EndpointPacer(policy), EndpointPacer(policy)};
  MonotonicTime next[2] = {
      start, start + std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(join))};
  bool paced[2] = {false, false};
  std::vector<double> late(2, 0.0);
  for (;;) {
    const int i = next[0] <= next[1] ? 0 : 1;
    const MonotonicTime now = next[i];
    if (Secs(now - start) >= secs) break;
    if (!paced[i]) {
      const auto wait = pacers[i].Reserve(now, kChunk);
      if (wait > 0ms) {
        paced[i] = true;
        next[i] = now + wait;
        continue;
      }
    }
    paced[i] = false;
    const MonotonicTime done = now + 5ms;
    if (bucket.Take(now, kChunk)) {
      pacers[i].OnAccepted(done, kChunk, std::nullopt);
      if (Secs(now - start) >= secs - last) late[i] += kChunk;
      next[i] = done;
    } else {
      pacers[i].OnRefused(done, 1s, std::nullopt);
      next[i] = done + 1s;
    }
  }
  return late;
}

}  // namespace

TEST_CASE("TwoSendersStillConvergeTowardEqualShares") {
  // The second joins after 30 s, when the first holds the whole limit; 90 s later their
  // shares over the last 30 s are close (equal absolute steps, the probe's included;
  // proportional cuts). @ref LLP 0016#fairness
  const auto shares = TwoSenders(kProbing, 30.0, 120.0, 30.0);
  MESSAGE("bytes over the last 30 s: " << shares[0] << ", " << shares[1]);
  CHECK(Jain(shares) >= 0.95);
  CHECK(shares[0] + shares[1] >= 0.85 * 2e6 * 30);  // and the pair still fills the limit
  SUBCASE("twin: increases proportional to each sender's own rate keep the gap") {
    // No absolute step (and no probe past it, no deeper repeated cut, which alone
    // brings this pair to 0.99): multiplicative both ways, so the joiner's small start
    // stays small (Chiu & Jain).
    const auto mimd = TwoSenders(
        PacingPolicy{.increase_requests_per_s = 0, .probe_max_factor = 1, .repeat_within = 0ms},
        30.0, 120.0, 30.0);
    MESSAGE("without the absolute step: " << mimd[0] << ", " << mimd[1]);
    CHECK(Jain(mimd) < 0.9);
  }
}
