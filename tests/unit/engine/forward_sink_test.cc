// SPDX-License-Identifier: Apache-2.0
// ForwardSink decisions over real sockets (an in-process scripted server on
// 127.0.0.1) with the fake clock doing every wait: no test here sleeps for timing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fwdsink/codec.h"
#include "fwdsink/forward_sink.h"
#include "io/zstd_decode.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;
using fwdsink::Outcome;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;
using fwdsink_test::Reply;
using fwdsink_test::ScriptedServer;
using std::chrono::milliseconds;

namespace doctest {
template <>
struct StringMaker<std::vector<milliseconds>> {
  static String convert(const std::vector<milliseconds>& v) {
    std::string out = "{";
    for (const auto& d : v) out += std::to_string(d.count()) + "ms ";
    return (out + "}").c_str();
  }
};
}  // namespace doctest

namespace {

constexpr std::string_view kSuite = "forward_sink";  // folder under FWDSINK_TEST_TMP
constexpr std::size_t kChunkBytes = 64;              // a few ~20-byte rows per chunk
const char* kPartition = "p1";

// Writes `rows` rows of the form {"i":N,"pad":"xxxxxxxx"} and returns the path.
std::filesystem::path WritePartition(const std::string& name, int rows) {
  const auto path = FreshDir(kSuite, name) / "p1.ndjson";
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < rows; ++i) out << "{\"i\":" << i << ",\"pad\":\"xxxxxxxx\"}\n";
  return path;
}

struct Harness {
  fwdsink::FakeClock clock;
  std::vector<fwdsink::Event> events;
  std::vector<fwdsink::AckedChunk> acks;
  std::unique_ptr<fwdsink::ForwardSink> sink;

  explicit Harness(const std::string& url, fwdsink::ForwardOptions o = {},
                   fwdsink::TokenProvider tokens = {},
                   std::shared_ptr<fwdsink::EndpointGate> gate = {},
                   std::shared_ptr<fwdsink::EndpointPacer> pacer = {}) {
    o.url = url;
    o.compression = fwdsink::Compression::kIdentity;
    o.chunker.chunk_bytes = kChunkBytes;
    o.transport.read_timeout = 5s;
    // These tests check exact waits: jitter off (it is on by default, LLP 0016#jitter).
    o.backpressure.jitter = 0;
    // And one chunk's attempts against a script the server consumes in arrival order:
    // one chunk in flight (several are integration_window_test's, LLP 0014#window).
    o.window = 1;
    fwdsink::ForwardDeps deps;
    deps.time = &clock;
    deps.sleeper = &clock;
    deps.tokens = std::move(tokens);
    deps.gate = std::move(gate);
    deps.pacer = std::move(pacer);
    deps.on_event = [this](const fwdsink::Event& e) { events.push_back(e); };
    auto created = fwdsink::ForwardSink::Create(std::move(o), std::move(deps));
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    sink = std::move(created).value();
  }

  fwdsink::ForwardResult Forward(const std::filesystem::path& path, std::uint64_t begin = 0) {
    return sink->ForwardPartition(kPartition, path, begin, [this](const fwdsink::AckedChunk& a) {
      acks.push_back({.partition = {},
                      .begin = a.begin,
                      .end = a.end,
                      .rows = a.rows,
                      .duplicate = a.duplicate});
      return true;
    });
  }

  std::vector<fwdsink::Event> Named(std::string_view name) const {
    std::vector<fwdsink::Event> out;
    for (const auto& e : events) {
      if (e.name == name) out.push_back(e);
    }
    return out;
  }
};

httplib::Headers RetryAfter(const std::string& v) { return {{"Retry-After", v}}; }

}  // namespace

TEST_CASE("DeliversEveryChunkInOrderWithTheWireProtocol") {
  ScriptedServer server;
  const auto path = WritePartition("deliver", 10);
  Harness h(server.url());
  const auto r = h.Forward(path);
  CHECK(r.outcome == Outcome::kDelivered);
  CHECK(r.resume_offset == std::filesystem::file_size(path));
  CHECK(r.rows_acked == 10);

  const auto reqs = server.requests();
  REQUIRE(reqs.size() >= 3);
  std::string all;
  std::uint64_t pos = 0;
  for (const auto& q : reqs) {
    CHECK(q.content_type == "application/x-ndjson");
    CHECK(q.encoding.empty());  // no Content-Encoding without compression (issue 10)
    CHECK(q.user_agent.rfind("fwdsink/", 0) == 0);
    CHECK(q.key == "p1:" + std::to_string(pos) + "-" + std::to_string(pos + q.body.size()));
    CHECK(q.body.size() <= kChunkBytes);
    pos += q.body.size();
    all += q.body;
  }
  CHECK(all == ReadFile(path));
  CHECK(h.acks.size() == reqs.size());
  CHECK(h.clock.sleeps().empty());  // twin of every wait test: no 429, no wait
}

