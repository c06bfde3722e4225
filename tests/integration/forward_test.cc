// SPDX-License-Identifier: Apache-2.0
// ForwardSink end to end: the real sink on the real clock against the reference receiver
// (fwdsink-central) as a separate process on 127.0.0.1. The unit counterpart with a fake
// clock is forward_sink_test.cc; here the waits really happen, so they are kept short
// (Retry-After 1 s, ladders of a few hundred ms) and timing is only checked with
// generous bounds, except for close(), whose 100 ms bound is the contract.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/forward_sink.h"
#include "support/central_process.h"
#include "support/it_support.h"
#include "support/phase_wait.h"

using namespace std::chrono_literals;
using fwdsink::Outcome;
using fwdsink::test::CentralProcess;
using fwdsink::test::CheckResendsIdentical;
using fwdsink::test::Counted;
using fwdsink::test::SinkRun;
using fwdsink::test::Statuses;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;
using std::chrono::milliseconds;

namespace {

constexpr std::size_t kLine = 50;               // bytes per generated row, '\n' included
constexpr std::size_t kChunkBytes = 4 * kLine;  // four rows per chunk (identity)
constexpr auto kCloseBound = 100ms;             // DESIGN: close() returns within ~100 ms
constexpr auto kSlack = 50ms;                   // scheduling slack below a planned wait
constexpr auto kLongRung = 5s;                  // a rung a 1 s Retry-After must beat
const std::string kPath = "/v1/ndjson";

// Options for a sink that posts identity-encoded 4-row chunks to `central`.
fwdsink::ForwardOptions OptionsFor(const CentralProcess& central,
                                   std::vector<milliseconds> ladder = {1s}) {
  fwdsink::ForwardOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(central.port()) + kPath;
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = kChunkBytes;
  o.backpressure.ladder = std::move(ladder);
  o.backpressure.max_wait = 10s;
  o.backpressure.inline_budget = 30s;
  o.backpressure.jitter = 0;  // exact waits are checked (jitter is on by default)
  o.window = 1;  // one chunk at a time: these check one chunk's sequence (LLP 0014#window)
  o.transport.connect_timeout = 2s;
  o.transport.read_timeout = 10s;
  o.transport.write_timeout = 5s;
  return o;
}

// Milliseconds between the receiver's decisions on requests i and i+1.
std::int64_t Gap(const std::vector<nlohmann::json>& log, std::size_t i) {
  return log.at(i + 1).value("t_ms", std::int64_t{0}) - log.at(i).value("t_ms", std::int64_t{0});
}

}  // namespace

TEST_CASE("PositiveRetryAfterIsHonouredAndItsAbsenceFallsBackToTheLadder") {
  const auto dir = CentralProcess::ScratchDir("it_retry_after");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 2, kLine);  // one chunk

  SUBCASE("Retry-After: 1 beats a 5 s ladder") {
    CentralProcess central(dir / "ra");
    REQUIRE(central.Start({"--fail-status", "429", "--fail-first", "1"}));
    SinkRun run(OptionsFor(central, {kLongRung}));
    const auto r = run.Forward("ra", path);
    REQUIRE(r.outcome == Outcome::kDelivered);
    CHECK(r.throttled);
    const auto bp = run.Named("forward.backpressure");
    REQUIRE(bp.size() == 1);
    CHECK(bp[0].status == 429);
    CHECK(bp[0].reason == "injected");
    CHECK(bp[0].attempt == 1);
    CHECK(bp[0].wait == 1s);
    CHECK(bp[0].wait_source == "retry_after");
    CHECK(bp[0].retry_after == "1");
    const auto log = central.request_log();
    REQUIRE(Statuses(log) == std::vector<int>{429, 200});
    CHECK(Gap(log, 0) >= (1s - kSlack).count());
    CHECK(Gap(log, 0) < milliseconds(kLongRung - 1s).count());  // the rung was not used
  }
  SUBCASE("no Retry-After: the first rung") {
    CentralProcess central(dir / "ladder");
    REQUIRE(central.Start({"--fail-status", "429", "--fail-first", "1", "--no-retry-after"}));
    SinkRun run(OptionsFor(central, {1s}));
    const auto r = run.Forward("ladder", path);
    REQUIRE(r.outcome == Outcome::kDelivered);
    const auto bp = run.Named("forward.backpressure");
    REQUIRE(bp.size() == 1);
    CHECK(bp[0].wait == 1s);
    CHECK(bp[0].wait_source == "ladder");
    CHECK(bp[0].retry_after.empty());
    const auto log = central.request_log();
    REQUIRE(Statuses(log) == std::vector<int>{429, 200});
    CHECK(Gap(log, 0) >= (1s - kSlack).count());  // no immediate re-send
  }
  SUBCASE("twin: no backpressure, no wait") {
    CentralProcess central(dir / "clean");
    REQUIRE(central.Start());
    SinkRun run(OptionsFor(central, {kLongRung}));
    REQUIRE(run.Forward("clean", path).outcome == Outcome::kDelivered);
    CHECK(run.Named("forward.backpressure").empty());
    CHECK(Statuses(central.request_log()) == std::vector<int>{200});
    CHECK(run.sink().counters().waits == 0);
  }
}

