// SPDX-License-Identifier: Apache-2.0
// LoopWatch (the daemon's watchdog rule, examples/fwdsink/notify.cc): the watchdog is
// petted while the loop moves or sits in a bounded backoff wait, and not once it has
// stood still past the stall limit. Pure: the test passes the times.
#include "notify.h"

#include <doctest/doctest.h>

#include <chrono>

using namespace std::chrono_literals;
using fwdsink_cli::LoopSample;
using fwdsink_cli::LoopWatch;
using Phase = fwdsink::ForwardSink::State::Phase;

namespace {
constexpr auto kStall = 60s;
const std::chrono::steady_clock::time_point kT0{std::chrono::hours(1)};
}  // namespace

TEST_CASE("LoopWatch: healthy while the loop moves, not after it stands still past the limit") {
  LoopWatch watch(kStall);
  CHECK(watch.Healthy({.progress = 1, .phase = Phase::kSending}, kT0));
  SUBCASE("progress keeps it healthy forever") {
    for (int i = 2; i < 100; ++i) {
      CHECK(watch.Healthy({.progress = static_cast<std::uint64_t>(i), .phase = Phase::kSending},
                          kT0 + i * 59s));
    }
  }
  SUBCASE("a request stuck past the stall limit stops the pings") {
    CHECK(watch.Healthy({.progress = 1, .phase = Phase::kSending}, kT0 + 59s));
    CHECK_FALSE(watch.Healthy({.progress = 1, .phase = Phase::kSending}, kT0 + 60s));
    // It moves again: healthy at once.
    CHECK(watch.Healthy({.progress = 2, .phase = Phase::kSending}, kT0 + 61s));
  }
  SUBCASE("a long backoff wait is the job; the stall clock starts when it should end") {
    const auto until = kT0 + 300s;
    CHECK(watch.Healthy({.progress = 2, .phase = Phase::kWaiting, .wait_until = until}, kT0));
    CHECK(
        watch.Healthy({.progress = 2, .phase = Phase::kWaiting, .wait_until = until}, kT0 + 299s));
    CHECK(
        watch.Healthy({.progress = 2, .phase = Phase::kWaiting, .wait_until = until}, until + 59s));
    CHECK_FALSE(
        watch.Healthy({.progress = 2, .phase = Phase::kWaiting, .wait_until = until}, until + 60s));
  }
  SUBCASE("twin: idle without progress is a stall too (ticks stopped)") {
    CHECK(watch.Healthy({.progress = 5, .phase = Phase::kIdle}, kT0 + 1s));
    CHECK(watch.Healthy({.progress = 5, .phase = Phase::kIdle}, kT0 + 60s));
    CHECK_FALSE(watch.Healthy({.progress = 5, .phase = Phase::kIdle}, kT0 + 61s));
  }
}

TEST_CASE("StallLimit outlasts the longest tick pause and one request") {
  fwdsink::DriverOptions o;
  o.forward.backpressure.jitter = 0.5;
  // Pauses up to 60 s, jittered up to 90 s: two of them, plus slack.
  CHECK(fwdsink_cli::StallLimit(o) >= 180s);
  o.forward.transport.min_throughput_bytes_per_s = 1024;  // 1 MiB chunk: 1024 s upload
  CHECK(fwdsink_cli::StallLimit(o) >= 1024s);
}
