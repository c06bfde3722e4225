// SPDX-License-Identifier: Apache-2.0
// Operations (LLP 0025): the Prometheus text writer, the latency histogram, the
// dead-letter caps (by age and by bytes, on the fake clock, and through a driver tick),
// SpoolWriter's max_ready_bytes with both when_full policies, and the spool's usage.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "fwdsink/dead_letters.h"
#include "fwdsink/driver.h"
#include "fwdsink/histogram.h"
#include "fwdsink/prometheus.h"
#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/spool_writer.h"
#include "support/fake_clock.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fwdsink::test::FreshDir;
using fwdsink::test::WriteFile;

namespace {

constexpr std::string_view kSuite = "ops_test";               // folder under FWDSINK_TEST_TMP
constexpr std::string_view kRows = "{\"n\":1}\n{\"n\":2}\n";  // 16 bytes
constexpr std::string_view kRow = "0123456789";               // 11 bytes with '\n'

// Writes dead letters one minute apart (the oldest first), each from its own partition;
// returns the spool.
fwdsink::Spool SpoolWithDead(const fs::path& dir, fwdsink::FakeClock& clock, int letters) {
  auto spool = fwdsink::Spool::Open(dir);
  REQUIRE(spool.ok());
  for (int i = 0; i < letters; ++i) {
    const std::string name =
        "20261130T0900" + std::to_string(10 + i) + ".000Z-7-0000000" + std::to_string(i);
    WriteFile(spool->PartitionPath(name), kRows);
    auto dead =
        spool->DeadLetterChunk(name, 0, kRows.size(), kRows, 400, "bad_row", clock.SystemNow());
    REQUIRE(dead.ok());
    clock.Advance(1min);
  }
  return std::move(spool).value();
}

std::vector<std::string> DeadNames(const fwdsink::Spool& spool, fwdsink::SystemTime now) {
  fwdsink::DeadFilter all;
  all.limit = 0;
  auto list = spool.ListDead(all, now);
  REQUIRE(list.ok());
  std::vector<std::string> names;
  for (const auto& e : list->entries) names.push_back(e.partition);
  return names;
}

}  // namespace