TEST_CASE("PositiveRetryAfterIsHonouredAndTheSameChunkIsResentInPlace") {
  ScriptedServer server;
  server.Then(200);
  server.Then(429, RetryAfter("5"), R"({"error":"rate limited","details":{"reason":"byte_rate"}})");
  const auto path = WritePartition("retry_after", 10);
  Harness h(server.url());
  const auto r = h.Forward(path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  CHECK(h.clock.sleeps() == std::vector<milliseconds>{5s});  // 5 s, not the 30 s rung

  const auto reqs = server.requests();
  REQUIRE(reqs.size() >= 3);
  CHECK(reqs[1].key == reqs[2].key);    // identical key
  CHECK(reqs[1].body == reqs[2].body);  // identical bytes
  CHECK(reqs[0].key != reqs[1].key);
  CHECK(h.acks[0].end == reqs[0].body.size());  // cursor did not move on the 429

  const auto bp = h.Named("forward.backpressure");
  REQUIRE(bp.size() == 1);
  CHECK(bp[0].status == 429);
  CHECK(bp[0].reason == "byte_rate");
  CHECK(bp[0].attempt == 1);
  CHECK(bp[0].wait == 5s);
  CHECK(bp[0].wait_source == "retry_after");
  CHECK(bp[0].retry_after == "5");
  CHECK(bp[0].key == reqs[1].key);
  CHECK(bp[0].partition == kPartition);
  CHECK(bp[0].label == "fwdsink");
  CHECK(h.sink->counters().status_429 == 1);
  CHECK(h.sink->counters().waits == 1);
}

TEST_CASE("WithoutRetryAfterTheLadderIsWalkedAndCapped") {
  ScriptedServer server;
  for (int i = 0; i < 6; ++i) server.Then(429);
  const auto path = WritePartition("ladder", 2);
  fwdsink::ForwardOptions o;
  o.backpressure.inline_budget = 1h;
  Harness h(server.url(), o);
  const auto r = h.Forward(path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  const std::vector<milliseconds> ladder{30s, 60s, 120s, 300s, 300s, 300s};
  CHECK(h.clock.sleeps() == ladder);
  // The whole partition is one 50-byte chunk: every attempt re-sent it in place.
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 7);
  for (const auto& q : reqs) {
    CHECK(q.key == "p1:0-50");
    CHECK(q.body == ReadFile(path));
  }
  CHECK(h.acks.size() == 1);
  // One event per wait, in order, each naming the chunk and the rung it took.
  const auto bp = h.Named("forward.backpressure");
  REQUIRE(bp.size() == 6);
  for (std::size_t i = 0; i < bp.size(); ++i) {
    CAPTURE(i);
    CHECK(bp[i].attempt == i + 1);
    CHECK(bp[i].wait == ladder[i]);
    CHECK(bp[i].key == "p1:0-50");
    CHECK(bp[i].wait_source == "ladder");
    CHECK(bp[i].reason == "http_429");  // no JSON body: the status stands in for the reason
  }
}

TEST_CASE("UnusableRetryAfterWalksTheLadderAndNeverSpins") {
  for (const char* raw : {"0", "-1", "1.5", "garbage", "Sun, 06 Nov 1994 08:49:37 GMT"}) {
    CAPTURE(raw);
    ScriptedServer server;
    server.Then(503, RetryAfter(raw));
    server.Then(503, RetryAfter(raw));
    const auto path = WritePartition("zero", 1);
    Harness h(server.url());
    REQUIRE(h.Forward(path).outcome == Outcome::kDelivered);
    CHECK(h.clock.sleeps() == std::vector<milliseconds>{30s, 60s});
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 3);  // counted: no hot loop
    for (const auto& q : reqs) {
      CHECK(q.key == "p1:0-25");  // the one row, re-sent in place
      CHECK(q.body == ReadFile(path));
    }
    const auto bp = h.Named("forward.backpressure");
    REQUIRE(bp.size() == 2);
    CHECK(bp[0].wait_source == "ladder");
    CHECK(bp[1].wait_source == "ladder");
    CHECK(bp[0].retry_after == raw);  // the unusable value is reported as it came
    CHECK(h.sink->counters().status_503 == 2);
  }
}

