// SPDX-License-Identifier: Apache-2.0
// Where the adaptive limit starts, on the fake clock: at the endpoint's last stable limit
// when one is known, else at the initial window, never above the ceiling; a refusal
// still cuts it as before. @ref LLP 0018#start
#include <doctest/doctest.h>

#include "fwdsink/concurrency.h"
#include "support/fake_clock.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

constexpr auto kRtt = milliseconds{100};

// One window of a fully used endpoint: `limit` requests end after one round trip, every
// slot busy (`busy` in flight; the limit when not given). Returns the last change.
std::optional<LimitChange> Round(AdaptiveLimit& l, FakeClock& clock,
                                 std::optional<std::size_t> busy = std::nullopt) {
  clock.Advance(kRtt);
  std::optional<LimitChange> last;
  const std::size_t n = l.limit();
  for (std::size_t i = 0; i < n; ++i) {
    if (auto c = l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kAccepted,
                           busy.value_or(l.limit()))) {
      last = c;
    }
  }
  return last;
}

void Refuse(AdaptiveLimit& l, FakeClock& clock) {
  clock.Advance(milliseconds{10});
  (void)l.Observe(clock.MonotonicNow(), kRtt, RequestSignal::kBackpressure, l.limit());
}

}  // namespace

TEST_CASE("AdaptiveLimit starts at the initial window, within the ceiling") {
  CHECK(ConcurrencyPolicy{}.initial == 4);
  CHECK(AdaptiveLimit(ConcurrencyPolicy{}).limit() == 4);
  CHECK_FALSE(AdaptiveLimit(ConcurrencyPolicy{}).stable().has_value());
  CHECK(AdaptiveLimit(ConcurrencyPolicy{.max = 2}).limit() == 2);  // capped by the ceiling
  CHECK(AdaptiveLimit(ConcurrencyPolicy{.initial = 1}).limit() == 1);
  CHECK(AdaptiveLimit(ConcurrencyPolicy{.adaptive = false, .max = 3}).limit() == 3);
  CHECK(Validate(ConcurrencyPolicy{.initial = 0}).field() == "initial");
  SUBCASE("a known stable limit, within the ceiling") {
    CHECK(AdaptiveLimit(ConcurrencyPolicy{}, 12).limit() == 12);
    CHECK(AdaptiveLimit(ConcurrencyPolicy{.max = 6}, 12).limit() == 6);
    CHECK(AdaptiveLimit(ConcurrencyPolicy{.adaptive = false, .max = 3}, 12).limit() == 3);
  }
}

TEST_CASE("A limit that held a full, clean window is stable; the next one starts there") {
  FakeClock clock;
  AdaptiveLimit first(ConcurrencyPolicy{});
  (void)Round(first, clock);  // its first answer closes the first window: 4 held, 8 next
  CHECK(first.stable() == std::optional<std::size_t>(4));
  CHECK(first.limit() == 8);
  (void)Round(first, clock);  // 8 held, 16 next (not yet proven)
  CHECK(first.stable() == std::optional<std::size_t>(8));
  REQUIRE(first.limit() == 16);
  // The next partition's limit (another driver to the same endpoint) starts at the
  // stable 8, not at 4 and not at the unproven 16.
  AdaptiveLimit second(ConcurrencyPolicy{}, first.stable());
  CHECK(second.limit() == 8);
  SUBCASE("at the ceiling a clean window is stable too") {
    AdaptiveLimit capped(ConcurrencyPolicy{.max = 4});
    (void)Round(capped, clock);
    CHECK(capped.limit() == 4);
    CHECK(capped.stable() == std::optional<std::size_t>(4));
  }
  SUBCASE("twin: a window with slots left over proves nothing") {
    AdaptiveLimit idle(ConcurrencyPolicy{});
    for (int i = 0; i < 5; ++i) (void)Round(idle, clock, 2);
    CHECK(idle.limit() == 4);
    CHECK_FALSE(idle.stable().has_value());
  }
}

TEST_CASE("A refusal still halves: from the stable limit and from the initial window") {
  FakeClock clock;
  SUBCASE("started from a stable 8") {
    AdaptiveLimit l(ConcurrencyPolicy{}, 8);
    Refuse(l, clock);
    CHECK(l.limit() == 4);
  }
  SUBCASE("started fresh at 4") {
    AdaptiveLimit l(ConcurrencyPolicy{});
    Refuse(l, clock);
    CHECK(l.limit() == 2);
    (void)Round(l, clock);
    Refuse(l, clock);
    CHECK(l.limit() == 1);  // and no lower
  }
  SUBCASE("a fall lowers the stable limit: a later limit never starts above a refusal") {
    AdaptiveLimit l(ConcurrencyPolicy{});
    (void)Round(l, clock);
    (void)Round(l, clock);
    REQUIRE(l.stable() == std::optional<std::size_t>(8));
    REQUIRE(l.limit() == 16);
    Refuse(l, clock);  // 16 -> 8: the stable 8 stays
    CHECK(l.stable() == std::optional<std::size_t>(8));
    (void)Round(l, clock, 1);  // a window closes (not full: proves nothing)
    Refuse(l, clock);          // 8 -> 4
    CHECK(l.limit() == 4);
    CHECK(l.stable() == std::optional<std::size_t>(4));
    CHECK(AdaptiveLimit(ConcurrencyPolicy{}, l.stable()).limit() == 4);
  }
}

}  // namespace fwdsink