TEST_CASE("ServiceUnavailableIsBackpressureRetriedInPlace") {
  const auto dir = CentralProcess::ScratchDir("it_503");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 6, kLine);  // two chunks
  CentralProcess central(dir / "central");
  // The 2nd POST (the 2nd chunk) gets 503 + Retry-After: 1.
  REQUIRE(
      central.Start({"--fail-status", "503", "--fail-every", "2", "--fail-reason", "maintenance"}));
  auto o = OptionsFor(central, {kLongRung});
  o.compression = fwdsink::Compression::kZstd;  // compressed re-sends must match too
  SinkRun run(o);
  const auto r = run.Forward("u", path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  CHECK(run.sink().counters().status_503 == 1);
  const auto bp = run.Named("forward.backpressure");
  REQUIRE(bp.size() == 1);
  CHECK(bp[0].status == 503);
  CHECK(bp[0].reason == "maintenance");
  CHECK(bp[0].wait_source == "retry_after");
  CHECK(bp[0].key == "u:" + std::to_string(kChunkBytes) + "-" + std::to_string(6 * kLine));
  const auto log = central.request_log();
  REQUIRE(Statuses(log) == std::vector<int>{200, 503, 200});
  CHECK(log[1]["key"] == log[2]["key"]);  // the same chunk, not the next one
  CHECK(CheckResendsIdentical(log) == 1);
  CHECK(Counted(central.received_rows()) == Counted(rows));
}

TEST_CASE("RepeatedThrottlingWalksTheLadderAndRepeatsTheLastRung") {
  const std::vector<milliseconds> kLadder = {250ms, 500ms, 750ms};
  const auto dir = CentralProcess::ScratchDir("it_ladder_walk");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 3, kLine);
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--fail-status", "429", "--fail-first", "4", "--no-retry-after"}));
  SinkRun run(OptionsFor(central, kLadder));
  const auto r = run.Forward("w", path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  const auto bp = run.Named("forward.backpressure");
  REQUIRE(bp.size() == 4);
  const std::vector<milliseconds> expected = {250ms, 500ms, 750ms, 750ms};
  for (std::size_t i = 0; i < bp.size(); ++i) {
    CAPTURE(i);
    CHECK(bp[i].attempt == i + 1);
    CHECK(bp[i].wait == expected[i]);
    CHECK(bp[i].wait_source == "ladder");
    CHECK(bp[i].reason == "injected");
  }
  const auto log = central.request_log();
  REQUIRE(Statuses(log) == std::vector<int>{429, 429, 429, 429, 200});
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(Gap(log, i) >= (expected[i] - kSlack).count());
  }
  CHECK(CheckResendsIdentical(log) == 1);
  CHECK(Counted(central.received_rows()) == Counted(rows));
}