TEST_CASE("BudgetExhaustionRespoolsAtTheLastAcknowledgedChunk") {
  ScriptedServer server;
  server.Then(200);
  server.Then(200);
  for (int i = 0; i < 20; ++i) server.Then(429, RetryAfter("100"));
  const auto path = WritePartition("budget", 20);
  Harness h(server.url());  // budget 300 s: waits 100, 100, 100 fit; the 4th does not
  const auto r = h.Forward(path);
  CHECK(r.outcome == Outcome::kRespooled);
  CHECK(r.respool_reason == fwdsink::RespoolReason::kBudgetExhausted);
  CHECK(r.reason == "http_429");
  REQUIRE(h.acks.size() == 2);
  CHECK(r.resume_offset == h.acks[1].end);
  CHECK(h.clock.sleeps() == std::vector<milliseconds>{100s, 100s, 100s});
  CHECK(server.requests().size() == 2 + 4);
  CHECK(h.Named("forward.give_up").size() == 1);
  CHECK(h.sink->counters().budget_exhausted == 1);

  SUBCASE("the next tick resumes at the cursor, never at row 0") {
    ScriptedServer fresh;
    Harness again(fresh.url());
    const auto r2 = again.Forward(path, r.resume_offset);
    CHECK(r2.outcome == Outcome::kDelivered);
    const auto reqs = fresh.requests();
    REQUIRE_FALSE(reqs.empty());
    CHECK(reqs[0].key.rfind("p1:" + std::to_string(r.resume_offset) + "-", 0) == 0);
    // The first re-sent chunk is the one that was throttled: same key as before.
    CHECK(reqs[0].key == server.requests()[2].key);
  }
}

TEST_CASE("AuthRefreshOnceThenAuthError") {
  int calls = 0;
  std::vector<bool> forced;
  auto tokens = [&](bool force) -> std::optional<std::string> {
    forced.push_back(force);
    return "t" + std::to_string(++calls);
  };
  SUBCASE("one 401 refreshes the token and re-sends") {
    ScriptedServer server;
    server.Then(401, {}, R"({"details":{"reason":"token_expired"}})");
    const auto path = WritePartition("auth1", 1);
    Harness h(server.url(), {}, tokens);
    CHECK(h.Forward(path).outcome == Outcome::kDelivered);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[0].authorization == "Bearer t1");
    CHECK(reqs[1].authorization == "Bearer t2");
    CHECK(forced == std::vector<bool>{false, true});
    CHECK(h.clock.sleeps().empty());
    CHECK(h.Named("forward.auth_refresh").size() == 1);
  }
  SUBCASE("a second 401 is an auth error") {
    ScriptedServer server;
    server.Then(401);
    server.Then(401, {}, R"({"details":{"reason":"bad_token"}})");
    const auto path = WritePartition("auth2", 1);
    Harness h(server.url(), {}, tokens);
    const auto r = h.Forward(path);
    CHECK(r.outcome == Outcome::kAuthError);
    CHECK(r.reason == "bad_token");
    CHECK(r.resume_offset == 0);
    CHECK(server.requests().size() == 2);
  }
}

TEST_CASE("TooLargeSplitsAtALineBoundaryAndASingleRowIsPoisoned") {
  ScriptedServer server;
  server.Then(413);  // the whole first chunk
  const auto path = WritePartition("split", 6);
  Harness h(server.url());
  const auto r = h.Forward(path);
  CHECK(r.outcome == Outcome::kDelivered);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() >= 3);
  // The two halves cover exactly the refused chunk, in order.
  CHECK(reqs[1].body + reqs[2].body == reqs[0].body);
  CHECK(h.sink->counters().splits == 1);
  std::string all;
  for (std::size_t i = 1; i < reqs.size(); ++i) all += reqs[i].body;
  CHECK(all == ReadFile(path));

  SUBCASE("a single row that still gets 413 is poisoned, with its range") {
    ScriptedServer s2;
    s2.Then(413, {}, R"({"details":{"reason":"max_body"}})");
    const auto one = WritePartition("split1", 1);
    Harness h2(s2.url());
    const auto r2 = h2.Forward(one);
    CHECK(r2.outcome == Outcome::kPoisoned);
    CHECK(r2.poison_begin == 0);
    CHECK(r2.poison_end == std::filesystem::file_size(one));
    CHECK(r2.reason == "max_body");
    CHECK(r2.resume_offset == 0);
  }
}

