// SPDX-License-Identifier: Apache-2.0
// Several partitions in flight through the real driver, on real sockets against the
// scripted server, with small real round trips (the adaptive limit measures them):
// every row once under its own partition's keys, the limit rises while requests are
// latency-bound and falls on 429s. @ref LLP 0018
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fwdsink/driver.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;

namespace {

constexpr int kPartitions = 8;
constexpr int kRows = 60;  // ~20 chunks of 64 bytes each
constexpr auto kServerRtt = 20ms;

void AddPartition(const std::filesystem::path& spool, const std::string& name) {
  std::filesystem::create_directories(spool / "ready");
  std::string text;
  for (int i = 0; i < kRows; ++i) {
    text += "{\"p\":\"" + name + "\",\"i\":" + std::to_string(i) + "}\n";
  }
  REQUIRE(fwdsink::test::WriteFile(spool / "ready" / (name + ".ndjson"), text));
}

struct Run {
  fwdsink_test::ScriptedServer server;
  std::filesystem::path spool;
  std::unique_ptr<fwdsink::Driver> driver;
  std::mutex mu;
  std::vector<fwdsink::Event> events;  // guarded by mu

  Run(std::string_view tag, fwdsink::ConcurrencyPolicy concurrency) {
    spool = fwdsink::test::FreshDir("integration_concurrency", tag);
    for (int p = 0; p < kPartitions; ++p) AddPartition(spool, "p" + std::to_string(p));
    fwdsink::DriverOptions o;
    o.spool_dir = spool;
    o.forward.url = server.url();
    o.forward.compression = fwdsink::Compression::kIdentity;
    o.forward.chunker.chunk_bytes = 64;
    o.forward.backpressure.ladder = {10ms};
    o.forward.backpressure.jitter = 0;
    o.forward.window =
        1;  // partitions side by side, each in order (windows: integration_window_test)
    o.concurrency = concurrency;
    fwdsink::ForwardDeps deps;
    deps.on_event = [this](const fwdsink::Event& e) {
      std::lock_guard lock(mu);
      events.push_back(e);
    };
    auto created = fwdsink::Driver::Create(o, deps);
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    driver = std::move(created).value();
  }
  std::vector<fwdsink::Event> Events(std::string_view name) {
    std::lock_guard lock(mu);
    std::vector<fwdsink::Event> out;
    for (const auto& e : events) {
      if (e.name == name) out.push_back(e);
    }
    return out;
  }
};

// Every partition's accepted keys, in the order the server accepted them, must tile
// the partition from 0 without a gap or an overlap: its own chunks, its own cursor.
void CheckKeysTile(const std::vector<fwdsink_test::Recorded>& reqs) {
  std::map<std::string, std::uint64_t> next;
  std::set<std::string> seen;
  for (const auto& r : reqs) {
    if (!seen.insert(r.key).second) continue;  // a retry in place: the same key again
    const auto colon = r.key.rfind(':');
    const auto dash = r.key.rfind('-');
    const std::string part = r.key.substr(0, colon);
    const std::uint64_t begin = std::stoull(r.key.substr(colon + 1, dash - colon - 1));
    CAPTURE(r.key);
    CHECK(begin == next[part]);
    next[part] = std::stoull(r.key.substr(dash + 1));
  }
  CHECK(next.size() == static_cast<std::size_t>(kPartitions));
}

}  // namespace

