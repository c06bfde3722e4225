// SPDX-License-Identifier: Apache-2.0
// Telemetry: the one JSON writer (invalid UTF-8 replaced, valid UTF-8 untouched, fields
// in order) and the counters generated from their one list (snapshot, JSON, visitor).
#include "fwdsink/telemetry.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using fwdsink::CounterField;
using fwdsink::CounterKind;
using nlohmann::json;

// Bytes that are not UTF-8: a lone continuation byte, a truncated 3-byte sequence, and
// 0xFF (never valid).
constexpr const char* kInvalidReason = "bad\x80reason\xE2\x82 and \xFF";
// Valid UTF-8, multi-byte: must come out byte for byte (no \u escapes).
constexpr const char* kValidReason = "quota dépassée ✓ 限流";
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD, UTF-8 encoded

fwdsink::Event ServerEvent(std::string reason) {
  return {.name = fwdsink::events::kForwardBackpressure,
          .label = "main",
          .partition = "p-1.ndjson",
          .key = "p-1.ndjson:0-10",
          .status = 503,
          .reason = std::move(reason),
          .attempt = 2,
          .wait = std::chrono::milliseconds{1500},
          .wait_source = "retry_after",
          .retry_after = "2",
          .begin = 0,
          .end = 10};
}

// Parsed with ordered_json: plain json sorts its keys, and the order is under test.
std::vector<std::string> Keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  return keys;
}

}  // namespace

TEST_CASE("a server reason with invalid UTF-8 still yields one line of valid JSON") {
  const std::string line = fwdsink::ToJson(ServerEvent(kInvalidReason));
  CHECK(line.find('\n') == std::string::npos);
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  REQUIRE_FALSE(j.is_discarded());
  const std::string reason = j.at("reason").get<std::string>();
  CHECK(reason.find(kReplacement) != std::string::npos);
  CHECK(reason.starts_with("bad"));
  CHECK(reason.find("reason") != std::string::npos);
  CHECK(j.at("event") == "forward.backpressure");
}

TEST_CASE("twin: valid UTF-8 in a reason passes through unchanged") {
  const std::string line = fwdsink::ToJson(ServerEvent(kValidReason));
  // Byte for byte in the text, not \u-escaped, and no replacement character.
  CHECK(line.find(kValidReason) != std::string::npos);
  CHECK(line.find(kReplacement) == std::string::npos);
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j.at("reason") == kValidReason);
}

TEST_CASE("event JSON: fields in the documented order, absent ones left out") {
  const auto j = nlohmann::ordered_json::parse(fwdsink::ToJson(ServerEvent("throttled")));
  CHECK(Keys(j) == std::vector<std::string>{"event", "label", "partition", "key", "status",
                                            "reason", "attempt", "wait_ms", "wait_source",
                                            "retry_after", "begin", "end"});
  CHECK(j.at("wait_ms") == 1500);
  SUBCASE("a bare event has its name only") {
    const fwdsink::Event bare{.name = fwdsink::events::kForwardDelivered};
    CHECK(fwdsink::ToJson(bare) == R"({"event":"forward.delivered"})");
  }
  SUBCASE("control characters and quotes are escaped") {
    fwdsink::Event e{.name = fwdsink::events::kForwardError, .message = "a \"b\"\n\tc\x01"};
    CHECK(fwdsink::ToJson(e) == R"({"event":"forward.error","message":"a \"b\"\n\tc\u0001"})");
  }
}

TEST_CASE("JsonObject: insertion order, nesting, Append, copies independent") {
  fwdsink::JsonObject inner;
  inner.Add("n", std::uint64_t{18446744073709551615u}).Add("neg", -3).Add("ok", true);
  fwdsink::JsonObject line;
  line.Add("ts", "2024-01-01T00:00:00.000Z");
  fwdsink::JsonObject body;
  body.Add("event", "x").Add("inner", inner).Add("list", std::vector<std::string>{"a", "b"});
  line.Append(body);
  CHECK(line.Dump() == R"({"ts":"2024-01-01T00:00:00.000Z","event":"x",)"
                       R"("inner":{"n":18446744073709551615,"neg":-3,"ok":true},)"
                       R"("list":["a","b"]})");
  fwdsink::JsonObject copy = line;
  copy.Add("extra", 1);
  CHECK(line.Dump().find("extra") == std::string::npos);
  fwdsink::JsonObject moved = std::move(copy);
  CHECK(moved.Dump().find("extra") != std::string::npos);
  copy = line;  // a moved-from object can be assigned to again
  CHECK(copy.Dump() == line.Dump());
}