TEST_CASE("MalformedRowIsIsolatedByBisectionAndPoisonedAlone") {
  ScriptedServer server;
  // First chunk has 3 rows; the server refuses it, then refuses the half with the bad row.
  server.Then(400, {}, R"({"error":"malformed row","details":{"reason":"bad_row","line":2}})");
  server.Then(200);                                                      // first half (1 row)
  server.Then(400, {}, R"({"details":{"reason":"bad_row","line":1}})");  // second half (2 rows)
  server.Then(400, {}, R"({"details":{"reason":"bad_row","line":1}})");  // its first row
  const auto path = WritePartition("poison", 6);
  Harness h(server.url());
  const auto r = h.Forward(path);
  REQUIRE(r.outcome == Outcome::kPoisoned);
  CHECK(r.status == 400);
  CHECK(r.reason == "bad_row");
  CHECK(r.poison_rows == 1);
  // 25-byte rows: the first half (row 0) was accepted, the bad row is row 1, [25, 50).
  CHECK(r.poison_begin == 25);
  CHECK(r.poison_end == 50);
  CHECK(r.resume_offset == 25);
  REQUIRE(h.acks.size() == 1);
  CHECK(h.acks[0].end == 25);
  const auto poison = h.Named("forward.poison");
  REQUIRE(poison.size() == 1);
  CHECK(poison[0].begin == 25);
  CHECK(poison[0].end == 50);
  SUBCASE("the rest of the partition goes on after the poisoned row") {
    ScriptedServer rest;
    Harness again(rest.url());
    const auto r2 = again.Forward(path, r.poison_end);
    CHECK(r2.outcome == Outcome::kDelivered);
    const auto reqs = rest.requests();
    REQUIRE_FALSE(reqs.empty());
    CHECK(reqs[0].key.rfind("p1:50-", 0) == 0);
    std::string sent;
    for (const auto& q : reqs) sent += q.body;
    CHECK(sent == ReadFile(path).substr(50));  // every later row, the bad one not again
  }
}

TEST_CASE("APoisonCallbackTakesTheRowsAndThePartitionGoesOnInTheSameCall") {
  ScriptedServer server;
  server.Then(400, {}, R"({"details":{"reason":"bad_row"}})");  // chunk 1 (3 rows)
  server.Then(200);                                             // its first row
  server.Then(400, {}, R"({"details":{"reason":"bad_row"}})");  // the other two
  server.Then(400, {}, R"({"details":{"reason":"bad_row"}})");  // the bad row
  const auto path = WritePartition("poison_callback", 6);
  const std::string file = ReadFile(path);
  Harness h(server.url());
  std::vector<std::string> dead;   // what the callback was handed
  std::vector<std::string> order;  // callbacks, in the order they came
  bool take = true;
  const auto forward = [&] {
    return h.sink->ForwardPartition(
        kPartition, path, 0,
        [&](const fwdsink::AckedChunk& a) {
          order.push_back((a.dead_lettered ? "dead-ack " : "ack ") + std::to_string(a.end));
          return true;
        },
        [&](const fwdsink::PoisonedChunk& c) {
          CHECK(c.partition == kPartition);
          CHECK(c.status == 400);
          CHECK(c.reason == "bad_row");
          CHECK(c.rows == 1);
          CHECK(c.body == file.substr(c.begin, c.end - c.begin));  // the bytes, not re-read
          dead.emplace_back(c.body);
          order.push_back("poison " + std::to_string(c.end));
          return take;
        });
  };
  SUBCASE("taken: the call delivers the rest, the cursor moves past by the ack route") {
    const auto r = forward();
    CHECK(r.outcome == Outcome::kDelivered);
    CHECK(r.resume_offset == file.size());
    CHECK(r.poison_rows == 0);
    REQUIRE(dead.size() == 1);
    // The dead letter is handed over before the cursor moves past it.
    const auto poison_end = order[1].substr(std::string("poison ").size());
    CHECK(order[1].rfind("poison ", 0) == 0);
    CHECK(order[2] == "dead-ack " + poison_end);
    CHECK(r.rows_acked == 5);  // the poisoned row is not counted as acknowledged
    CHECK(h.sink->counters().poisoned_chunks == 1);
    CHECK(h.Named("forward.poison").size() == 1);
    CHECK(h.Named("forward.delivered").size() == 1);
  }
  SUBCASE("twin: refused by the callback, the call stops before the poisoned rows") {
    take = false;
    const auto r = forward();
    CHECK(r.outcome == Outcome::kPoisoned);
    CHECK(r.resume_offset == r.poison_begin);
    CHECK(dead.size() == 1);
    CHECK(order.size() == 2);  // the first row's ack, then the poison: no dead-ack
    CHECK(h.Named("forward.delivered").empty());
  }
}

