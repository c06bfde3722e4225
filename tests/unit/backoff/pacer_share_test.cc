// SPDX-License-Identifier: Apache-2.0
// EndpointPacer on a quota it shares with others (LLP 0016#shared-quota), on the fake
// clock: a server that says how much is left on every response. A lone sender is never
// cut; a short count while others take a share is a cut without a refusal; senders on
// one quota converge to equal shares, and one left alone takes the whole quota back.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "fwdsink/pacer.h"
#include "support/fake_clock.h"
#include "support/jain.h"

using namespace std::chrono_literals;
using fwdsink::AdvertisedQuota;
using fwdsink::EndpointPacer;
using fwdsink::Jain;
using fwdsink::MonotonicTime;
using fwdsink::PacingPolicy;
using fwdsink::QuotaUnit;
using std::chrono::milliseconds;

namespace {

constexpr std::uint64_t kChunk = 100'000;  // wire bytes per request
constexpr double kRate = 2e6;              // the quota: 2 MB/s
constexpr double kBurst = 5e5;             // burst 0.5 MB

double Secs(MonotonicTime::duration d) { return std::chrono::duration<double>(d).count(); }

// What the server says with a response: the quota and the whole bytes left.
AdvertisedQuota Count(double left) {
  return AdvertisedQuota{.unit = QuotaUnit::kContentBytes,
                         .rate_per_s = kRate,
                         .burst = static_cast<std::uint64_t>(kBurst),
                         .remaining = static_cast<std::uint64_t>(std::max(0.0, left)),
                         .bucket = true};
}

struct Run {
  std::vector<double> late;  // bytes each accepted in the last `last` seconds
  int refused = 0;
  std::vector<double> rate;  // each pacer's byte rate at the end
};

// `n` senders, each with its own pacer, on one advertising byte bucket; sender i sends
// from from[i] (0 when not given) until stop[i] seconds (the run lasts `secs`).
// Retry-After 1 s on a refusal.
Run Senders(const PacingPolicy& policy, const std::vector<double>& stop, double secs, double last,
            const std::vector<double>& from = {}) {
  fwdsink::FakeClock clock;
  const MonotonicTime start = clock.MonotonicNow();
  const std::size_t n = stop.size();
  double tokens = kBurst;
  MonotonicTime refilled = start;
  std::vector<std::unique_ptr<EndpointPacer>> pacers;
  for (std::size_t i = 0; i < n; ++i) pacers.push_back(std::make_unique<EndpointPacer>(policy));
  std::vector<MonotonicTime> next(n, start);
  for (std::size_t i = 0; i < from.size() && i < n; ++i) {
    next[i] = start + std::chrono::duration_cast<MonotonicTime::duration>(
                          std::chrono::duration<double>(from[i]));
  }
  std::vector<bool> paced(n, false);
  Run run{std::vector<double>(n, 0.0), 0, {}};
  for (;;) {
    std::size_t i = 0;
    for (std::size_t k = 1; k < n; ++k) {
      if (next[k] < next[i]) i = k;
    }
    const MonotonicTime now = next[i];
    if (Secs(now - start) >= secs) break;
    if (Secs(now - start) >= stop[i]) {
      next[i] = MonotonicTime::max();
      continue;
    }
    if (!paced[i]) {
      const auto wait = pacers[i]->Reserve(now, kChunk);
      if (wait > 0ms) {
        paced[i] = true;
        next[i] = now + wait;
        continue;
      }
    }
    paced[i] = false;
    tokens = std::min(kBurst, tokens + kRate * Secs(now - refilled));
    refilled = now;
    const MonotonicTime done = now + 5ms;
    if (tokens >= static_cast<double>(kChunk)) {
      tokens -= static_cast<double>(kChunk);
      pacers[i]->OnAccepted(done, kChunk, Count(tokens));
      if (Secs(now - start) >= secs - last) run.late[i] += static_cast<double>(kChunk);
      next[i] = done;
    } else {
      ++run.refused;
      pacers[i]->OnRefused(done, 1s, Count(tokens));
      next[i] = done + 1s;
    }
  }
  for (const auto& p : pacers) run.rate.push_back(p->Current(clock.MonotonicNow()).bytes_per_s);
  return run;
}

const PacingPolicy kOff{.share_others = 0};

}  // namespace

TEST_CASE("ALoneSenderOnAnAdvertisedQuotaIsNeverCut") {
  // Its own sending explains every count: nobody else, so a count near zero (it paces
  // to the quota exactly) is no cut. The must-not-fire twin of the cases below.
  const Run run = Senders(PacingPolicy{}, {60.0}, 60.0, 30.0);
  CHECK(run.refused == 0);
  CHECK(run.rate[0] == doctest::Approx(kRate));  // paced to the whole quota, never cut
  CHECK(run.late[0] >= 0.98 * kRate * 30);
}

