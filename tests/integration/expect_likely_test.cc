// SPDX-License-Identifier: Apache-2.0
// "Expect: 100-continue" only while a refusal is likely, on the wire against
// fwdsink-central (its request log says which heads asked for it): a fresh endpoint's
// large bodies go at once; after a 429 (Retry-After: 1) the re-send and the chunks after
// it ask first, and a refusal then costs its head; `always` is the old rule.
// @ref LLP 0017#expect-when
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/central_process.h"
#include "support/it_support.h"

namespace {

using fwdsink::test::CentralProcess;

constexpr std::uint64_t kChunk = 200'000;  // over the 64 KiB threshold

struct Run {
  CentralProcess central;
  fwdsink::ForwardResult result;
  std::vector<nlohmann::json> log;
  fwdsink::CountersSnapshot counters;

  // Sends three chunks of kChunk, one at a time, to a fresh fwdsink-central started
  // with `args`.
  Run(const std::string& tag, const std::vector<std::string>& args,
      fwdsink::ExpectContinue expect = fwdsink::ExpectContinue::kWhenLikely)
      : central(CentralProcess::ScratchDir("it_expect_likely_" + tag) / "c") {
    const auto path = CentralProcess::ScratchDir("it_expect_likely_" + tag + "_p") / "p.ndjson";
    fwdsink::test::WriteRows(path, 12000, 50);  // 600 kB: three chunks
    REQUIRE(central.Start(args));
    fwdsink::ForwardOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
    o.compression = fwdsink::Compression::kIdentity;
    o.chunker.chunk_bytes = kChunk;
    o.window = 1;  // in order: each request sees what the one before it said
    o.expect_continue = expect;
    fwdsink::test::SinkRun sink(o);
    result = sink.Forward("p", path);
    log = central.request_log();
    counters = fwdsink::Snapshot(sink.sink().counters());
  }
  std::vector<bool> Expects() const {
    std::vector<bool> out;
    for (const auto& e : log) out.push_back(e.value("expect", false));
    return out;
  }
};

}  // namespace

TEST_CASE("AFreshEndpointGetsNoExpectAndOneAfterA429Does") {
  Run run("after_429", {"--fail-status", "429", "--fail-first", "1"});
  CHECK_MESSAGE(run.result.outcome == fwdsink::Outcome::kDelivered, run.result.message);
  REQUIRE(run.log.size() == 4);
  // Nothing said a refusal was coming: the first body went at once, and was refused.
  CHECK(run.log[0]["status"] == 429);
  CHECK(run.log[0]["expect"] == false);
  CHECK(run.log[0]["body_bytes"] == kChunk);
  // The re-send and the next chunks, within the minute after the wait: Expect.
  CHECK(fwdsink::test::Statuses(run.log) == std::vector<int>{429, 200, 200, 200});
  CHECK(run.Expects() == std::vector<bool>{false, true, true, true});
  CHECK(run.counters.expect_sent == 3);
  CHECK(run.counters.expect_timeouts == 0);  // central says 100 Continue at once
  CHECK(run.counters.bodies_withheld == 0);
}

TEST_CASE("WithoutARefusalNoRequestCarriesExpect") {
  Run run("fresh", {});
  CHECK_MESSAGE(run.result.outcome == fwdsink::Outcome::kDelivered, run.result.message);
  REQUIRE(run.log.size() == 3);
  CHECK(run.Expects() == std::vector<bool>{false, false, false});
  CHECK(run.counters.expect_sent == 0);
}

TEST_CASE("AlwaysSendsExpectOnEveryLargeBodyAndARefusalCostsItsHead") {
  Run run("always", {"--fail-status", "429", "--fail-first", "1"},
          fwdsink::ExpectContinue::kAlways);
  CHECK_MESSAGE(run.result.outcome == fwdsink::Outcome::kDelivered, run.result.message);
  REQUIRE(run.log.size() == 4);
  CHECK(run.Expects() == std::vector<bool>{true, true, true, true});
  CHECK(run.log[0]["status"] == 429);
  CHECK(run.log[0]["body_bytes"] == 0);  // refused from its head
  CHECK(run.counters.bodies_withheld == 1);
  CHECK(run.counters.expect_sent == 4);
}
