// SPDX-License-Identifier: Apache-2.0
// Issue 25 item 9 (LLP 0023#rate-limit-remaining): `Remaining: 0` means no request
// before the reset, capped by max_wait, whatever the limit says; the pacer reports the
// rate it really applies. On the fake clock, from the headers as a server sends them.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string_view>

#include "fwdsink/pacer.h"
#include "fwdsink/ratelimit.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using fwdsink::EndpointPacer;
using fwdsink::PaceSource;
using fwdsink::PacingPolicy;
using std::chrono::milliseconds;

namespace {

constexpr std::uint64_t kChunk = 10'000;  // wire bytes per request

// X-RateLimit-Limit, -Remaining and -Reset (delta seconds) as one response carries them.
std::optional<fwdsink::AdvertisedQuota> XRateLimit(std::string_view limit,
                                                   std::string_view remaining,
                                                   std::string_view reset,
                                                   const fwdsink::FakeClock& clock) {
  fwdsink::RateLimitFields f;
  f.x_limit = limit;
  f.x_remaining = remaining;
  f.x_reset = reset;
  return fwdsink::ParseAdvertisedQuota(f, clock.SystemNow());
}

// One request accepted with `quota` in its response; returns the pacer's next wait.
milliseconds AcceptThenReserve(EndpointPacer& p, fwdsink::FakeClock& clock,
                               const std::optional<fwdsink::AdvertisedQuota>& quota) {
  clock.Advance(p.Reserve(clock.MonotonicNow(), kChunk));
  clock.Advance(10ms);
  p.OnAccepted(clock.MonotonicNow(), kChunk, quota);
  return p.Reserve(clock.MonotonicNow(), kChunk);
}

}  // namespace

TEST_CASE("RemainingZeroWaitsForTheResetWhateverTheLimit") {
  SUBCASE("a large limit and a reset a minute ahead: the minute is waited") {
    fwdsink::FakeClock clock;
    EndpointPacer p;
    const auto quota = XRateLimit("5000", "0", "60", clock);
    REQUIRE(quota);
    const milliseconds wait = AcceptThenReserve(p, clock, quota);
    CHECK(wait >= 59s);
    CHECK(wait <= 60s);
    // The rate it reports is the one applied: one request per minute, not 1/s.
    const auto rate = p.Current(clock.MonotonicNow());
    CHECK(rate.source == PaceSource::kAdvertised);
    CHECK(rate.requests_per_s == doctest::Approx(1.0 / 60));
  }
  SUBCASE("a small limit waits the same") {
    fwdsink::FakeClock clock;
    EndpointPacer p;
    const milliseconds wait = AcceptThenReserve(p, clock, XRateLimit("5", "0", "60", clock));
    CHECK(wait >= 59s);
    CHECK(wait <= 60s);
  }
  SUBCASE("a reset beyond max_wait waits max_wait") {
    fwdsink::FakeClock clock;
    EndpointPacer p(PacingPolicy{.max_wait = 300s});
    const milliseconds wait =
        AcceptThenReserve(p, clock, XRateLimit("1000000", "0", "3600", clock));
    CHECK(wait == 300s);
  }
  SUBCASE("a saturated limit (absurd value) still waits for the reset") {
    fwdsink::FakeClock clock;
    EndpointPacer p;
    const milliseconds wait =
        AcceptThenReserve(p, clock, XRateLimit("99999999999999999999999", "0", "30", clock));
    CHECK(wait >= 29s);
    CHECK(wait <= 30s);
  }
}

// Twins: what must not change.
TEST_CASE("RemainingZeroWithResetZeroStillPacesAtOneRequestPerSecond") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  for (int i = 0; i < 5; ++i) {
    const milliseconds wait = AcceptThenReserve(p, clock, XRateLimit("5000", "0", "0", clock));
    CHECK(wait >= 990ms);
    CHECK(wait <= 1000ms);
  }
}

TEST_CASE("RemainingLeftUnderALargeLimitIsSentAtOnce") {
  fwdsink::FakeClock clock;
  EndpointPacer p;
  // 4,999 of 5,000 left for a minute: the burst goes now, no wait.
  CHECK(AcceptThenReserve(p, clock, XRateLimit("5000", "4999", "60", clock)) == 0ms);
}
