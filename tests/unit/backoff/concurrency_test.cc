// SPDX-License-Identifier: Apache-2.0
// The adaptive concurrency limit on a fake clock: rises while latency-bound, falls on
// refusals, errors and rising round trips, never leaves [1, max].
#include "fwdsink/concurrency.h"

#include <doctest/doctest.h>

#include "support/fake_clock.h"

namespace fwdsink {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr auto kRtt = milliseconds{100};
constexpr std::size_t kCeiling = 8;

// Sends `limit` requests at once, each taking `rtt`, and records them as they end: one
// window of a fully used endpoint. A window is judged when the first request after it
// ends, so the change a Round returns is the previous Round's verdict. Returns the last
// change seen.
std::optional<LimitChange> Round(AdaptiveLimit& l, FakeClock& clock, milliseconds rtt,
                                 RequestSignal signal = RequestSignal::kAccepted) {
  clock.Advance(rtt);
  std::optional<LimitChange> last;
  // As many requests end in one round trip as the limit allows, the limit read after
  // the first of them moved it.
  for (std::size_t i = 0; i < l.limit(); ++i) {
    // Every slot the limit allows is busy (a sender fills a new slot at once).
    if (auto c = l.Observe(clock.MonotonicNow(), rtt, signal, l.limit())) last = c;
  }
  return last;
}

}  // namespace

TEST_CASE("AdaptiveLimit validates its policy, naming the field") {
  CHECK(Validate(ConcurrencyPolicy{}).ok());
  CHECK(Validate(ConcurrencyPolicy{.max = 0}).field() == "max");
  CHECK(Validate(ConcurrencyPolicy{.decrease = 1.0}).field() == "decrease");
  CHECK(Validate(ConcurrencyPolicy{.rtt_tolerance = 0}).field() == "rtt_tolerance");
  CHECK(Validate(ConcurrencyPolicy{.baseline_weight = 0}).field() == "baseline_weight");
  CHECK(Validate(ConcurrencyPolicy{.min_window = milliseconds{0}}).field() == "min_window");
}

TEST_CASE("AdaptiveLimit rises by one per latency-bound window, up to the ceiling") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1, .slow_start = false});
  CHECK(l.limit() == 1);
  // Steady 100 ms round trips, every slot busy: 1, 2, 3, ... 8. The first answer closes
  // the first window, open since its request went (LLP 0018#first-window).
  for (std::size_t want = 2; want <= kCeiling; ++want) {
    const auto c = Round(l, clock, kRtt);
    REQUIRE(c.has_value());
    CHECK(c->why == "latency_bound");
    CHECK(l.limit() == want);
  }
  SUBCASE("no increase past the ceiling") {
    for (int i = 0; i < 50; ++i) CHECK_FALSE(Round(l, clock, kRtt).has_value());
    CHECK(l.limit() == kCeiling);
  }
  SUBCASE("the baseline follows the round trip") { CHECK(l.baseline() == microseconds{100'000}); }
}

TEST_CASE("AdaptiveLimit doubles until the first fall, then adds one") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1});
  const std::size_t want[] = {2, 4, 8, 8};  // no increase past the ceiling
  for (const std::size_t w : want) {
    (void)Round(l, clock, kRtt);
    CHECK(l.limit() == w);
  }
  clock.Advance(milliseconds{10});
  (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kBackpressure, 8);
  REQUIRE(l.limit() == 4);
  (void)Round(l, clock, kRtt);  // the window of the refusal: no growth
  const std::size_t after[] = {5, 6, 7, 8, 8};
  for (const std::size_t w : after) {
    (void)Round(l, clock, kRtt);
    CHECK(l.limit() == w);
  }
}