TEST_CASE("UnusableRetryAfterWalksTheLadderAndNeverSpins") {
  const std::vector<milliseconds> kLadder = {200ms, 300ms};
  const auto dir = CentralProcess::ScratchDir("it_bad_retry_after");
  const auto path = dir / "p.ndjson";
  WriteRows(path, 2, kLine);
  int n = 0;
  for (const char* raw : {"0", "-1", "garbage", "Sun, 06 Nov 1994 08:49:37 GMT"}) {
    CAPTURE(raw);
    CentralProcess central(dir / ("c" + std::to_string(n++)));
    REQUIRE(central.Start({"--fail-status", "429", "--fail-first", "2", "--retry-after", raw}));
    SinkRun run(OptionsFor(central, kLadder));
    REQUIRE(run.Forward("z", path).outcome == Outcome::kDelivered);
    const auto bp = run.Named("forward.backpressure");
    REQUIRE(bp.size() == 2);
    CHECK(bp[0].wait_source == "ladder");
    CHECK(bp[0].wait == 200ms);
    CHECK(bp[0].retry_after == raw);
    CHECK(bp[1].wait == 300ms);
    const auto log = central.request_log();
    CHECK(log.size() == 3);  // counted: two refusals, one success, no hot loop
    REQUIRE(log.size() >= 3);
    CHECK(Gap(log, 0) >= (200ms - kSlack).count());
    CHECK(Gap(log, 1) >= (300ms - kSlack).count());
  }
}

TEST_CASE("BudgetExhaustionRespoolsAtTheLastAckedChunkAndTheNextRunResumesThere") {
  const auto dir = CentralProcess::ScratchDir("it_budget");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 20, kLine);  // five 200-byte chunks
  CentralProcess central(dir / "central");
  // A burst of two and a half chunks at 1 B/s: chunks 1 and 2 pass, chunk 3 is told to
  // come back in ~150 s, which max_wait caps to 1 s; the next wait would pass the budget.
  REQUIRE(central.Start({"--rate", "1", "--burst", std::to_string(2 * kChunkBytes + 50)}));
  auto o = OptionsFor(central, {1s});
  o.backpressure.max_wait = 1s;
  o.backpressure.inline_budget = 1500ms;
  std::uint64_t resume = 0;
  std::string throttled_key;
  {
    SinkRun run(o);
    const auto r = run.Forward("b", path);
    REQUIRE(r.outcome == Outcome::kRespooled);
    CHECK(r.respool_reason == fwdsink::RespoolReason::kBudgetExhausted);
    CHECK(r.reason == "byte_rate");
    CHECK(r.status == 429);
    const auto acks = run.acks();
    REQUIRE(acks.size() == 2);
    CHECK(r.resume_offset == acks[1].end);
    CHECK(r.resume_offset == 2 * kChunkBytes);
    CHECK(r.chunks_acked == 2);
    const auto bp = run.Named("forward.backpressure");
    REQUIRE(bp.size() == 2);
    CHECK(bp[0].wait == 1s);  // Retry-After ~150 s, capped
    CHECK(bp[0].wait_source == "retry_after");
    const auto give_up = run.Named("forward.give_up");
    REQUIRE(give_up.size() == 1);
    CHECK(give_up[0].begin == r.resume_offset);
    throttled_key = give_up[0].key;
    CHECK(run.sink().counters().budget_exhausted == 1);
    resume = r.resume_offset;
  }
  // Only the acked rows are stored so far.
  CHECK(central.received_rows() == std::vector<std::string>(rows.begin(), rows.begin() + 8));

  // The next tick: the same receiver restarted without the throttle (it keeps its rows
  // and keys), and a fresh sink resuming at the cursor, not at row 0.
  REQUIRE(central.Stop() == 0);
  REQUIRE(central.Start());
  SinkRun again(OptionsFor(central));
  const auto before = central.request_log().size();
  const auto r2 = again.Forward("b", path, resume);
  REQUIRE(r2.outcome == Outcome::kDelivered);
  const auto log = central.request_log();
  REQUIRE(log.size() > before);
  CHECK(log[before]["key"] == throttled_key);  // same chunk, same key
  CHECK(r2.chunks_acked == 3);
  CHECK(central.received_rows() == rows);  // every row exactly once, in order
  CHECK(CheckResendsIdentical(log) == 1);
}