TEST_CASE("AdaptiveConcurrencyRisesWhileLatencyBoundAndDeliversEveryRowOnce") {
  Run run("rises", {.max = 4, .initial = 1});  // the ramp from 1 (LLP 0018#start: 4)
  for (int i = 0; i < kPartitions * 30; ++i) run.server.Then({.delay = kServerRtt});
  const auto report = run.driver->Tick();
  CHECK(report.delivered == kPartitions);
  CHECK(report.all_delivered());
  const auto reqs = run.server.requests();
  CheckKeysTile(reqs);
  // Every row arrived once (each body is whole lines, no request was refused).
  std::multiset<std::string> rows;
  for (const auto& r : reqs) {
    for (std::size_t at = 0, nl; (nl = r.body.find('\n', at)) != std::string::npos; at = nl + 1) {
      rows.insert(r.body.substr(at, nl - at));
    }
  }
  CHECK(rows.size() == static_cast<std::size_t>(kPartitions * kRows));
  CHECK(std::set<std::string>(rows.begin(), rows.end()).size() == rows.size());
  // The limit went up (latency-bound, nothing refused) and reached the ceiling.
  const auto& c = run.driver->counters();
  CHECK(c.concurrency_increases >= 2);  // slow start: 1, 2, 4
  const auto changes = run.Events(fwdsink::events::kDriverConcurrency);
  const auto reached = std::count_if(changes.begin(), changes.end(), [](const auto& e) {
    return e.reason == "latency_bound" && e.end == 4;
  });
  CHECK(reached >= 1);
  // A loaded machine (the sanitizer build beside other builds) can see the 20 ms round
  // trip rise past 1.5x its baseline and the limit fall for it; never for a refusal or
  // an error, which this server never gives. On a quiet machine: no fall at all.
  const auto rtt_falls = std::count_if(changes.begin(), changes.end(),
                                       [](const auto& e) { return e.reason == "rtt_rising"; });
  CHECK(reached + rtt_falls == static_cast<std::ptrdiff_t>(changes.size()));
  CHECK(c.concurrency_decreases == static_cast<std::uint64_t>(rtt_falls));
  // What holds however loaded the machine: every fall is said and a rise only when it
  // reaches the ceiling, so each event starts where the last one ended or above it,
  // the limit ends at or above the last event's value, and the first arrival at 4
  // took two rises (1, 2, 4), each later one at least one.
  REQUIRE_FALSE(changes.empty());
  for (std::size_t i = 0; i < changes.size(); ++i) {
    CAPTURE(i);
    const auto& e = changes[i];
    CHECK(e.begin != e.end);
    if (i > 0) CHECK(e.begin >= changes[i - 1].end);
  }
  CHECK(c.concurrency_limit >= changes.back().end);
  CHECK(c.concurrency_limit <= 4);
  CHECK(c.concurrency_increases >= static_cast<std::uint64_t>(reached) + 1);
  if (rtt_falls == 0) {  // a quiet machine: no fall at all, one event
    CHECK(c.concurrency_limit == 4);
    CHECK(changes.size() == 1);  // reaching 4
  } else {
    MESSAGE(rtt_falls << " fall(s) for a rising round trip on a loaded machine");
  }
  CHECK(run.driver->sink_counters().partitions_delivered == kPartitions);
}

TEST_CASE("AdaptiveConcurrencyFallsOn429AndSaysSo") {
  Run run("falls", {.max = 4});
  // Latency-bound long enough to reach the ceiling, then a burst of 429s.
  for (int i = 0; i < 60; ++i) run.server.Then({.delay = kServerRtt});
  for (int i = 0; i < 6; ++i) run.server.Then({.status = 429, .delay = kServerRtt});
  for (int i = 0; i < kPartitions * 30; ++i) run.server.Then({.delay = kServerRtt});
  const auto report = run.driver->Tick();
  CHECK(report.delivered == kPartitions);
  CheckKeysTile(run.server.requests());
  const auto& c = run.driver->counters();
  CHECK(c.concurrency_decreases >= 1);
  const auto said = run.Events(fwdsink::events::kDriverConcurrency);
  CHECK(std::any_of(said.begin(), said.end(),
                    [](const fwdsink::Event& e) { return e.reason == "backpressure"; }));
}

TEST_CASE("FixedConcurrencyNeverMoves") {
  // Twin: --concurrency 3 holds 3 through the same 429s.
  Run run("fixed", {.adaptive = false, .max = 3});
  for (int i = 0; i < 20; ++i) run.server.Then({.delay = kServerRtt});
  for (int i = 0; i < 6; ++i) run.server.Then({.status = 429, .delay = kServerRtt});
  const auto report = run.driver->Tick();
  CHECK(report.delivered == kPartitions);
  CheckKeysTile(run.server.requests());
  const auto& c = run.driver->counters();
  CHECK(c.concurrency_limit == 3);
  CHECK(c.concurrency_decreases == 0);
  CHECK(c.concurrency_increases == 0);
  CHECK(run.Events(fwdsink::events::kDriverConcurrency).empty());
}