TEST_CASE("TransportErrorsWalkTheLadderThenRespool") {
  // Nothing listens on this port once the server is stopped.
  int port = 0;
  {
    ScriptedServer s;
    port = s.port();
  }
  const auto path = WritePartition("down", 2);
  fwdsink::ForwardOptions o;
  o.backpressure = {.ladder = {1s, 2s}, .max_wait = 10s, .inline_budget = 5s};
  Harness h("http://127.0.0.1:" + std::to_string(port) + "/x", o);
  const auto r = h.Forward(path);
  CHECK(r.outcome == Outcome::kRespooled);
  CHECK(r.respool_reason == fwdsink::RespoolReason::kTransportError);
  CHECK(r.reason == "transport_connect");
  // t=0 fail, wait 1 -> t=1 fail, wait 2 -> t=3 fail, wait 2 (last rung repeats) -> t=5
  // lands exactly on the budget; t=5 fail: 5+2 > 5, give up.
  CHECK(h.clock.sleeps() == std::vector<milliseconds>{1s, 2s, 2s});
  CHECK(h.sink->counters().transport_errors == 4);
}

TEST_CASE("OtherServerErrorsUseTheLadderAndUnexpectedClientErrorsRespoolAtOnce") {
  SUBCASE("500 retries on the ladder") {
    ScriptedServer server;
    server.Then(500);
    const auto path = WritePartition("s500", 1);
    Harness h(server.url());
    CHECK(h.Forward(path).outcome == Outcome::kDelivered);
    CHECK(h.clock.sleeps() == std::vector<milliseconds>{30s});
  }
  SUBCASE("404 is not retried inline") {
    ScriptedServer server;
    server.Then(404);
    const auto path = WritePartition("s404", 1);
    Harness h(server.url());
    const auto r = h.Forward(path);
    CHECK(r.outcome == Outcome::kRespooled);
    CHECK(r.respool_reason == fwdsink::RespoolReason::kClientError);
    CHECK(h.clock.sleeps().empty());
    CHECK(server.requests().size() == 1);
  }
}

TEST_CASE("SharedGateHoldsEverySenderUntilTheRetryAfter") {
  ScriptedServer server;
  server.Then(429, RetryAfter("10"), R"({"details":{"reason":"byte_rate"}})");
  const auto path = WritePartition("gate", 1);
  auto gate = std::make_shared<fwdsink::EndpointGate>();
  Harness a(server.url(), {}, {}, gate);
  REQUIRE(a.Forward(path).outcome == Outcome::kDelivered);
  CHECK(gate->holds() == 1);

  SUBCASE("another sender on the same gate waits for the hold before its first request") {
    // Both fake clocks start at the same instant, so a's hold (a's start + 10 s) is
    // 10 s away on b's clock too.
    Harness b(server.url(), {}, {}, gate);
    const auto before = server.requests().size();
    REQUIRE(b.Forward(path).outcome == Outcome::kDelivered);
    CHECK(b.clock.sleeps() == std::vector<milliseconds>{10s});
    CHECK(server.requests().size() == before + 1);  // waited, then one request
    REQUIRE(b.Named("forward.gate_wait").size() == 1);
    CHECK(b.Named("forward.gate_wait")[0].reason == "byte_rate");
  }
  SUBCASE("twin: a sender with its own gate does not wait") {
    Harness c(server.url());
    REQUIRE(c.Forward(path).outcome == Outcome::kDelivered);
    CHECK(c.clock.sleeps().empty());
  }
}

// A quota advertising `rate` bytes/s with `burst`, `remaining` left.
httplib::Headers Quota(int rate, int burst, int remaining) {
  return {{"RateLimit-Policy", "\"b\";q=" + std::to_string(rate) +
                                   ";w=1;qu=\"content-bytes\";burst=" + std::to_string(burst)},
          {"RateLimit", "\"b\";r=" + std::to_string(remaining) + ";t=1"}};
}