TEST_CASE("RealThrottleEventCarriesStatusReasonAttemptWaitSourceKeyAndPartition") {
  const auto dir = CentralProcess::ScratchDir("it_event_fields");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 8, kLine);  // two 200-byte chunks
  CentralProcess central(dir / "central");
  // One chunk of burst; the second chunk needs one more second of rate.
  REQUIRE(central.Start(
      {"--rate", std::to_string(kChunkBytes), "--burst", std::to_string(kChunkBytes)}));
  SinkRun run(OptionsFor(central, {kLongRung}));
  const auto r = run.Forward("ev", path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  const auto bp = run.Named("forward.backpressure");
  REQUIRE(!bp.empty());
  const std::string key =
      "ev:" + std::to_string(kChunkBytes) + "-" + std::to_string(2 * kChunkBytes);
  CHECK(bp[0].status == 429);
  CHECK(bp[0].reason == "byte_rate");
  CHECK(bp[0].attempt == 1);
  CHECK(bp[0].wait == 1s);
  CHECK(bp[0].wait_source == "retry_after");
  CHECK(bp[0].retry_after == "1");
  CHECK(bp[0].key == key);
  CHECK(bp[0].partition == "ev");
  CHECK(bp[0].begin == kChunkBytes);
  CHECK(bp[0].end == 2 * kChunkBytes);
  const auto stats = central.Stats();
  CHECK(stats["throttled"] == bp.size());
  CHECK(stats["accepted_chunks"] == 2);
  CHECK(Counted(central.received_rows()) == Counted(rows));
  SUBCASE("twin: a burst that fits everything raises no event") {
    CentralProcess roomy(dir / "roomy");
    REQUIRE(roomy.Start(
        {"--rate", std::to_string(kChunkBytes), "--burst", std::to_string(4 * kChunkBytes)}));
    SinkRun run2(OptionsFor(roomy, {kLongRung}));
    REQUIRE(run2.Forward("ev", path).outcome == Outcome::kDelivered);
    CHECK(run2.Named("forward.backpressure").empty());
    CHECK(roomy.Stats()["throttled"] == 0);
  }
}

TEST_CASE("BigErrorBodiesAreDrainedAndTheReasonStillExtracted") {
  constexpr std::size_t kErrorBody = 200000;
  const auto dir = CentralProcess::ScratchDir("it_drain");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 8, kLine);
  const std::vector<std::string> args = {"--fail-status",
                                         "429",
                                         "--fail-first",
                                         "2",
                                         "--no-retry-after",
                                         "--error-body-bytes",
                                         std::to_string(kErrorBody)};
  auto check = [&](CentralProcess& central, SinkRun& run) {
    const auto r = run.Forward("d", path);
    REQUIRE(r.outcome == Outcome::kDelivered);
    const auto bp = run.Named("forward.backpressure");
    REQUIRE(bp.size() == 2);
    for (const auto& e : bp) CHECK(e.reason == "injected");  // from the body's prefix
    CHECK(Statuses(central.request_log()) == std::vector<int>{429, 429, 200, 200});
    CHECK(central.received_rows() == rows);
  };
  SUBCASE("a body under the drain limit is read to its end (connection reusable)") {
    CentralProcess central(dir / "under");
    REQUIRE(central.Start(args));
    SinkRun run(OptionsFor(central, {100ms}));
    check(central, run);
  }
  SUBCASE("a body over the drain limit is cut off: the connection is closed, not read") {
    CentralProcess central(dir / "over");
    REQUIRE(central.Start(args));
    auto o = OptionsFor(central, {100ms});
    o.transport.drain_limit_bytes = 16 << 10;
    SinkRun run(o);
    check(central, run);
  }
}

