// SPDX-License-Identifier: Apache-2.0
// Pacing end to end: the real sink on the real clock against fwdsink-central's byte
// bucket, with and without --ratelimit-headers. No timing assertions (LLP 0030 has the
// figures): every row arrives exactly once, refusals are few, and the pacer says where
// its rate comes from. @ref LLP 0016#pacer
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "fwdsink/forward_sink.h"
#include "support/central_process.h"
#include "support/it_support.h"

using namespace std::chrono_literals;
using fwdsink::Outcome;
using fwdsink::PaceSource;
using fwdsink::test::CentralProcess;
using fwdsink::test::CheckResendsIdentical;
using fwdsink::test::SinkRun;
using fwdsink::test::WriteRows;

namespace {

constexpr std::size_t kLine = 100;               // bytes per row, '\n' included
constexpr std::size_t kChunkBytes = 10 * kLine;  // ten rows per chunk (identity)
constexpr int kRows = 400;                       // 40 chunks, 40 kB
// The bucket: 16 kB/s, burst 4 kB (four chunks): about 2.3 s at the limit.
const std::string kRate = "16000";
const std::string kBurst = "4000";

fwdsink::ForwardOptions OptionsFor(const CentralProcess& central) {
  fwdsink::ForwardOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(central.port()) + "/v1/ndjson";
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = kChunkBytes;
  o.backpressure.ladder = {1s};
  o.backpressure.max_wait = 10s;
  o.backpressure.inline_budget = 60s;
  o.transport.connect_timeout = 2s;
  o.transport.read_timeout = 10s;
  o.transport.write_timeout = 5s;
  // The pacer's own figures: one request at a time (a window's first requests go before
  // the first answer advertises the bucket; figures 9-11 measure the daemon's).
  o.window = 1;
  return o;
}

// A window stores a partition's chunks in any order (LLP 0014#window).
std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

int Refusals(const std::vector<nlohmann::json>& log) {
  int n = 0;
  for (const auto& e : log) n += e.value("status", 0) == 429 ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("AdvertisedQuotaIsFollowedWithAlmostNoRefusals") {
  const auto dir = CentralProcess::ScratchDir("it_pacing_advertised");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, kRows, kLine);
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--rate", kRate, "--burst", kBurst, "--ratelimit-headers"}));
  SinkRun run(OptionsFor(central));
  const auto r = run.Forward("a", path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  CHECK(Sorted(central.received_rows()) == Sorted(rows));  // every row once
  const auto log = central.request_log();
  CHECK(CheckResendsIdentical(log) <= Refusals(log));  // a re-sent chunk is identical
  // The first response already advertises the bucket: nothing to learn by refusal.
  CHECK(Refusals(log) <= 1);
  CHECK(run.sink().pacing().source == PaceSource::kAdvertised);
  CHECK(run.sink().pacing().bytes_per_s == doctest::Approx(16000));
  CHECK(run.sink().pacing().burst_bytes == 4000);
  CHECK(run.sink().counters().pacer_waits > 10);
  CHECK(run.sink().counters().pacing_source == 2);
  const auto pacing = run.Named("forward.pacing");
  REQUIRE_FALSE(pacing.empty());
  CHECK(pacing.front().reason == "advertised");
}

TEST_CASE("LearnedPacingKeepsRefusalsFewWithoutHeaders") {
  const auto dir = CentralProcess::ScratchDir("it_pacing_learned");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, kRows, kLine);
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--rate", kRate, "--burst", kBurst}));
  SinkRun run(OptionsFor(central));
  const auto r = run.Forward("l", path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  CHECK(Sorted(central.received_rows()) == Sorted(rows));
  const auto log = central.request_log();
  CHECK(CheckResendsIdentical(log) <= Refusals(log));  // a re-sent chunk is identical
  // Unpaced, this bucket refuses about one request in five (a burst of four, then a
  // refusal per Retry-After second); learning costs a handful.
  MESSAGE("refusals " << Refusals(log) << " of " << log.size());
  CHECK(Refusals(log) <= 6);
  CHECK(run.sink().pacing().source == PaceSource::kLearned);
  CHECK(run.sink().counters().pacer_waits > 10);
  SUBCASE("twin: with pacing off the same run is refused more often") {
    CentralProcess again(dir / "central-off");
    REQUIRE(again.Start({"--rate", kRate, "--burst", kBurst}));
    auto off_options = OptionsFor(again);
    off_options.pacing.enabled = false;
    SinkRun off(off_options);
    REQUIRE(off.Forward("l", path).outcome == Outcome::kDelivered);
    CHECK(Sorted(again.received_rows()) == Sorted(rows));
    CHECK(Refusals(again.request_log()) > Refusals(log));
    CHECK(off.sink().counters().pacer_waits == 0);
    CHECK(off.sink().pacing().source == PaceSource::kNone);
  }
}