TEST_CASE("ThePacerNeverShortensARetryAfterAndMayLengthenIt") {
  ScriptedServer server;
  const auto path = WritePartition("pacer_floor", 1);  // one 25-byte chunk
  SUBCASE("a quota with room to spare: exactly the Retry-After, no pacer wait") {
    auto h = Quota(1'000'000, 1'000'000, 1'000'000);
    h.emplace("Retry-After", "5");
    server.Then(429, h, R"({"details":{"reason":"byte_rate"}})");
    Harness run(server.url());
    REQUIRE(run.Forward(path).outcome == Outcome::kDelivered);
    CHECK(run.clock.sleeps() == std::vector<milliseconds>{5s});
    CHECK(run.sink->counters().pacer_waits == 0);
  }
  SUBCASE("a quota with nothing left at 1 B/s: Retry-After first, then the pacer") {
    auto h = Quota(1, 100, 0);
    h.emplace("Retry-After", "5");
    server.Then(429, h, R"({"details":{"reason":"byte_rate"}})");
    Harness run(server.url());
    REQUIRE(run.Forward(path).outcome == Outcome::kDelivered);
    const auto sleeps = run.clock.sleeps();
    REQUIRE(sleeps.size() == 2);
    CHECK(sleeps[0] == 5s);   // the server's wait, whole
    CHECK(sleeps[1] == 20s);  // then (100 - 0) B to refill, less the 5 s, less 25 B burst
    CHECK(run.sink->counters().pacer_waits == 1);
    REQUIRE(run.Named("forward.pace_wait").size() == 1);
    CHECK(run.Named("forward.pace_wait")[0].reason == "advertised");
  }
}

TEST_CASE("ASharedPacerWaitsAfterTheSharedGateNeverInsteadOfIt") {
  ScriptedServer server;
  auto h = Quota(1, 100, 0);
  h.emplace("Retry-After", "10");
  server.Then(429, h, R"({"details":{"reason":"byte_rate"}})");
  const auto path = WritePartition("pacer_gate", 1);
  auto gate = std::make_shared<fwdsink::EndpointGate>();
  auto pacer = std::make_shared<fwdsink::EndpointPacer>();
  Harness a(server.url(), {}, {}, gate, pacer);
  REQUIRE(a.Forward(path).outcome == Outcome::kDelivered);
  // b starts at a's start instant on its own fake clock: the gate still holds 10 s,
  // and a's reservation on the shared pacer comes on top.
  Harness b(server.url(), {}, {}, gate, pacer);
  REQUIRE(b.Forward(path).outcome == Outcome::kDelivered);
  const auto sleeps = b.clock.sleeps();
  REQUIRE(sleeps.size() == 2);
  CHECK(sleeps[0] == 10s);  // the gate: whole
  CHECK(sleeps[1] > 10s);   // then the pacer, never instead of the gate
  SUBCASE("twin: a sender with its own gate and pacer waits for neither") {
    Harness c(server.url());
    REQUIRE(c.Forward(path).outcome == Outcome::kDelivered);
    CHECK(c.clock.sleeps().empty());
  }
}

TEST_CASE("LaterChunksShrinkToAnAdvertisedBurstTheyCannotFit") {
  ScriptedServer server;
  const auto path = WritePartition("shrink", 8);  // 25-byte rows, two per 64-byte chunk
  auto pacer =
      std::make_shared<fwdsink::EndpointPacer>(fwdsink::PacingPolicy{.min_chunk_bytes = 1});
  SUBCASE("a 30-byte burst: after the first ack, chunks of one row") {
    server.Then(200, Quota(1'000'000, 30, 30));
    Harness run(server.url(), {}, {}, {}, pacer);
    REQUIRE(run.Forward(path).outcome == Outcome::kDelivered);
    std::vector<std::uint64_t> rows;
    for (const auto& a : run.acks) rows.push_back(a.rows);
    // The chunk read ahead while the first was on the wire keeps its two rows.
    CHECK(rows == std::vector<std::uint64_t>{2, 2, 1, 1, 1, 1});
    CHECK(run.acks.back().end == std::filesystem::file_size(path));  // every row once
  }
  SUBCASE("twin: a burst the chunks fit leaves them whole") {
    server.Then(200, Quota(1'000'000, 1000, 1000));
    Harness run(server.url(), {}, {}, {}, pacer);
    REQUIRE(run.Forward(path).outcome == Outcome::kDelivered);
    CHECK(run.acks.size() == 4);
  }
}