TEST_CASE("Prometheus text: escaping, values, names in base units") {
  CHECK(fwdsink::EscapeLabelValue("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CHECK(fwdsink::EscapeLabelValue("plain") == "plain");
  CHECK(fwdsink::FormatMetricValue(42) == "42");
  CHECK(fwdsink::FormatMetricValue(0.005) == "0.005");
  CHECK(fwdsink::FormatMetricValue(1.5) == "1.5");
  CHECK(fwdsink::FormatMetricValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(fwdsink::FormatMetricValue(std::numeric_limits<double>::quiet_NaN()) == "NaN");

  const fwdsink::CounterField wait{"wait_ms", fwdsink::CounterKind::kCounter, "h", 1500};
  const auto w = fwdsink::ExportedNameFor("fwdsink_sink_", wait);
  CHECK(w.name == "fwdsink_sink_wait_seconds_total");
  CHECK(w.scale == doctest::Approx(1e-3));
  const fwdsink::CounterField level{"overload_level", fwdsink::CounterKind::kGauge, "h", 2};
  CHECK(fwdsink::ExportedNameFor("fwdsink_driver_", level).name == "fwdsink_driver_overload_level");
  CHECK(fwdsink::ExportedNameFor("fwdsink_driver_", level).deprecated.empty());
  // No abbreviated unit: "_per_s" is spelled out, the old name kept as a deprecated twin.
  const fwdsink::CounterField rate{"pacing_bytes_per_s", fwdsink::CounterKind::kGauge, "h", 7};
  const auto r = fwdsink::ExportedNameFor("fwdsink_sink_", rate);
  CHECK(r.name == "fwdsink_sink_pacing_bytes_per_second");
  CHECK(r.deprecated == "fwdsink_sink_pacing_bytes_per_s");
  CHECK(r.scale == 1);

  SUBCASE("the endpoint label never carries credentials or the query") {
    CHECK(fwdsink::EndpointLabel("https://u:pw@host:8443/in?token=x#f") == "https://host:8443/in");
    CHECK(fwdsink::EndpointLabel("http://host/path") == "http://host/path");
    CHECK(fwdsink::EndpointLabel("http://host") == "http://host");
  }
  SUBCASE("a page: HELP and TYPE once per family, common labels first, ms as seconds") {
    fwdsink::PrometheusText page(fwdsink::MetricLabels{{"endpoint", "http://h/\"x\""}});
    fwdsink::CountersSnapshot s;
    s.wait_ms = 2500;
    s.chunks_acked = 7;
    s.bodies_withheld = 2;
    page.CounterList("fwdsink_sink_", s);
    page.Family("fwdsink_wait_remaining_seconds", "gauge", "left");
    page.Sample("fwdsink_wait_remaining_seconds", 3, {{"reason", "byte_rate"}});
    const std::string& t = page.text();
    CHECK(t.find("# TYPE fwdsink_sink_chunks_acked_total counter\n"
                 "fwdsink_sink_chunks_acked_total{endpoint=\"http://h/\\\"x\\\"\"} 7\n") !=
          std::string::npos);
    CHECK(t.find("fwdsink_sink_wait_seconds_total{endpoint=\"http://h/\\\"x\\\"\"} 2.5\n") !=
          std::string::npos);
    CHECK(t.find("fwdsink_wait_remaining_seconds{endpoint=\"http://h/\\\"x\\\"\",reason="
                 "\"byte_rate\"} 3\n") != std::string::npos);
    CHECK(t.find("# TYPE fwdsink_sink_bodies_withheld_total counter\n"
                 "fwdsink_sink_bodies_withheld_total{endpoint=\"http://h/\\\"x\\\"\"} 2\n") !=
          std::string::npos);
    CHECK(t.find("wait_ms") == std::string::npos);
  }
  SUBCASE("several endpoints: one family per counter, one sample per target") {
    fwdsink::PrometheusText page(fwdsink::MetricLabels{{"endpoint", "http://a/in"}});
    fwdsink::EndpointCountersSnapshot a, b;
    a.chunks_acked = 3;
    b.chunks_acked = 5;
    page.EndpointCounterLists("fwdsink_endpoint_",
                              {{"http://u:pw@a/in", a}, {"https://b:8443/in?k=v", b}});
    const std::string& t = page.text();
    CHECK(t.find("# TYPE fwdsink_endpoint_chunks_acked_total counter\n"
                 "fwdsink_endpoint_chunks_acked_total{endpoint=\"http://a/in\",target=\"http://"
                 "a/in\"} 3\n"
                 "fwdsink_endpoint_chunks_acked_total{endpoint=\"http://a/in\",target=\"https://"
                 "b:8443/in\"} 5\n") != std::string::npos);
    // Once per family, not once per endpoint.
    std::size_t types = 0;
    for (auto at = t.find("# TYPE fwdsink_endpoint_chunks_acked_total"); at != std::string::npos;
         at = t.find("# TYPE fwdsink_endpoint_chunks_acked_total", at + 1)) {
      ++types;
    }
    CHECK(types == 1);
    CHECK(t.find("pw") == std::string::npos);  // no credentials in a label
  }
}

TEST_CASE("LatencyHistogram counts cumulatively, +Inf holds everything") {
  fwdsink::LatencyHistogram h;
  h.Observe(3ms);    // <= 0.005
  h.Observe(5ms);    // == 0.005: "le" is inclusive
  h.Observe(200ms);  // <= 0.25
  h.Observe(60s);    // past the last bound: +Inf only
  h.Observe(-1ms);   // counted as 0
  const auto s = h.Snapshot();
  CHECK(s.cumulative[0] == 3);
  CHECK(s.cumulative[4] == 3);  // <= 0.1
  CHECK(s.cumulative[5] == 4);  // <= 0.25
  CHECK(s.cumulative.back() == 4);
  CHECK(s.count == 5);
  CHECK(s.sum_seconds == doctest::Approx(60.208));
}

TEST_CASE("EnforceDeadCaps purges the oldest dead letters first, by age and by bytes") {
  fwdsink::FakeClock clock;
  const fs::path dir = FreshDir(kSuite, "dead_caps");
  fwdsink::Spool spool = SpoolWithDead(dir, clock, 4);  // dead at t0, +1m, +2m, +3m; now +4m
  const auto names = DeadNames(spool, clock.SystemNow());
  REQUIRE(names.size() == 4);
  auto usage = fwdsink::MeasureSpool(dir);
  REQUIRE(usage.ok());
  const std::uint64_t per_letter = usage->dead_bytes / 4;
  CHECK(usage->dead_letters == 4);

  SUBCASE("by age: the letters dead at or before now - max_age go, oldest first") {
    // now = t0 + 4m (SpoolWithDead moved the clock): ages 4, 3, 2, 1 minutes
    auto purged = fwdsink::EnforceDeadCaps(spool, {.max_age = 150s}, clock.SystemNow());
    REQUIRE(purged.ok());
    REQUIRE(purged->size() == 2);
    CHECK((*purged)[0].entry.partition == names[0]);
    CHECK((*purged)[1].entry.partition == names[1]);
    CHECK((*purged)[0].cap == "max_dead_age");
    CHECK((*purged)[0].bytes == per_letter);
    CHECK(DeadNames(spool, clock.SystemNow()) == std::vector<std::string>{names[2], names[3]});
  }
  SUBCASE("twin: nothing old enough, nothing purged") {
    auto purged = fwdsink::EnforceDeadCaps(spool, {.max_age = 1h}, clock.SystemNow());
    REQUIRE(purged.ok());
    CHECK(purged->empty());
    CHECK(DeadNames(spool, clock.SystemNow()).size() == 4);
  }
  SUBCASE("by bytes: the oldest go until the rest fits") {
    auto purged =
        fwdsink::EnforceDeadCaps(spool, {.max_bytes = 2 * per_letter + 1}, clock.SystemNow());
    REQUIRE(purged.ok());
    REQUIRE(purged->size() == 2);
    CHECK((*purged)[0].cap == "max_dead_bytes");
    CHECK(DeadNames(spool, clock.SystemNow()) == std::vector<std::string>{names[2], names[3]});
    CHECK(fwdsink::MeasureSpool(dir)->dead_bytes == 2 * per_letter);
  }
  SUBCASE("twin: exactly at the byte cap, nothing purged") {
    auto purged = fwdsink::EnforceDeadCaps(spool, {.max_bytes = 4 * per_letter}, clock.SystemNow());
    REQUIRE(purged.ok());
    CHECK(purged->empty());
  }
  SUBCASE("no caps: nothing read, nothing purged") {
    auto purged = fwdsink::EnforceDeadCaps(spool, {}, clock.SystemNow());
    REQUIRE(purged.ok());
    CHECK(purged->empty());
    CHECK(DeadNames(spool, clock.SystemNow()).size() == 4);
  }
}

TEST_CASE("The driver enforces its dead caps each tick: an event and a counter per purge") {
  fwdsink::FakeClock clock;
  const fs::path dir = FreshDir(kSuite, "driver_caps");
  { (void)SpoolWithDead(dir, clock, 3); }
  std::vector<fwdsink::Event> events;
  fwdsink::DriverOptions o;
  o.spool_dir = dir;
  o.forward.url = "http://127.0.0.1:9/ingest";  // never contacted: ready/ is empty
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  deps.sleeper = &clock;
  deps.on_event = [&events](const fwdsink::Event& e) { events.push_back(e); };

  SUBCASE("over the age cap") {
    o.dead_caps.max_age = 90s;  // now = t0 + 3m: ages 3, 2, 1 minutes
    auto driver = fwdsink::Driver::Create(o, deps);
    REQUIRE(driver.ok());
    (void)(*driver)->Tick();
    CHECK((*driver)->counters().dead_purged.load() == 2);
    CHECK((*driver)->counters().dead_purged_bytes.load() > 0);
    std::size_t purge_events = 0;
    for (const auto& e : events) {
      if (e.name != fwdsink::events::kDriverDeadPurged) continue;
      ++purge_events;
      CHECK(e.reason == "max_dead_age");
      CHECK(e.end == kRows.size());
    }
    CHECK(purge_events == 2);
    CHECK(fwdsink::MeasureSpool(dir)->dead_letters == 1);
  }
  SUBCASE("twin: under the caps, nothing purged and no event") {
    o.dead_caps.max_age = 1h;
    o.dead_caps.max_bytes = 1ull << 30;
    auto driver = fwdsink::Driver::Create(o, deps);
    REQUIRE(driver.ok());
    (void)(*driver)->Tick();
    CHECK((*driver)->counters().dead_purged.load() == 0);
    for (const auto& e : events) CHECK(e.name != fwdsink::events::kDriverDeadPurged);
    CHECK(fwdsink::MeasureSpool(dir)->dead_letters == 3);
  }
}

namespace {

// A producer clock the writer's sleep moves, with a hook run on every sleep (the
// "forwarder" making room).
struct WriterClock {
  std::chrono::steady_clock::time_point now{std::chrono::seconds(1000)};
  std::chrono::system_clock::time_point wall{std::chrono::milliseconds(1'764'498'084'123)};
  std::vector<std::chrono::steady_clock::duration> sleeps;
  std::function<void()> on_sleep;
};

fwdsink::SpoolWriterOptions CappedOptions(WriterClock& c, std::uint64_t cap,
                                          fwdsink::SpoolWriterOptions::WhenFull policy,
                                          std::vector<fwdsink::Event>& events) {
  fwdsink::SpoolWriterOptions o;
  o.max_bytes = kRow.size() + 1;  // one row per partition
  o.now = [&c] { return c.now; };
  o.wall_now = [&c] { return c.wall += 1ms; };
  o.max_ready_bytes = cap;
  o.when_full = policy;
  o.block_timeout = 5s;
  o.full_poll = 1s;
  o.sleep = [&c](std::chrono::steady_clock::duration d) {
    c.sleeps.push_back(d);
    c.now += d;
    if (c.on_sleep) c.on_sleep();
  };
  o.on_event = [&events](const fwdsink::Event& e) { events.push_back(e); };
  return o;
}

}  // namespace

TEST_CASE("SpoolWriter max_ready_bytes, when_full = block") {
  using WhenFull = fwdsink::SpoolWriterOptions::WhenFull;
  const fs::path dir = FreshDir(kSuite, "block");
  WriterClock c;
  std::vector<fwdsink::Event> events;
  // Room for two 11-byte partitions.
  auto w = fwdsink::SpoolWriter::Open(dir, CappedOptions(c, 22, WhenFull::kBlock, events));
  REQUIRE(w.ok());
  REQUIRE(w->Append(kRow).ok());         // sealed #1 (max_bytes reached)
  REQUIRE(w->Append(kRow).ok());         // sealed #2
  CHECK(w->counters().full_waits == 0);  // twin: under the cap, no wait
  CHECK(c.sleeps.empty());
  REQUIRE(fwdsink::MeasureSpool(dir)->ready_partitions == 2);

  SUBCASE("the producer waits until the forwarder makes room") {
    int polls = 0;
    c.on_sleep = [&] {
      if (++polls == 3) {  // the forwarder delivers the oldest partition
        auto spool = fwdsink::Spool::Open(dir);
        REQUIRE(spool.ok());
        REQUIRE(spool->MarkDelivered(w->sealed().front()).ok());
      }
    };
    REQUIRE(w->Append(kRow).ok());
    CHECK(c.sleeps.size() == 3);
    CHECK(w->counters().full_waits == 1);
    CHECK(w->counters().full_timeouts == 0);
    CHECK(w->sealed().size() == 3);
    REQUIRE(events.size() == 1);
    CHECK(events[0].name == fwdsink::events::kWriterFull);
    CHECK(events[0].reason == "full");
  }
  SUBCASE("nothing moves: kBusy after block_timeout, the rows kept for a retry") {
    // The row is accepted (an error would mean it was not); the seal is retried by
    // the next call, which reports kBusy. @ref LLP 0023#writer-enospc
    REQUIRE(w->Append(kRow).ok());
    CHECK(c.sleeps.size() == 5);  // 5 s of 1 s polls
    CHECK(w->counters().full_timeouts == 1);
    CHECK(w->sealed().size() == 2);
    REQUIRE(events.size() == 2);
    CHECK(events[1].reason == "timeout");
    // Room appears: the kept partition is sealed on the next call, its row intact.
    auto spool = fwdsink::Spool::Open(dir);
    REQUIRE(spool->MarkDelivered(w->sealed().front()).ok());
    auto sealed = w->Seal();
    REQUIRE(sealed.ok());
    REQUIRE(sealed->has_value());
    CHECK(fwdsink::test::ReadFile(spool->PartitionPath(**sealed)) == std::string(kRow) + "\n");
  }
}

TEST_CASE("SpoolWriter max_ready_bytes, when_full = drop_oldest") {
  using WhenFull = fwdsink::SpoolWriterOptions::WhenFull;
  const fs::path dir = FreshDir(kSuite, "drop");
  WriterClock c;
  std::vector<fwdsink::Event> events;
  auto w = fwdsink::SpoolWriter::Open(dir, CappedOptions(c, 22, WhenFull::kDropOldest, events));
  REQUIRE(w.ok());
  auto spool = fwdsink::Spool::Open(dir);
  REQUIRE(spool.ok());
  REQUIRE(w->Append(kRow).ok());
  REQUIRE(w->Append(kRow).ok());
  CHECK(w->counters().dropped_partitions == 0);  // twin: within the cap, nothing dropped
  CHECK(events.empty());
  // A cursor of the oldest partition goes with it.
  REQUIRE(spool->SaveCursor(w->sealed()[0], kRow.size() + 1).ok());

  REQUIRE(w->Append(kRow).ok());  // a third: the oldest goes
  CHECK(c.sleeps.empty());        // never waits
  CHECK(w->counters().dropped_partitions == 1);
  CHECK(w->counters().dropped_bytes == kRow.size() + 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].name == fwdsink::events::kWriterDropOldest);
  CHECK(events[0].partition == w->sealed()[0]);
  auto ready = spool->ListReady();
  REQUIRE(ready.ok());
  REQUIRE(ready->size() == 2);
  CHECK((*ready)[0].name == w->sealed()[1]);
  CHECK((*ready)[1].name == w->sealed()[2]);
  CHECK(spool->LoadCursor(w->sealed()[0]).status != fwdsink::CursorStatus::kOk);
}

TEST_CASE("MeasureSpool: backlog and dead letters; last_error round trip") {
  const fs::path dir = FreshDir(kSuite, "usage");
  CHECK(fwdsink::MeasureSpool(dir).status().code() == fwdsink::StatusCode::kNotFound);
  CHECK(fwdsink::CountReadyPartitions(dir) == 0);  // no ready/: nothing, no error
  auto spool = fwdsink::Spool::Open(dir);
  REQUIRE(spool.ok());
  WriteFile(spool->PartitionPath("20261130T090000.000Z-7-00000001"), kRows);
  WriteFile(spool->ready_dir() / ".tmp-not-sealed.ndjson", kRows);  // a dotfile: not counted
  auto u = fwdsink::MeasureSpool(dir);
  REQUIRE(u.ok());
  CHECK(u->ready_partitions == 1);
  CHECK(fwdsink::CountReadyPartitions(dir) == 1);  // the same filter: no dotfile
  CHECK(u->ready_bytes == kRows.size());
  CHECK(u->oldest_ready.has_value());
  CHECK(u->dead_letters == 0);

  CHECK(fwdsink::ReadLastError(dir)->has_value() == false);
  CHECK(fwdsink::IsRecordedError(fwdsink::events::kForwardAuthFailed));
  CHECK_FALSE(fwdsink::IsRecordedError(fwdsink::events::kForwardBackpressure));
  REQUIRE(fwdsink::WriteLastError(
              dir,
              {.name = fwdsink::events::kForwardAuthFailed, .status = 401, .reason = "bad_token"},
              std::chrono::system_clock::time_point(1'800'000'000s))
              .ok());
  auto last = fwdsink::ReadLastError(dir);
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK(**last ==
        "{\"ts\":\"2027-01-15T08:00:00.000Z\",\"event\":\"forward.auth_failed\",\"status\":401,"
        "\"reason\":\"bad_token\"}");
}
