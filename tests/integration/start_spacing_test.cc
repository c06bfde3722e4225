// SPDX-License-Identifier: Apache-2.0
// A window's starts spread over a round trip, on real sockets against fwdsink-central
// answering every POST after 100 ms: the first window goes at once (no round trip is
// known), the later ones one start per 100 ms / window. Twins: a window of one is spaced
// by its own answers, and a round trip of a local network spaces nothing.
// @ref LLP 0014#stagger
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "support/central_process.h"
#include "support/it_support.h"

namespace {

using fwdsink::test::CentralProcess;

constexpr std::uint64_t kChunk = 20'000;

struct Run {
  CentralProcess central;
  fwdsink::ForwardResult result;
  std::vector<nlohmann::json> log;
  fwdsink::CountersSnapshot counters;

  // Sends ~24 chunks of kChunk with `window` in flight to a fresh fwdsink-central
  // started with `args`.
  Run(const std::string& tag, std::size_t window, const std::vector<std::string>& args)
      : central(CentralProcess::ScratchDir("it_spacing_" + tag) / "c") {
    const auto path = CentralProcess::ScratchDir("it_spacing_" + tag + "_p") / "p.ndjson";
    fwdsink::test::WriteRows(path, 9600, 50);  // 480 kB: 24 chunks
    REQUIRE(central.Start(args));
    fwdsink::ForwardOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
    o.compression = fwdsink::Compression::kIdentity;
    o.chunker.chunk_bytes = kChunk;
    o.window = window;
    fwdsink::test::SinkRun sink(o);
    result = sink.Forward("p", path);
    log = central.request_log();
    counters = fwdsink::Snapshot(sink.sink().counters());
  }
};

}  // namespace

TEST_CASE("AfterTheFirstRoundTripAWindowsStartsAreSpread") {
  Run run("spread", 8, {"--header-delay-ms", "100"});
  CHECK_MESSAGE(run.result.outcome == fwdsink::Outcome::kDelivered, run.result.message);
  REQUIRE(run.log.size() >= 24);
  // The second window's starts waited for the spacing (100 ms / 8); later ones mostly
  // find it passed already, as the answers come back spread.
  CHECK(run.counters.spaced_starts >= 4);
  CHECK(run.counters.spaced_wait_ms > 0);
  // On the wire: after the first window (which went at once), the requests come in one
  // by one, not in bursts: consecutive arrivals under 3 ms apart are rare (at most two
  // pairs; a burst of eight alone would be seven).
  std::vector<std::int64_t> t;
  for (const auto& e : run.log) t.push_back(e.at("t_ms").get<std::int64_t>());
  std::sort(t.begin(), t.end());
  int close = 0;
  for (std::size_t i = 9; i < t.size(); ++i) close += t[i] - t[i - 1] < 3 ? 1 : 0;
  CHECK(close <= 2);
}

TEST_CASE("AWindowOfOneWaitsForNothingButItsAnswers") {
  Run run("one", 1, {"--header-delay-ms", "100"});
  CHECK_MESSAGE(run.result.outcome == fwdsink::Outcome::kDelivered, run.result.message);
  CHECK(run.log.size() >= 24);
  CHECK(run.counters.spaced_starts == 0);
}

TEST_CASE("ALocalRoundTripSpacesNothing") {
  // A few hundred microseconds over a window of 16 is far under the 1 ms floor.
  Run run("local", 16, {});
  CHECK_MESSAGE(run.result.outcome == fwdsink::Outcome::kDelivered, run.result.message);
  CHECK(run.log.size() >= 24);
  CHECK(run.counters.spaced_starts == 0);
}

TEST_CASE("CloseDuringASpacingHoldReturnsAtOnce") {
  // Answers after 1 s, a window of two: the third chunk goes as the first answers come,
  // the fourth waits for the spacing (500 ms). Close() meanwhile ends the call at once,
  // not when the spacing has passed (DESIGN: close() within ~100 ms).
  CentralProcess central(CentralProcess::ScratchDir("it_spacing_close") / "c");
  const auto path = CentralProcess::ScratchDir("it_spacing_close_p") / "p.ndjson";
  fwdsink::test::WriteRows(path, 9600, 50);
  REQUIRE(central.Start({"--header-delay-ms", "1000"}));
  fwdsink::ForwardOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = kChunk;
  o.window = 2;
  fwdsink::test::SinkRun sink(o);
  auto forwarded = std::async(std::launch::async, [&] { return sink.Forward("p", path); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (central.request_log().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(central.request_log().size() >= 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the fourth is held now
  const auto t0 = std::chrono::steady_clock::now();
  sink.sink().Close();
  REQUIRE(forwarded.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(100));
  const fwdsink::ForwardResult result = forwarded.get();
  CHECK(result.outcome == fwdsink::Outcome::kAborted);
}