TEST_CASE("CloseCutsAPauseAndAHungRequestShortAndKeepsTheCursor") {
  const auto dir = CentralProcess::ScratchDir("it_close");
  const auto path = dir / "p.ndjson";
  WriteRows(path, 12, kLine);  // three chunks

  // Runs the partition on a sender thread, waits for `ready(sender's thread id)` (the
  // phase), then calls Close() twice from this thread and returns how long
  // ForwardPartition took to return after it.
  auto close_while = [&](SinkRun& run, auto ready, fwdsink::ForwardResult& result) {
    std::atomic<bool> returned{false};
    std::atomic<pid_t> tid{0};
    std::chrono::steady_clock::time_point returned_at;
    std::thread sender([&] {
      tid = fwdsink::test::ThisThreadId();
      result = run.Forward("c", path);
      returned_at = std::chrono::steady_clock::now();
      returned = true;
    });
    const bool got_ready = WaitFor([&] { return tid.load() != 0 && ready(tid.load()); });
    const auto closed_at = std::chrono::steady_clock::now();
    run.sink().Close();
    run.sink().Close();  // idempotent, from any thread
    const bool ended = WaitFor([&] { return returned.load(); }, 5000ms);
    if (!ended) run.sink().Close();
    sender.join();
    CHECK(got_ready);
    CHECK(ended);
    return std::chrono::duration_cast<milliseconds>(returned_at - closed_at);
  };

  SUBCASE("a 300 s Retry-After pause") {
    CentralProcess central(dir / "pause");
    REQUIRE(central.Start({"--fail-status", "429", "--fail-every", "2", "--retry-after", "300"}));
    auto o = OptionsFor(central);
    o.backpressure.max_wait = 600s;
    o.backpressure.inline_budget = 900s;
    SinkRun run(o);
    fwdsink::ForwardResult r;
    // The phase: the sink says it waits, and its thread is blocked in the pause.
    const auto took = close_while(
        run,
        [&](pid_t sender) {
          return run.sink().state().phase == fwdsink::ForwardSink::State::Phase::kWaiting &&
                 fwdsink::test::BlockedOnFutex(sender);
        },
        r);
    MESSAGE("close during a pause returned after " << took.count() << " ms");
    CHECK(took < kCloseBound);
    CHECK(r.outcome == Outcome::kAborted);
    CHECK(r.resume_offset == kChunkBytes);  // chunk 1 acked, chunk 2 paused
    CHECK(run.Named("forward.backpressure").at(0).wait == 300s);
    CHECK(Statuses(central.request_log()) == std::vector<int>{200, 429});
  }
  SUBCASE("a request whose response headers never come") {
    CentralProcess central(dir / "hung");
    REQUIRE(central.Start({"--header-delay-ms", "60000", "--header-delay-every", "2"}));
    auto o = OptionsFor(central);
    o.transport.read_timeout = 120s;  // only close() can end this request
    SinkRun run(o);
    fwdsink::ForwardResult r;
    const auto took = close_while(
        run,
        [&](pid_t sender) {
          // The phase: the receiver holds the 2nd POST read to its end (headers and
          // body sent), and the sender is blocked on its socket, waiting for headers.
          const auto s = central.Stats();
          return s.is_object() && s["requests"] == 2 && s["held"] == 1 &&
                 run.sink().state().phase == fwdsink::ForwardSink::State::Phase::kSending &&
                 // the post runs on a pipe's thread; the sender waits for its answer
                 // (LLP 0014#window)
                 fwdsink::test::BlockedOnFutex(sender);
        },
        r);
    MESSAGE("close during a hung request returned after " << took.count() << " ms");
    CHECK(took < kCloseBound);
    CHECK(r.outcome == Outcome::kAborted);
    CHECK(r.resume_offset == kChunkBytes);
    CHECK(run.sink().counters().chunks_acked == 1);
    // The receiver still exits promptly with the delayed request pending.
    CHECK(central.Stop(2000ms) == 0);
  }
}

