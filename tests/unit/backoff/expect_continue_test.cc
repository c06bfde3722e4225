// SPDX-License-Identifier: Apache-2.0
// When a request carries "Expect: 100-continue", on the fake clock: only while a refusal
// is likely (a refusal within the memory, a closed gate, a pacer at its limit), never
// for 10 minutes after the endpoint ignored it twice in a row. @ref LLP 0017#expect-when
#include "fwdsink/expect_continue.h"

#include <doctest/doctest.h>

#include "fwdsink/pacer.h"
#include "fwdsink/ratelimit.h"
#include "support/fake_clock.h"

namespace fwdsink {
namespace {

using namespace std::chrono_literals;

constexpr ExpectSignals kQuiet{};  // gate open, pacer with room
constexpr auto kMemory = 60s;
constexpr auto kPause = 10min;

}  // namespace

TEST_CASE("ExpectAdvisor: a fresh endpoint gets no Expect") {
  FakeClock clock;
  const ExpectAdvisor advisor;
  CHECK_FALSE(advisor.Expect(clock.MonotonicNow(), kQuiet));
  CHECK_FALSE(advisor.Ignored(clock.MonotonicNow()));
  CHECK(advisor.policy().refusal_memory == kMemory);
  CHECK(advisor.policy().ignored_pause == kPause);
}

TEST_CASE("ExpectAdvisor: Expect for a minute after the wait a refusal asked for") {
  FakeClock clock;
  ExpectAdvisor advisor;
  SUBCASE("a 429 with Retry-After: 1") {
    advisor.OnRefused(clock.MonotonicNow(), 1s);
    CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
    clock.Advance(1s + kMemory - 1ms);
    CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
    clock.Advance(1ms);  // the memory ends: no Expect again
    CHECK_FALSE(advisor.Expect(clock.MonotonicNow(), kQuiet));
  }
  SUBCASE("a 413 or a 401, without a wait") {
    advisor.OnRefused(clock.MonotonicNow(), 0ms);
    clock.Advance(kMemory - 1ms);
    CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
    clock.Advance(1ms);
    CHECK_FALSE(advisor.Expect(clock.MonotonicNow(), kQuiet));
  }
  SUBCASE("a long Retry-After: the memory counts from the end of the wait") {
    advisor.OnRefused(clock.MonotonicNow(), 300s);
    clock.Advance(300s + kMemory - 1ms);
    CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
  }
  SUBCASE("a later, shorter refusal does not shorten it") {
    advisor.OnRefused(clock.MonotonicNow(), 120s);
    clock.Advance(1s);
    advisor.OnRefused(clock.MonotonicNow(), 0ms);
    clock.Advance(119s + kMemory - 1ms);
    CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
  }
}

TEST_CASE("ExpectAdvisor: a closed gate or a pacer at its limit asks for Expect too") {
  FakeClock clock;
  const ExpectAdvisor advisor;
  CHECK(advisor.Expect(clock.MonotonicNow(), {.gate_closed = true}));
  CHECK(advisor.Expect(clock.MonotonicNow(), {.pacer_near_limit = true}));
  CHECK_FALSE(advisor.Expect(clock.MonotonicNow(), kQuiet));  // twin
}

TEST_CASE("ExpectAdvisor: ignored twice in a row, no Expect for 10 minutes, then again") {
  FakeClock clock;
  ExpectAdvisor advisor;
  advisor.OnRefused(clock.MonotonicNow(), 1s);
  CHECK_FALSE(advisor.OnExpectAnswered(clock.MonotonicNow(), /*waited_out=*/true));
  CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));  // once is not yet "ignores it"
  CHECK(advisor.OnExpectAnswered(clock.MonotonicNow(), /*waited_out=*/true));  // turned off
  const MonotonicTime off = clock.MonotonicNow();
  CHECK(advisor.Ignored(off));
  // Likely or not, none: the wait would only cost a second on every request.
  CHECK_FALSE(advisor.Expect(off, kQuiet));
  CHECK_FALSE(advisor.Expect(off, {.gate_closed = true, .pacer_near_limit = true}));
  // A request that carried it before it was off and ran out too does not say it again.
  CHECK_FALSE(advisor.OnExpectAnswered(off, /*waited_out=*/true));
  clock.Advance(kPause - 1ms);
  advisor.OnRefused(clock.MonotonicNow(), 1s);
  CHECK_FALSE(advisor.Expect(clock.MonotonicNow(), kQuiet));
  clock.Advance(1ms);  // ten minutes on: again while a refusal is likely
  CHECK_FALSE(advisor.Ignored(clock.MonotonicNow()));
  CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
  CHECK(advisor.Expect(clock.MonotonicNow(), {.gate_closed = true}));
  SUBCASE("and twice more in a row turn it off again") {
    CHECK_FALSE(advisor.OnExpectAnswered(clock.MonotonicNow(), true));
    CHECK(advisor.OnExpectAnswered(clock.MonotonicNow(), true));
    CHECK_FALSE(advisor.Expect(clock.MonotonicNow(), kQuiet));
  }
}

