// SPDX-License-Identifier: Apache-2.0
// The daemon's progress line pieces: rates with units, the pacing rate and its source,
// which sender is shown, and the concurrency gauge only with several senders.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "progress.h"

using namespace std::chrono_literals;
using fwdsink::ForwardSink;
using fwdsink::PaceRate;
using fwdsink::PaceSource;
using fwdsink_cli::HumanRate;
using fwdsink_cli::PacingText;
using fwdsink_cli::SendersText;
using Phase = ForwardSink::State::Phase;

TEST_CASE("HumanRateKeepsOneDecimalWithAPrefix") {
  CHECK(HumanRate(7'900'000, "B") == "7.9 MB/s");
  CHECK(HumanRate(3'400, "rows") == "3.4 krows/s");
  CHECK(HumanRate(17.4, "req") == "17 req/s");
  CHECK(HumanRate(0, "B") == "0 B/s");
}

TEST_CASE("PacingTextNamesTheRateAndWhereItComesFrom") {
  CHECK(PacingText({.source = PaceSource::kLearned, .requests_per_s = 30, .bytes_per_s = 7.9e6}) ==
        " | pacing 7.9 MB/s (learned)");
  CHECK(PacingText({.source = PaceSource::kAdvertised, .bytes_per_s = 1'048'576}) ==
        " | pacing 1.0 MB/s (advertised)");
  // A request limit alone (nginx limit_req) shows requests/s.
  CHECK(PacingText({.source = PaceSource::kLearned, .requests_per_s = 19.6}) ==
        " | pacing 20 req/s (learned)");
  SUBCASE("twin: nothing limits, nothing shown") {
    CHECK(PacingText({}).empty());
    CHECK(PacingText({.source = PaceSource::kLearned}).empty());  // no rate yet
  }
}

TEST_CASE("SendersTextShowsTheLongestWaitAndTheLimitWithSeveralSenders") {
  const auto now = fwdsink::MonotonicTime{} + 1h;
  const std::vector<ForwardSink::State> three = {
      {.phase = Phase::kSending, .partition = "p1"},
      {.phase = Phase::kWaiting,
       .partition = "p2",
       .reason = "429",
       .status = 429,
       .until = now + 2500ms},
      {.phase = Phase::kWaiting,
       .partition = "p3",
       .reason = "pacing (learned)",
       .until = now + 900ms},
  };
  CHECK(SendersText(three, 3, 4, now) == "waiting 3s: 429 (429) | 3 in flight, limit 4");
  SUBCASE("a sender sending beats an idle one; the first sending is shown") {
    const std::vector<ForwardSink::State> two = {{.phase = Phase::kIdle},
                                                 {.phase = Phase::kSending, .partition = "p9"}};
    CHECK(SendersText(two, 1, 8, now) == "sending p9 | 1 in flight, limit 8");
  }
  SUBCASE("twin: one sender (--concurrency 1) shows no concurrency gauge") {
    const std::vector<ForwardSink::State> one = {{.phase = Phase::kSending, .partition = "p1"}};
    CHECK(SendersText(one, 1, 1, now) == "sending p1");
    CHECK(SendersText({}, 0, 1, now) == "idle");
  }
  SUBCASE("a wait that is over shows 0 s, never a negative count") {
    const std::vector<ForwardSink::State> late = {
        {.phase = Phase::kWaiting, .reason = "", .until = now - 5s}};
    CHECK(SendersText(late, 1, 1, now) == "waiting 0s: backpressure");
  }
}