TEST_CASE("UnauthorizedRefreshesTheTokenOnceThenFailsAsAuthError") {
  const auto dir = CentralProcess::ScratchDir("it_auth");
  const auto token_file = dir / "token";
  auto write_token = [&](const std::string& t) {
    const auto tmp = dir / "token.tmp";
    std::ofstream(tmp, std::ios::trunc) << t << "\n";
    std::filesystem::rename(tmp, token_file);
  };
  // The client re-reads the same file the receiver reads, as a real provider would.
  int reads = 0;
  std::vector<bool> forced;
  auto provider = [&](bool force) -> std::optional<std::string> {
    forced.push_back(force);
    ++reads;
    std::ifstream in(token_file);
    std::string t;
    if (!(in >> t)) return std::nullopt;
    return t;
  };
  const auto p1 = dir / "p1.ndjson";
  const auto p2 = dir / "p2.ndjson";
  const auto rows1 = WriteRows(p1, 2, kLine);
  const auto rows2 = WriteRows(p2, 3, kLine);
  write_token("tok-a");

  SUBCASE("a rotated token: one 401, one refresh, delivered") {
    CentralProcess central(dir / "rotate");
    REQUIRE(central.Start({"--token-file", token_file.string(), "--token-ttl", "30"}));
    SinkRun run(OptionsFor(central), provider);
    REQUIRE(run.Forward("a1", p1).outcome == Outcome::kDelivered);
    CHECK(run.Named("forward.auth_refresh").empty());  // twin: no 401, no refresh
    write_token("tok-b");
    const auto r = run.Forward("a2", p2);
    CHECK(r.outcome == Outcome::kDelivered);
    const auto refresh = run.Named("forward.auth_refresh");
    REQUIRE(refresh.size() == 1);
    CHECK(refresh[0].reason == "token_expired");
    CHECK(forced == std::vector<bool>{false, true});
    CHECK(Statuses(central.request_log()) == std::vector<int>{200, 401, 200});
    CHECK(central.received_rows().size() == rows1.size() + rows2.size());
  }
  SUBCASE("a token past its TTL and nothing fresher: a second 401 is an auth error") {
    CentralProcess central(dir / "ttl");
    REQUIRE(central.Start({"--token-file", token_file.string(), "--token-ttl", "1"}));
    SinkRun run(OptionsFor(central), provider);
    REQUIRE(run.Forward("a1", p1).outcome == Outcome::kDelivered);
    // Setup, not a timing check: let the receiver's 1 s TTL on tok-a run out.
    std::this_thread::sleep_for(1100ms);
    const auto r = run.Forward("a2", p2);
    CHECK(r.outcome == Outcome::kAuthError);
    CHECK(r.reason == "token_expired");
    CHECK(r.resume_offset == 0);
    CHECK(run.Named("forward.auth_refresh").size() == 1);
    CHECK(run.Named("forward.auth_failed").size() == 1);
    CHECK(Statuses(central.request_log()) == std::vector<int>{200, 401, 401});
    CHECK(central.received_rows() == rows1);
  }
}

TEST_CASE("TooLargeChunksAreSplitAndASingleOversizedRowIsPoisonedWithItsRange") {
  constexpr std::size_t kMaxBody = 300;  // decoded bytes the receiver takes per request
  const auto dir = CentralProcess::ScratchDir("it_413");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--max-body", std::to_string(kMaxBody)}));
  auto o = OptionsFor(central);
  o.compression = fwdsink::Compression::kZstd;  // the receiver limits the decoded size
  o.chunker.chunk_bytes = 20 * kLine;           // 1000 bytes: needs two splits

  SUBCASE("splitting delivers everything") {
    const auto path = dir / "split.ndjson";
    const auto rows = WriteRows(path, 40, kLine);
    SinkRun run(o);
    const auto r = run.Forward("s", path);
    REQUIRE(r.outcome == Outcome::kDelivered);
    CHECK(run.sink().counters().splits >= 2);
    CHECK(central.received_rows() == rows);
    CHECK(central.Stats()["too_large"].get<int>() >= 2);
  }
  SUBCASE("a row bigger than max-body is poisoned alone") {
    const auto path = dir / "big.ndjson";
    auto rows = WriteRows(path, 10, kLine);
    rows[5] = "{\"big\":\"" + std::string(kMaxBody, 'y') + "\"}";
    fwdsink::test::WriteLines(path, rows);
    SinkRun run(o);
    const auto r = run.Forward("s", path);
    REQUIRE(r.outcome == Outcome::kPoisoned);
    CHECK(r.status == 413);
    CHECK(r.reason == "max_body");
    CHECK(r.poison_rows == 1);
    CHECK(r.poison_begin == fwdsink::test::LineOffset(rows, 5));
    CHECK(r.poison_end == fwdsink::test::LineOffset(rows, 6));
    CHECK(r.resume_offset == r.poison_begin);
    // Everything before the row went; nothing after it yet.
    CHECK(central.received_rows() == std::vector<std::string>(rows.begin(), rows.begin() + 5));
    const auto rest = run.Forward("s", path, r.poison_end);
    CHECK(rest.outcome == Outcome::kDelivered);
    CHECK(central.received_rows().size() == rows.size() - 1);
  }
}

