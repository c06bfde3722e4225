// SPDX-License-Identifier: Apache-2.0
// Where the request limit starts, through the real driver on real sockets against the
// scripted server (small real round trips): a fresh endpoint at the initial window, a
// partition's window opened that far at once; a partition after a stable one at the
// stable limit, also in a second driver made for the same endpoints; a refusal still
// halves. @ref LLP 0018#start
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fwdsink/driver.h"
#include "fwdsink/endpoints.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;

namespace {

constexpr std::size_t kLine = 64;  // one row per chunk of kLine bytes

// Writes partition `name` of `chunks` rows of exactly kLine bytes into spool/ready.
void AddPartition(const std::filesystem::path& spool, const std::string& name, int chunks) {
  std::filesystem::create_directories(spool / "ready");
  std::string text;
  for (int i = 0; i < chunks; ++i) {
    std::string row = "{\"p\":\"" + name + "\",\"i\":" + std::to_string(i) + ",\"x\":\"";
    row.append(kLine - row.size() - 3, 'x');
    row += "\"}\n";
    REQUIRE(row.size() == kLine);
    text += row;
  }
  REQUIRE(fwdsink::test::WriteFile(spool / "ready" / (name + ".ndjson"), text));
}

fwdsink::DriverOptions Options(const std::filesystem::path& spool, const std::string& url,
                               fwdsink::ConcurrencyPolicy concurrency) {
  fwdsink::DriverOptions o;
  o.spool_dir = spool;
  o.forward.url = url;
  o.forward.compression = fwdsink::Compression::kIdentity;
  o.forward.chunker.chunk_bytes = kLine;
  o.forward.backpressure.ladder = {10ms};
  o.forward.backpressure.jitter = 0;
  o.forward.window = 16;
  o.concurrency = concurrency;
  return o;
}

struct Events {
  std::mutex mu;
  std::vector<fwdsink::Event> seen;  // guarded by mu
  void operator()(const fwdsink::Event& e) {
    std::lock_guard lock(mu);
    seen.push_back(e);
  }
  std::vector<fwdsink::Event> Named(std::string_view name) {
    std::lock_guard lock(mu);
    std::vector<fwdsink::Event> out;
    std::copy_if(seen.begin(), seen.end(), std::back_inserter(out),
                 [&](const fwdsink::Event& e) { return e.name == name; });
    return out;
  }
};

std::unique_ptr<fwdsink::Driver> Make(const fwdsink::DriverOptions& o, fwdsink::ForwardDeps deps) {
  auto created = fwdsink::Driver::Create(o, std::move(deps));
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  return std::move(created).value();
}

}  // namespace

TEST_CASE("AFreshEndpointStartsAtTheInitialWindowAndOpensAPartitionsWindowAtOnce") {
  fwdsink_test::ScriptedServer server;
  for (int i = 0; i < 16; ++i) server.Then({.delay = 300ms});
  const auto spool = fwdsink::test::FreshDir("integration_concurrency_start", "fresh");
  AddPartition(spool, "p", 4);  // four chunks: as many as the initial window
  auto driver = Make(Options(spool, server.url(), {}), {});
  CHECK(driver->counters().concurrency_limit == 4);
  const auto report = driver->Tick();
  CHECK(report.delivered == 1);
  // All four at once: no ramp from 1 (the server held each for 300 ms).
  CHECK(server.max_in_flight() == 4);
  SUBCASE("twin: from 1 the window opens one request at a time") {
    fwdsink_test::ScriptedServer slow;
    for (int i = 0; i < 16; ++i) slow.Then({.delay = 300ms});
    const auto one = fwdsink::test::FreshDir("integration_concurrency_start", "from_one");
    AddPartition(one, "p", 4);
    auto from_one = Make(Options(one, slow.url(), {.initial = 1}), {});
    CHECK(from_one->counters().concurrency_limit == 1);
    CHECK(from_one->Tick().delivered == 1);
    CHECK(slow.max_in_flight() < 4);
  }
}

TEST_CASE("AFreshEndpointsInitialWindowStillHalvesOnARefusal") {
  fwdsink_test::ScriptedServer server;
  server.Then({.status = 429, .delay = 100ms});
  for (int i = 0; i < 16; ++i) server.Then({.delay = 100ms});
  const auto spool = fwdsink::test::FreshDir("integration_concurrency_start", "refused");
  AddPartition(spool, "p", 4);
  auto events = std::make_shared<Events>();
  fwdsink::ForwardDeps deps;
  deps.on_event = [events](const fwdsink::Event& e) { (*events)(e); };
  auto driver = Make(Options(spool, server.url(), {}), deps);
  CHECK(driver->Tick().delivered == 1);
  const auto changes = events->Named(fwdsink::events::kDriverConcurrency);
  REQUIRE_FALSE(changes.empty());
  CHECK(changes.front().reason == "backpressure");
  CHECK(changes.front().begin == 4);
  CHECK(changes.front().end == 2);
  CHECK(driver->counters().concurrency_decreases >= 1);
}

TEST_CASE("ASecondPartitionAfterAStableFirstOneStartsAtTheStableLimit") {
  fwdsink_test::ScriptedServer server;
  for (int i = 0; i < 400; ++i) server.Then({.delay = 40ms});
  // From 2 up to a ceiling of 6 (2, 4, 6), and no fall for a round trip that a loaded
  // machine stretches: only the start is under test here.
  const fwdsink::ConcurrencyPolicy policy{.max = 6, .initial = 2, .rtt_tolerance = 100};
  const auto spool = fwdsink::test::FreshDir("integration_concurrency_start", "stable_a");
  AddPartition(spool, "a", 60);
  const fwdsink::DriverOptions options = Options(spool, server.url(), policy);
  fwdsink::ForwardDeps deps;
  deps.endpoints = fwdsink::Endpoints::Make(options.forward, deps);  // shared by both drivers
  auto driver = Make(options, deps);
  CHECK(driver->counters().concurrency_limit == 2);
  CHECK(driver->Tick().delivered == 1);
  REQUIRE(driver->counters().concurrency_limit == 6);
  CHECK(deps.endpoints->at(0).stable_limit->load() == 6);  // it held a whole window
  SUBCASE("the next partition in the same driver") {
    AddPartition(spool, "b", 6);
    server.ResetMaxInFlight();
    CHECK(driver->Tick().delivered == 1);
    CHECK(server.max_in_flight() == 6);  // all six at once
  }
  SUBCASE("a second driver made for the same endpoints") {
    driver.reset();  // its connections go: the server's workers are free
    const auto other = fwdsink::test::FreshDir("integration_concurrency_start", "stable_b");
    AddPartition(other, "b", 6);
    auto second = Make(Options(other, server.url(), policy), deps);
    CHECK(second->counters().concurrency_limit == 6);
    server.ResetMaxInFlight();
    CHECK(second->Tick().delivered == 1);
    CHECK(server.max_in_flight() == 6);
    SUBCASE("twin: without the endpoints' memory it starts at the initial window") {
      const auto fresh = fwdsink::test::FreshDir("integration_concurrency_start", "stable_c");
      auto third = Make(Options(fresh, server.url(), policy), {});
      CHECK(third->counters().concurrency_limit == 2);
    }
  }
}