TEST_CASE("A first round trip slower than a window is a window of its own") {
  // 250 ms round trips, four requests in flight: the window their first answer opens runs
  // from their start and closes with the fourth answer; slow start doubles on it, as TCP
  // grows on its first ACKs, not a round trip later. @ref LLP 0018#first-window
  FakeClock clock;
  auto first_round = [&clock](AdaptiveLimit& l, RequestSignal fourth) {
    clock.Advance(milliseconds{250});
    std::optional<LimitChange> change;
    for (int i = 0; i < 4; ++i) {
      const RequestSignal signal = i == 3 ? fourth : RequestSignal::kAccepted;
      if (auto c = l.Observe(clock.MonotonicNow(), milliseconds{250}, signal, 4)) change = c;
      if (i < 2) CHECK_FALSE(change.has_value());  // the round trip is not in yet
    }
    return change;
  };
  AdaptiveLimit l(ConcurrencyPolicy{});
  REQUIRE(l.limit() == 4);
  const auto c = first_round(l, RequestSignal::kAccepted);
  REQUIRE(c.has_value());
  CHECK(c->why == "latency_bound");
  CHECK(l.limit() == 8);
  CHECK(l.baseline() == microseconds{250'000});
  SUBCASE("twin: a refusal among the first round trip's answers halves, and nothing grows") {
    AdaptiveLimit refused(ConcurrencyPolicy{});
    const auto r = first_round(refused, RequestSignal::kBackpressure);
    REQUIRE(r.has_value());
    CHECK(r->why == "backpressure");
    CHECK(refused.limit() == 2);
  }
  SUBCASE("twin: a first request faster than a window waits for the window's end") {
    // 5 ms on a LAN: the window runs its 100 ms from that request's start.
    AdaptiveLimit lan(ConcurrencyPolicy{});
    for (int i = 0; i < 4; ++i) {
      CHECK_FALSE(lan.Observe(clock.MonotonicNow(), milliseconds{5}, RequestSignal::kAccepted, 4));
    }
    clock.Advance(milliseconds{90});
    CHECK_FALSE(lan.Observe(clock.MonotonicNow(), milliseconds{5}, RequestSignal::kAccepted, 4));
    clock.Advance(milliseconds{5});  // 100 ms since the first request went
    CHECK(lan.Observe(clock.MonotonicNow(), milliseconds{5}, RequestSignal::kAccepted, 4));
    CHECK(lan.limit() == 8);
  }
  SUBCASE("twin: a window a held request opens starts at its answer, as before") {
    // The pacer held it 300 ms: its time is no round trip. The window runs 100 ms from
    // its answer, and the answers in it grow the limit only when it closes.
    AdaptiveLimit held(ConcurrencyPolicy{});
    clock.Advance(milliseconds{300});
    CHECK_FALSE(held.Observe(clock.MonotonicNow(), milliseconds{300}, RequestSignal::kPaced, 4));
    for (int i = 0; i < 4; ++i) {
      CHECK_FALSE(
          held.Observe(clock.MonotonicNow(), milliseconds{250}, RequestSignal::kAccepted, 4));
    }
    // The window that closes a round trip later held the pacer's hold: no growth.
    clock.Advance(milliseconds{250});
    (void)held.Observe(clock.MonotonicNow(), milliseconds{250}, RequestSignal::kAccepted, 4);
    CHECK(held.limit() == 4);
  }
  SUBCASE("twin: a first window with slots left over does not grow") {
    AdaptiveLimit idle(ConcurrencyPolicy{});
    clock.Advance(milliseconds{250});
    for (int i = 0; i < 4; ++i) {
      CHECK_FALSE(
          idle.Observe(clock.MonotonicNow(), milliseconds{250}, RequestSignal::kAccepted, 2));
    }
    CHECK(idle.limit() == 4);
  }
}

TEST_CASE("AdaptiveLimit does not rise when the slots are not all used") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1, .slow_start = false});
  for (int i = 0; i < 4; ++i) (void)Round(l, clock, kRtt);
  REQUIRE(l.limit() == 5);
  // Only two partitions left: two in flight. The first of them ends the last full
  // window (6); then the limit stays where it is.
  clock.Advance(kRtt);
  (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kAccepted, 2);
  REQUIRE(l.limit() == 6);
  for (int i = 0; i < 20; ++i) {
    clock.Advance(kRtt);
    CHECK_FALSE(l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kAccepted, 2).has_value());
  }
  CHECK(l.limit() == 6);
}

TEST_CASE("AdaptiveLimit halves on a 429/503 and on a transport error, once per window") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1, .slow_start = false});
  for (int i = 0; i < 8; ++i) (void)Round(l, clock, kRtt);
  REQUIRE(l.limit() == 8);
  clock.Advance(milliseconds{10});
  auto c = l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kBackpressure, 8);
  REQUIRE(c.has_value());
  CHECK(c->why == "backpressure");
  CHECK(l.limit() == 4);
  // Seven more senders see the same refusal in the same window: still 4.
  for (int i = 0; i < 7; ++i) {
    CHECK_FALSE(l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kBackpressure, 8));
  }
  CHECK(l.limit() == 4);
  SUBCASE("a transport error in the next window halves again") {
    clock.Advance(kRtt);
    (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kAccepted, 4);  // closes it
    c = l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kError, 4);
    REQUIRE(c.has_value());
    CHECK(c->why == "error");
    CHECK(l.limit() == 2);
  }
  SUBCASE("no growth in a window that saw a refusal") {
    clock.Advance(kRtt);
    (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kAccepted, 4);
    CHECK(l.limit() == 4);
  }
}