TEST_CASE("sink counters: one list feeds the struct, the snapshot, the JSON and the visitor") {
  fwdsink::Counters c;
  c.chunks_sent.store(3);
  c.wire_bytes_sent.store(77);
  c.partitions_delivered.store(9);
  const fwdsink::CountersSnapshot s = fwdsink::Snapshot(c);
  CHECK(s.chunks_sent == 3);
  CHECK(s.wire_bytes_sent == 77);
  CHECK(s.partitions_delivered == 9);
  CHECK(s.rows_acked == 0);

  std::vector<std::string> names;
  std::set<std::string> unique;
  std::uint64_t sum = 0;
  fwdsink::ForEachCounter(s, [&](const CounterField& f) {
    names.emplace_back(f.name);
    unique.emplace(f.name);
    sum += f.value;
    // The pacing rate and its source, the endpoint in use, the last ack's time and
    // whether Expect is off after a 417 are the sink's only gauges.
    const bool gauge = std::string_view(f.name).starts_with("pacing_") ||
                       f.name == "endpoint_in_use" || f.name == "last_ack_time_ms" ||
                       f.name == "expect_off";
    CHECK(f.kind == (gauge ? CounterKind::kGauge : CounterKind::kCounter));
    CHECK_FALSE(f.help.empty());
  });
  // packs_sent and partitions_packed since issue 23; six transport_errors_<phase>,
  // expect_refusals and expect_off since issue 37 (@ref LLP 0014#transport-phases);
  // expect_sent, expect_timeouts and expect_ignored since issue 39
  // (@ref LLP 0017#expect-when); spaced_starts and spaced_wait_ms since issue 39's
  // spacing (@ref LLP 0014#stagger)
  CHECK(names.size() == 52);
  CHECK(unique.contains("bodies_withheld"));  // @ref LLP 0017#expect-continue
  CHECK(unique.size() == names.size());
  CHECK(names.front() == "chunks_sent");
  CHECK(names.back() == "last_ack_time_ms");
  CHECK(sum == 3 + 77 + 9);

  // The JSON has exactly the visitor's names, in the same order, with the values.
  const auto j = nlohmann::ordered_json::parse(fwdsink::ToJson(s));
  CHECK(Keys(j) == names);
  CHECK(j.at("wire_bytes_sent") == 77);
}

TEST_CASE(
    "driver counters: overload_level, concurrency_limit, senders_busy and requests_in_flight are "
    "gauges") {
  fwdsink::DriverCounters c;
  c.ticks.store(4);
  c.overload_level.store(2);
  const fwdsink::DriverCountersSnapshot s = fwdsink::Snapshot(c);
  std::vector<std::string> gauges, counters;
  fwdsink::ForEachCounter(s, [&](const CounterField& f) {
    (f.kind == CounterKind::kGauge ? gauges : counters).emplace_back(f.name);
  });
  CHECK(gauges == std::vector<std::string>{"overload_level", "concurrency_limit", "senders_busy",
                                           "requests_in_flight"});
  CHECK(counters == std::vector<std::string>{
                        "ticks", "partitions_delivered", "respools", "poisoned_chunks",
                        "horizon_give_ups", "torn_partitions", "cursor_corrupt", "spool_errors",
                        "permanent_errors", "cursor_save_failures", "auth_failures", "config_stops",
                        "quarantined", "spool_repairs", "handover_changed", "concurrency_increases",
                        "concurrency_decreases", "dead_purged", "dead_purged_bytes"});
  CHECK(fwdsink::to_string(CounterKind::kGauge) == "gauge");
  CHECK(fwdsink::to_string(CounterKind::kCounter) == "counter");
  CHECK(
      fwdsink::ToJson(s) ==
      R"({"ticks":4,"partitions_delivered":0,"respools":0,"poisoned_chunks":0,)"
      R"("horizon_give_ups":0,"torn_partitions":0,"cursor_corrupt":0,"spool_errors":0,)"
      R"("permanent_errors":0,"cursor_save_failures":0,"auth_failures":0,"config_stops":0,)"
      R"("quarantined":0,"spool_repairs":0,)"
      R"("handover_changed":0,"overload_level":2,"concurrency_limit":0,"senders_busy":0,)"
      R"("requests_in_flight":0,"concurrency_increases":0,"concurrency_decreases":0,"dead_purged":0,)"
      R"("dead_purged_bytes":0})");
}