TEST_CASE("ExpectAdvisor: twin: waits that ran out, but not in a row, keep Expect on") {
  FakeClock clock;
  ExpectAdvisor advisor;
  advisor.OnRefused(clock.MonotonicNow(), 1s);
  for (int i = 0; i < 5; ++i) {
    CHECK_FALSE(advisor.OnExpectAnswered(clock.MonotonicNow(), /*waited_out=*/true));
    // A 100 Continue (or a refusal from the head) in between: it does Expect.
    CHECK_FALSE(advisor.OnExpectAnswered(clock.MonotonicNow(), /*waited_out=*/false));
  }
  CHECK_FALSE(advisor.Ignored(clock.MonotonicNow()));
  CHECK(advisor.Expect(clock.MonotonicNow(), kQuiet));
}

TEST_CASE("EndpointPacer::NearLimit: only a limit with no room left is near") {
  FakeClock clock;
  EndpointPacer pacer;
  const MonotonicTime t = clock.MonotonicNow();
  CHECK_FALSE(pacer.NearLimit(t, 1000));  // nothing to pace to
  SUBCASE("an advertised quota with room, then without") {
    pacer.OnAccepted(t, 1000,
                     AdvertisedQuota{.unit = QuotaUnit::kContentBytes,
                                     .rate_per_s = 100'000,
                                     .burst = 100'000,
                                     .remaining = 50'000});
    CHECK_FALSE(pacer.NearLimit(t, 1000));  // room for fifty more
    pacer.OnAccepted(t, 1000,
                     AdvertisedQuota{.unit = QuotaUnit::kContentBytes,
                                     .rate_per_s = 100'000,
                                     .burst = 100'000,
                                     .remaining = 500});
    CHECK(pacer.NearLimit(t, 1000));  // the next one would wait
  }
  SUBCASE("a learned limit: every request goes on the pacer's schedule") {
    for (int i = 0; i < 5; ++i) {
      (void)pacer.Reserve(clock.MonotonicNow(), 1000);
      pacer.OnAccepted(clock.MonotonicNow(), 1000, std::nullopt);
      clock.Advance(100ms);
    }
    pacer.OnRefused(clock.MonotonicNow(), 1s, std::nullopt);
    REQUIRE(pacer.Current(clock.MonotonicNow()).source == PaceSource::kLearned);
    clock.Advance(1s);
    const auto wait = pacer.Reserve(clock.MonotonicNow(), 1000);
    clock.Advance(wait);
    CHECK(pacer.NearLimit(clock.MonotonicNow(), 1000));
  }
  SUBCASE("twin: pacing off") {
    EndpointPacer off(PacingPolicy{.enabled = false});
    off.OnRefused(t, 1s, std::nullopt);
    CHECK_FALSE(off.NearLimit(t, 1000));
  }
}

}  // namespace fwdsink
