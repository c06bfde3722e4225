// SPDX-License-Identifier: Apache-2.0
// Issue 25 item 9 (LLP 0023#rate-limit-remaining): the forward.pacing event reports the
// request rate it applies exactly, also under one a second (rate_requests_per_s is a
// whole number: one a minute read as 1/s). The real sink against a scripted server on
// 127.0.0.1; one chunk, so nothing waits.
#include <doctest/doctest.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "fwdsink/forward_sink.h"
#include "fwdsink/telemetry.h"
#include "support/it_support.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;

// A forward.pacing event, and its JSON line made while the event's views were valid
// (an Event views into its sink: it is read in the callback, not after).
struct Seen {
  fwdsink::Event event;
  std::string json;
};

// The forward.pacing events of one single-chunk partition answered 200 with `headers`.
std::vector<Seen> PacingEvents(const std::string& tag, httplib::Headers headers) {
  fwdsink_test::ScriptedServer server;
  server.Then(200, std::move(headers));
  const fs::path dir = fs::path(FWDSINK_TEST_TMP) / ("pacing_event_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  (void)fwdsink::test::WriteRows(dir / "p.ndjson", 3);
  fwdsink::ForwardOptions o;
  o.url = server.url();
  o.compression = fwdsink::Compression::kIdentity;
  std::mutex mu;
  std::vector<Seen> events;
  fwdsink::ForwardDeps deps;
  deps.on_event = [&](const fwdsink::Event& e) {
    std::lock_guard lock(mu);
    if (e.name == fwdsink::events::kForwardPacing) events.push_back({e, fwdsink::ToJson(e)});
  };
  auto sink = fwdsink::ForwardSink::Create(std::move(o), std::move(deps));
  REQUIRE(sink.ok());
  const auto r = (*sink)->ForwardPartition("p", dir / "p.ndjson", 0,
                                           [](const fwdsink::AckedChunk&) { return true; });
  CHECK(r.outcome == fwdsink::Outcome::kDelivered);
  std::lock_guard lock(mu);
  return events;
}

}  // namespace

TEST_CASE("ForwardPacingReportsOneRequestAMinuteAsSuch") {
  const auto events = PacingEvents(
      "minute",
      {{"X-RateLimit-Limit", "5000"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "60"}});
  REQUIRE(events.size() == 1);
  CHECK(events.front().event.reason == "advertised");
  CHECK(events.front().event.request_interval_ms == 60000);
  CHECK(events.front().event.rate_requests_per_s == 1);  // rounded up, as before
  const std::string& json = events.front().json;
  CHECK(json.find("\"request_interval_ms\":60000") != std::string::npos);
}

// Twin: Reset: 0 is one request a second, and says so.
TEST_CASE("ForwardPacingReportsOneRequestASecondForResetZero") {
  const auto events = PacingEvents(
      "second",
      {{"X-RateLimit-Limit", "5000"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "0"}});
  REQUIRE(events.size() == 1);
  CHECK(events.front().event.request_interval_ms == 1000);
  CHECK(events.front().event.rate_requests_per_s == 1);
}