// Every 100 ms the bucket refills 200 kB and we take `ours` chunks; the counts say that
// `theirs` more went. Returns the pacer's byte rate after 2 s of such counts, each below
// two of our requests (short).
double AfterCounts(const PacingPolicy& policy, int ours, double theirs) {
  fwdsink::FakeClock clock;
  EndpointPacer p(policy);
  double left = 100'000;
  for (int i = 0; i < 20; ++i) {
    clock.Advance(100ms);
    left += 200'000 - ours * static_cast<double>(kChunk) - theirs;
    REQUIRE(left < 200'000);
    // Each response counts what was left after its own request.
    for (int k = 0; k < ours; ++k) {
      p.OnAccepted(clock.MonotonicNow(), kChunk,
                   Count(left + (ours - 1 - k) * static_cast<double>(kChunk)));
    }
  }
  return p.Current(clock.MonotonicNow()).bytes_per_s;
}

TEST_CASE("AShortCountWhileOthersTakeAShareIsACutWithoutARefusal") {
  // Others take 100 kB per 100 ms (half the quota): a short count is a cut, and no
  // request was refused.
  const double shared = AfterCounts(PacingPolicy{}, 1, 100'000);
  MESSAGE("after short counts shared with others: " << shared << " B/s");
  CHECK(shared < 0.8 * kRate);
  SUBCASE("twin: the same counts with sharing off leave the advertised quota") {
    CHECK(AfterCounts(kOff, 1, 100'000) == doctest::Approx(kRate));
  }
  SUBCASE("twin: short counts that our own sending explains are no cut") {
    CHECK(AfterCounts(PacingPolicy{}, 2, 0) == doctest::Approx(kRate));
  }
}

TEST_CASE("FourSendersOnASharedQuotaConvergeToEqualShares") {
  const Run run = Senders(PacingPolicy{}, {60.0, 60.0, 60.0, 60.0}, 60.0, 30.0);
  const Run off = Senders(kOff, {60.0, 60.0, 60.0, 60.0}, 60.0, 30.0);
  double sum = 0;
  for (double v : run.late) sum += v;
  MESSAGE("shared: Jain " << Jain(run.late) << ", " << run.refused << " refused; off: Jain "
                          << Jain(off.late) << ", " << off.refused << " refused");
  CHECK(Jain(run.late) >= 0.95);
  CHECK(sum >= 0.9 * kRate * 30);  // and together they still fill the quota
  CHECK(run.refused < off.refused);
  // Twin: each paces to the whole quota, the first to be refused learns a share and the
  // others keep theirs.
  CHECK(Jain(off.late) < 0.9);
}

TEST_CASE("ASenderLeftAloneOnASharedQuotaTakesItBack") {
  // Two share the quota for 20 s, then one stops: over the last 10 s of 40 the other
  // sends at the quota's rate again (the shared step: 8 % of it per second).
  const Run run = Senders(PacingPolicy{}, {40.0, 20.0}, 40.0, 10.0);
  MESSAGE("alone, last 10 s: " << run.late[0] << " bytes");
  CHECK(run.late[0] >= 0.9 * kRate * 10);
  SUBCASE("twin: without the shared step it climbs at the additive step") {
    PacingPolicy slow;
    slow.share_increase = 0;
    const Run crawl = Senders(slow, {40.0, 20.0}, 40.0, 10.0);
    MESSAGE("without it: " << crawl.late[0] << " bytes");
    CHECK(crawl.late[0] < 0.9 * kRate * 10);
  }
}

TEST_CASE("ASenderPacedToTheCountLeavesRoomForANewcomer") {
  // Paced to the count exactly, a sender keeps the bucket empty, and a newcomer's
  // refused requests take nothing it could see: it leaves two requests' worth.
  fwdsink::FakeClock clock;
  auto wait_with = [&](const PacingPolicy& policy) {
    EndpointPacer p(policy);
    p.OnAccepted(clock.MonotonicNow(), kChunk, Count(250'000));  // 2.5 requests left
    return p.Reserve(clock.MonotonicNow(), kChunk);
  };
  // 250 kB left, 200 kB of room: 50 kB to go for the next 100 kB, at 2 MB/s.
  CHECK(wait_with(PacingPolicy{}) == 25ms);
  SUBCASE("twin: with no room the count goes at once") {
    CHECK(wait_with(PacingPolicy{.share_room = 0}) == 0ms);
  }
  SUBCASE("and a newcomer after 10 s gets an equal share") {
    const Run run = Senders(PacingPolicy{}, {40.0, 40.0}, 40.0, 15.0, {0.0, 10.0});
    MESSAGE("last 15 s: " << run.late[0] << ", " << run.late[1] << "; " << run.refused
                          << " refused");
    CHECK(Jain(run.late) >= 0.95);
  }
}