TEST_CASE("AdaptiveLimit stays at 1 under sustained backpressure") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1, .slow_start = false});
  for (int i = 0; i < 8; ++i) (void)Round(l, clock, kRtt);
  REQUIRE(l.limit() == 8);
  // Every window has a refusal among its accepted requests: 8, 4, 2, 1, 1, 1...
  const std::size_t want[] = {4, 2, 1, 1, 1, 1, 1, 1, 1, 1};
  for (const std::size_t w : want) {
    (void)Round(l, clock, kRtt);
    (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kBackpressure, l.limit());
    CHECK(l.limit() == w);
  }
  SUBCASE("twin: it grows again once the refusals stop") {
    for (int i = 0; i < 3; ++i) (void)Round(l, clock, kRtt);
    CHECK(l.limit() > 1);
  }
}

TEST_CASE("AdaptiveLimit falls when the round trip rises, and not on a steady one") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1, .slow_start = false});
  for (int i = 0; i < 5; ++i) (void)Round(l, clock, kRtt);
  REQUIRE(l.limit() == 6);
  SUBCASE("the round trip doubles: queueing, fall to the knee") {
    (void)Round(l, clock, 2 * kRtt);  // judges the last steady window: 7
    REQUIRE(l.limit() == 7);
    const auto c = Round(l, clock, 2 * kRtt);  // judges the 200 ms window
    REQUIRE(c.has_value());
    CHECK(c->why == "rtt_rising");
    // 7 x 150 ms tolerated / 200 ms = 5.25: to 5, not halved to 3.
    CHECK(l.limit() == 5);
    // It keeps rising: down to 1, and no lower.
    (void)Round(l, clock, 4 * kRtt);
    (void)Round(l, clock, 8 * kRtt);
    (void)Round(l, clock, 16 * kRtt);
    CHECK(l.limit() == 1);
  }
  SUBCASE("a round trip far past the tolerance still halves, no lower") {
    (void)Round(l, clock, 5 * kRtt);  // judges the last steady window: 7
    REQUIRE(l.limit() == 7);
    const auto c = Round(l, clock, 5 * kRtt);  // 150 / 500 = 0.3: the floor 0.5 holds
    REQUIRE(c.has_value());
    CHECK(c->why == "rtt_rising");
    CHECK(l.limit() == 3);
  }
  SUBCASE("twin: a round trip within the tolerance still grows") {
    (void)Round(l, clock, milliseconds{140});
    const auto c = Round(l, clock, milliseconds{140});  // 140 ms < 1.5 x 100 ms
    REQUIRE(c.has_value());
    CHECK(c->why == "latency_bound");
    CHECK(l.limit() == 8);
  }
}

TEST_CASE("AdaptiveLimit does not grow while the pacer holds requests") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = kCeiling, .initial = 1, .slow_start = false});
  // Each window: a round trip that did not wait, and one the pacer held.
  for (int i = 0; i < 10; ++i) {
    clock.Advance(kRtt);
    (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kAccepted, 2);
    (void)l.Observe(clock.MonotonicNow(), 3 * kRtt, RequestSignal::kPaced, 2);
  }
  CHECK(l.limit() == 1);
  SUBCASE("twin: without the pacer's holds it grows") {
    for (int i = 0; i < 3; ++i) (void)Round(l, clock, kRtt);
    CHECK(l.limit() > 1);
  }
}

TEST_CASE("A fixed limit never moves") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.adaptive = false, .max = 3});
  CHECK(l.limit() == 3);
  CHECK_FALSE(l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kBackpressure, 3));
  for (int i = 0; i < 10; ++i) (void)Round(l, clock, kRtt);
  CHECK(l.limit() == 3);
}