TEST_CASE("CursorThatCannotBeSavedStopsTheSink") {
  ScriptedServer server;
  const auto path = WritePartition("nosave", 10);
  Harness h(server.url());
  const auto r =
      h.sink->ForwardPartition("p1", path, 0, [](const fwdsink::AckedChunk&) { return false; });
  CHECK(r.outcome == Outcome::kRespooled);
  CHECK(r.respool_reason == fwdsink::RespoolReason::kCursorNotSaved);
  CHECK(server.requests().size() == 1);  // did not run ahead of the disk
}

TEST_CASE("TornPartitionIsAClearErrorAndNothingIsSent") {
  ScriptedServer server;
  const auto path = FreshDir(kSuite, "torn") / "p1.ndjson";
  WriteFile(path, "{\"a\":1}\n{\"a\":2");  // no final newline
  Harness h(server.url());
  const auto r = h.Forward(path);
  CHECK(r.outcome == Outcome::kPartitionError);
  CHECK(r.reason == "unterminated_line");
  // Names the file, the torn bytes and the offset of the torn line.
  CHECK(r.message == path.string() +
                         ": last line has no terminating newline (6 bytes) at offset 8"
                         " (unterminated_line)");
  CHECK(r.resume_offset == 8);  // the whole line before it went
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].body == "{\"a\":1}\n");  // only the whole line; nothing of the torn one
}

TEST_CASE("ZstdBodiesDecodeToTheChunkAndAreIdenticalOnResend") {
  ScriptedServer server;
  server.Then(503, RetryAfter("1"));
  const auto path = WritePartition("zstd", 3);
  fwdsink::ForwardOptions o;
  o.compression = fwdsink::Compression::kZstd;
  fwdsink::ForwardDeps deps;
  fwdsink::FakeClock clock;
  deps.time = &clock;
  deps.sleeper = &clock;
  o.url = server.url();
  o.chunker.chunk_bytes = 1 << 20;
  auto created = fwdsink::ForwardSink::Create(o, deps);
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  auto sink = std::move(created).value();
  REQUIRE(sink->ForwardPartition("p1", path, 0, {}).outcome == Outcome::kDelivered);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].encoding == "zstd");
  CHECK(reqs[0].body == reqs[1].body);
  std::string decoded;
  fwdsink::Result<std::string> decoded_or = fwdsink::DecodeZstd(reqs[0].body, 1 << 20);
  REQUIRE_MESSAGE(decoded_or.ok(), decoded_or.status().ToString());
  decoded = std::move(decoded_or).value();
  CHECK(decoded == ReadFile(path));
}

TEST_CASE("CloseMakesEveryLaterCallAbortWithTheCursorKept") {
  ScriptedServer server;
  const auto path = WritePartition("closed", 3);
  Harness h(server.url());
  h.sink->Close();
  h.sink->Close();  // idempotent
  const auto r = h.Forward(path, 0);
  CHECK(r.outcome == Outcome::kAborted);
  CHECK(r.resume_offset == 0);
  CHECK(server.requests().empty());
}

TEST_CASE("ValidateNamesTheField") {
  auto field = [](fwdsink::ForwardOptions o) {
    if (o.url.empty()) o.url = "http://127.0.0.1:1/x";
    const fwdsink::Status e = fwdsink::Validate(o);
    if (!e.ok()) CHECK(e.code() == fwdsink::StatusCode::kInvalidConfig);
    return e.ok() ? std::string("<valid>") : e.field();
  };
  CHECK(field({}) == "<valid>");
  CHECK(field({.url = "ftp://x/"}) == "url");
  CHECK(field({.url = "http://:80/"}) == "url");
  CHECK(field({.url = "http://h:99999/"}) == "url");
  fwdsink::ForwardOptions o;
  o.idempotency_header = "Bad Header";
  CHECK(field(o) == "idempotency_header");
  o = {};
  o.idempotency_header = "X-Hyp-Batch-Id";
  CHECK(field(o) == "<valid>");
  o = {};
  o.backpressure.ladder = {};
  CHECK(field(o) == "backpressure.ladder");
  o = {};
  o.chunker.chunk_bytes = 0;
  CHECK(field(o) == "chunker.chunk_bytes");
  o = {};
  o.zstd_level = 99;
  CHECK(field(o) == "zstd_level");
}