TEST_CASE("AMalformedLineIsPoisonedWithExactlyItsRangeAndTheRestFollows") {
  const auto dir = CentralProcess::ScratchDir("it_poison");
  const auto path = dir / "p.ndjson";
  auto rows = WriteRows(path, 11, kLine);
  constexpr std::size_t kBad = 6;  // in the middle of the second chunk
  rows[kBad] = "[1,2]";
  fwdsink::test::WriteLines(path, rows);
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  SinkRun run(OptionsFor(central));
  const auto r = run.Forward("m", path);
  REQUIRE(r.outcome == Outcome::kPoisoned);
  CHECK(r.status == 400);
  CHECK(r.reason == "bad_row");
  CHECK(r.poison_rows == 1);
  CHECK(r.poison_begin == fwdsink::test::LineOffset(rows, kBad));
  CHECK(r.poison_end == fwdsink::test::LineOffset(rows, kBad + 1));
  CHECK(r.resume_offset == r.poison_begin);
  CHECK(run.Named("forward.poison").size() == 1);
  // Nothing from a refused chunk was stored: exactly the rows before the bad one.
  CHECK(central.received_rows() == std::vector<std::string>(rows.begin(), rows.begin() + kBad));

  const auto rest = run.Forward("m", path, r.poison_end);
  REQUIRE(rest.outcome == Outcome::kDelivered);
  auto expected = rows;
  expected.erase(expected.begin() + kBad);
  CHECK(central.received_rows() == expected);  // each good row once, in order
}

TEST_CASE("EveryRowArrivesExactlyOnceUnderThrottlingInjectedFailuresAndReplays") {
  const auto dir = CentralProcess::ScratchDir("it_exactly_once");
  const auto path = dir / "p.ndjson";
  const auto rows = WriteRows(path, 40, kLine);  // ten chunks
  CentralProcess central(dir / "central");
  // A real byte throttle (burst of three chunks, two chunks/s) plus every 4th POST a
  // 503, each answered with Retry-After: 1.
  REQUIRE(central.Start({"--rate", std::to_string(2 * kChunkBytes), "--burst",
                         std::to_string(3 * kChunkBytes), "--fail-status", "503", "--fail-every",
                         "4"}));
  // Pacing off: this test is about re-sends under throttling, and the pacer would learn
  // the bucket and avoid its 429s (tests/integration/pacing_test.cc checks that it does).
  auto options = OptionsFor(central, {200ms});
  options.pacing.enabled = false;
  SinkRun run(options);
  const auto r = run.Forward("x", path);
  REQUIRE(r.outcome == Outcome::kDelivered);
  CHECK(r.throttled);
  CHECK(run.sink().counters().status_503 >= 1);
  CHECK(run.sink().counters().status_429 >= 1);
  const auto log = central.request_log();
  CHECK(log.size() > 10);  // there were re-sends
  CHECK(CheckResendsIdentical(log) >= 1);
  CHECK(central.received_rows() == rows);

  SUBCASE("a replay from an old cursor (crash before persist) stores nothing twice") {
    const auto acks = run.acks();
    REQUIRE(acks.size() == 10);                           // ten chunks, each acknowledged once
    for (const auto& a : acks) CHECK_FALSE(a.duplicate);  // twin: the first run stored all
    CHECK(central.Stats()["duplicate_chunks"] == 0);
    SinkRun replay(OptionsFor(central, {200ms}));
    const auto r2 = replay.Forward("x", path, acks[acks.size() - 2].begin);
    REQUIRE(r2.outcome == Outcome::kDelivered);
    // Exactly the last two chunks, each under its old range, each a duplicate.
    const auto again = replay.acks();
    REQUIRE(again.size() == 2);
    for (std::size_t i = 0; i < again.size(); ++i) {
      CAPTURE(i);
      CHECK(again[i].duplicate);
      CHECK(again[i].begin == acks[acks.size() - 2 + i].begin);
      CHECK(again[i].end == acks[acks.size() - 2 + i].end);
    }
    CHECK(central.received_rows() == rows);
    CHECK(central.Stats()["duplicate_chunks"] == 2);
  }
}