TEST_CASE("A limiter's burst that runs out inside the first window meets the start, no more") {
  // A LAN: 5 ms round trips. The limiter's burst takes 12 requests at link speed, then
  // it refuses. With the default window (100 ms) the refusal lands in the first window,
  // before any growth: the initial window's requests meet the empty bucket, not twice as
  // many, and the refusal halves it. @ref LLP 0018#signals @ref LLP 0018#start
  struct Seen {
    std::size_t at_refusal;
    std::size_t after;
  };
  auto when_refused = [](ConcurrencyPolicy policy) {
    FakeClock clock;
    AdaptiveLimit l(policy);
    for (int i = 0; i < 12; ++i) {
      clock.Advance(milliseconds{5});
      (void)l.Observe(clock.MonotonicNow(), milliseconds{5}, RequestSignal::kAccepted, l.limit());
    }
    const std::size_t at_refusal = l.limit();
    clock.Advance(milliseconds{5});
    (void)l.Observe(clock.MonotonicNow(), microseconds{0}, RequestSignal::kBackpressure, 1);
    return Seen{at_refusal, l.limit()};
  };
  CHECK(ConcurrencyPolicy{}.min_window >= milliseconds{100});
  const Seen seen = when_refused(ConcurrencyPolicy{});
  CHECK(seen.at_refusal == ConcurrencyPolicy{}.initial);
  CHECK(seen.after == ConcurrencyPolicy{}.initial / 2);
  SUBCASE("twin: a 50 ms window grows before the burst runs out") {
    CHECK(when_refused(ConcurrencyPolicy{.min_window = milliseconds{50}}).at_refusal ==
          2 * ConcurrencyPolicy{}.initial);
  }
  SUBCASE("from 1, one sender meets it and the limit stays at 1") {
    const Seen one = when_refused(ConcurrencyPolicy{.initial = 1});
    CHECK(one.at_refusal == 1);
    CHECK(one.after == 1);
  }
}

}  // namespace fwdsink

namespace fwdsink {
namespace {

// One window of `span` in which `ended` requests end, each after `rtt` in flight, with
// every slot busy; returns the verdict on the window before it (judged by its first).
std::optional<LimitChange> Span(AdaptiveLimit& l, FakeClock& clock, milliseconds span,
                                std::size_t ended, milliseconds rtt) {
  clock.Advance(span);
  std::optional<LimitChange> first;
  for (std::size_t i = 0; i < ended; ++i) {
    auto c = l.Observe(clock.MonotonicNow(), rtt, RequestSignal::kAccepted, l.limit());
    if (i == 0) first = c;
  }
  return first;
}

}  // namespace

// @ref LLP 0018#bdp
TEST_CASE("A fall on rising latency stops at what fills the path; a refusal still halves") {
  FakeClock clock;
  AdaptiveLimit l(ConcurrencyPolicy{.max = 16});
  for (int i = 0; i < 6; ++i) (void)Round(l, clock, kRtt);  // 1, 2, 4, 8, 16 at 100 ms
  REQUIRE(l.limit() == 16);
  (void)Span(l, clock, kRtt, 1, 4 * kRtt);  // judges the last steady window: no change
  REQUIRE(l.limit() == 16);
  SUBCASE("the link is full: 10 answers a round trip, each queued to 400 ms") {
    (void)Span(l, clock, milliseconds{0}, 9, 4 * kRtt);
    // 10 a window of 100 ms at a least round trip of 100 ms: 10 in flight fill the
    // path. The knee (16 x 150 / 400 = 6) and the halving (8) would leave it idle.
    const auto c = Span(l, clock, kRtt, 1, 4 * kRtt);
    REQUIRE(c.has_value());
    CHECK(c->why == "rtt_rising_path_full");
    CHECK(c->from == 16);
    CHECK(l.limit() == 10);
    SUBCASE("twin: a refusal still halves, below the path") {
      const auto r =
          l.Observe(clock.MonotonicNow(), microseconds{0}, RequestSignal::kBackpressure, l.limit());
      REQUIRE(r.has_value());
      CHECK(r->why == "backpressure");
      CHECK(l.limit() == 5);
    }
  }
  SUBCASE("twin: few answers (the server slows, not the link): the fall is the knee's") {
    (void)Span(l, clock, milliseconds{0}, 2, 4 * kRtt);
    const auto c = Span(l, clock, kRtt, 1, 4 * kRtt);  // 3 a window: the path needs 3
    REQUIRE(c.has_value());
    CHECK(c->why == "rtt_rising");
    CHECK(l.limit() == 8);
  }
}

}  // namespace fwdsink