// ---- The cursor's road for a caller of its own (the callbacks, no cursor log), and the
// request slots' yield between two chunks. @ref LLP 0021#cursor-road

namespace {

using Ranges = std::vector<fwdsink::CursorRange>;

// Request slots that are always free and count the sink's yields.
class CountingSlots final : public fwdsink::RequestSlots {
 public:
  bool TryAcquire(std::size_t) override { return true; }
  void Release() override {}
  void Yield() override { ++yields; }
  int yields = 0;  // the sink's thread only
};

}  // namespace

TEST_CASE("AJournalCallbackAndAnAckCallbackStillTakeTheCursorWithoutACursorLog") {
  ScriptedServer server;
  const auto path = WritePartition("callbacks", 4);  // two chunks: [0, 50) and [50, 100)
  Harness h(server.url());
  bool persist = true;
  std::vector<std::pair<std::uint64_t, Ranges>> journals;
  std::vector<std::pair<std::uint64_t, bool>> acks;  // cursor, final
  const auto forward = [&] {
    const fwdsink::ForwardStart start{.on_journal = [&](const fwdsink::JournalState& j) {
      journals.emplace_back(j.cursor, Ranges(j.ranges.begin(), j.ranges.end()));
      return persist;
    }};
    return h.sink->ForwardPartition(kPartition, path, start, [&](const fwdsink::AckedChunk& a) {
      acks.emplace_back(a.cursor, a.final);
      return true;
    });
  };
  SUBCASE("the second chunk's journal before it leaves, then every ack") {
    CHECK(forward().outcome == Outcome::kDelivered);
    // The call's first refill needs no journal (the record it started from cuts it again).
    REQUIRE(journals.size() == 1);
    CHECK(journals[0].first == 50);
    CHECK(journals[0].second == Ranges{{50, 100}});
    CHECK(acks == std::vector<std::pair<std::uint64_t, bool>>{{50, false}, {100, true}});
    CHECK(server.requests().size() == 2);
  }
  SUBCASE("twin: a journal the callback cannot persist stops the call before it leaves") {
    persist = false;
    const auto r = forward();
    CHECK(r.outcome == Outcome::kRespooled);
    CHECK(r.respool_reason == fwdsink::RespoolReason::kCursorNotSaved);
    CHECK(journals.size() == 1);
    CHECK(acks.size() == 1);
    CHECK(server.requests().size() == 1);  // the second chunk never left
  }
}

TEST_CASE("TheSinkYieldsItsSlotOnlyAfterAnAckThatLeavesNothingOfThePartitionInFlight") {
  ScriptedServer server;
  fwdsink::FakeClock clock;
  const auto slots = std::make_shared<CountingSlots>();
  const auto make = [&](std::size_t window) {
    fwdsink::ForwardOptions o;
    o.url = server.url();
    o.compression = fwdsink::Compression::kIdentity;
    o.chunker.chunk_bytes = kChunkBytes;
    o.transport.read_timeout = 5s;
    o.window = window;
    fwdsink::ForwardDeps deps;
    deps.time = &clock;
    deps.sleeper = &clock;
    deps.requests = slots;
    auto created = fwdsink::ForwardSink::Create(std::move(o), std::move(deps));
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    return std::move(created).value();
  };
  std::vector<std::size_t> in_flight;  // after each ack
  const auto count = [&](const fwdsink::AckedChunk& a) {
    in_flight.push_back(a.in_flight);
    return true;
  };
  SUBCASE("one chunk at a time: after every ack but the final one") {
    const auto sink = make(1);
    const auto path = WritePartition("yield_one", 6);  // three chunks
    CHECK(sink->ForwardPartition(kPartition, path, 0, count).outcome == Outcome::kDelivered);
    CHECK(in_flight == std::vector<std::size_t>{0, 0, 0});
    CHECK(slots->yields == 2);
  }
  SUBCASE("twin: two in flight, the first ack leaves one and the second is final") {
    const auto sink = make(2);
    const auto path = WritePartition("yield_two", 4);  // two chunks, both sent at once
    CHECK(sink->ForwardPartition(kPartition, path, 0, count).outcome == Outcome::kDelivered);
    CHECK(in_flight == std::vector<std::size_t>{1, 0});
    CHECK(slots->yields == 0);
  }
}
