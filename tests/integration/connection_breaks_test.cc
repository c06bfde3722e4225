// SPDX-License-Identifier: Apache-2.0
// A connection that breaks under a request is a transport error, never an abort (issue
// 37, LLP 0014#only-close-aborts): a reset mid-body, a close after the head or after
// 100 Continue, a 429 followed by a reset each come back as kIo with the phase they
// broke in, and the sink re-sends the same chunk (same key, same bytes) on a fresh
// connection; only Abort()/Close() aborts, also in the middle of a body write. A 417 to
// a request with "Expect: 100-continue" sends it once more without (RFC 9110 §10.1.1)
// and turns Expect off for the endpoint; a 417 to a request without it is the permanent
// error it was (LLP 0017#expect-417). Real sockets on 127.0.0.1.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/transport.h"
#include "support/central_process.h"
#include "support/it_support.h"
#include "support/raw_server.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::HttpTransport;
using fwdsink::TransportError;
using fwdsink::TransportOptions;
using fwdsink::WirePhase;
using fwdsink::test::CentralProcess;
using fwdsink::test::HasExpect;
using fwdsink::test::RawServer;
using Mode = fwdsink::test::RawServer::Mode;

constexpr std::size_t kBig = 200 * 1024;  // over the default Expect threshold of 64 KiB
// More than the loopback socket buffers take at once: a reset halfway fails a write.
constexpr std::size_t kHuge = 16 * 1024 * 1024;

std::unique_ptr<HttpTransport> Make(const std::string& url, TransportOptions o = {}) {
  return fwdsink::test::MakeTransport(url, std::move(o));
}

std::string Rows(std::size_t bytes) {
  std::string body;
  while (body.size() < bytes) body += "{\"p\":\"" + std::string(1015, 'x') + "\"}\n";
  return body;
}

fwdsink::TransportResult Post(HttpTransport& t, std::string& body, bool allow_expect = true) {
  return t.Post({{"Content-Type", "application/x-ndjson"}}, body, "",
                {.time_left = std::nullopt, .allow_expect = allow_expect});
}

fwdsink::ForwardOptions SinkOptions(const std::string& url) {
  fwdsink::ForwardOptions o;
  o.url = url;
  o.compression = fwdsink::Compression::kIdentity;
  o.backpressure.jitter = 0;
  return o;
}

}  // namespace

TEST_CASE("ABrokenConnectionIsATransportErrorWithItsPhaseNeverAnAbort") {
  struct Case {
    std::string name;
    Mode mode;
    std::uint64_t expect_bytes;     // the transport's threshold (0: no Expect)
    std::vector<WirePhase> phases;  // where it may be seen to break
    std::size_t bytes = kBig;
  };
  // Where the client notices depends on what the kernel had buffered: a reset mid-body
  // is seen in the body or waiting for the answer, never at connect.
  for (const Case& c : std::vector<Case>{
           Case{"reset mid-body, no Expect", Mode::kResetMidBody, 0, {WirePhase::kBody}, kHuge},
           Case{"reset mid-body after 100 Continue",
                Mode::kResetMidBody,
                64 * 1024,
                {WirePhase::kBody},
                kHuge},
           Case{"reset mid-body, a small body",
                Mode::kResetMidBody,
                0,
                {WirePhase::kBody, WirePhase::kResponseHead}},
           Case{"closed after the head, no Expect",
                Mode::kCloseAfterHead,
                0,
                {WirePhase::kBody, WirePhase::kResponseHead}},
           Case{"closed while waiting for 100",
                Mode::kCloseAfterHead,
                64 * 1024,
                {WirePhase::kAwaitContinue}},
           // The EOF may be read with the 100, before the body starts.
           Case{"closed right after 100 Continue",
                Mode::kContinueThenClose,
                64 * 1024,
                {WirePhase::kAwaitContinue, WirePhase::kBody, WirePhase::kResponseHead}},
       }) {
    CAPTURE(c.name);
    RawServer server({c.mode, Mode::kRead});
    TransportOptions o;
    o.expect_continue_bytes = c.expect_bytes;
    auto t = Make(server.url(), o);
    std::string body = Rows(c.bytes);
    const auto broke = Post(*t, body);
    CHECK_MESSAGE(broke.error == TransportError::kIo, broke.message);
    const std::string phase(to_string(broke.phase));
    CAPTURE(phase);
    CHECK(std::find(c.phases.begin(), c.phases.end(), broke.phase) != c.phases.end());
    // The same transport goes on, on a fresh connection, with the same bytes.
    CHECK(body.size() == c.bytes);
    const auto again = Post(*t, body);
    CHECK(again.error == TransportError::kNone);
    CHECK(again.response.status == 200);
    CHECK(server.WaitFor(2).size() == 2);
    CHECK(server.connections() == 2);
  }
}

// A 429 after 100 Continue, then a reset: the answer is the 429 when it was read before
// the reset landed, otherwise the break; either way no abort.
TEST_CASE("AServerThatSays100ThenAnswers429AndResetsIsNoAbort") {
  RawServer server({Mode::kContinueThen429Reset, Mode::kRead});
  auto t = Make(server.url());
  std::string body = Rows(kBig);
  const auto r = Post(*t, body);
  CHECK(r.error != TransportError::kAborted);
  if (r.error == TransportError::kNone) CHECK(r.response.status == 429);
  std::string again = Rows(kBig);
  CHECK(Post(*t, again).response.status == 200);
}

// The twin: Abort() in the middle of a body write is an abort, promptly.
TEST_CASE("AbortDuringABodyWriteIsAnAbort") {
  RawServer server({Mode::kStallMidBody});
  TransportOptions o;
  o.expect_continue_bytes = 0;
  auto t = Make(server.url(), o);
  std::string body = Rows(64 * 1024 * 1024);  // far more than the socket buffers hold
  auto posted = std::async(std::launch::async, [&] { return Post(*t, body); });
  REQUIRE(server.WaitFor(1).size() == 1);  // half the body is in; the rest is stuck
  std::this_thread::sleep_for(100ms);
  const auto at = std::chrono::steady_clock::now();
  t->Abort();
  REQUIRE(posted.wait_for(5s) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - at < 1s);
  const auto r = posted.get();
  CHECK(r.error == TransportError::kAborted);
}

TEST_CASE("ThroughTheSinkABodyWriteThatFailsIsRetriedInPlaceNotAborted") {
  const auto dir = CentralProcess::ScratchDir("it_breaks_sink");
  const auto path = dir / "p.ndjson";
  fwdsink::test::WriteRows(path, 16000, 1000);  // 16 MB: one chunk, more than the buffers
  RawServer server({Mode::kResetMidBody, Mode::kRead});
  auto o = SinkOptions(server.url());
  o.transport.expect_continue_bytes = 0;
  o.chunker.chunk_bytes = 32 * 1024 * 1024;
  o.chunker.max_line_bytes = o.chunker.chunk_bytes;
  fwdsink::test::SinkRun run(o);
  const auto r = run.Forward("p", path);
  CHECK_MESSAGE(r.outcome == fwdsink::Outcome::kDelivered, r.message);
  CHECK(run.Named("forward.aborted").empty());
  const auto errors = run.Named("forward.transport_error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].reason == "transport_io");
  CHECK(errors[0].phase == "body");
  CHECK(errors[0].wait_source == "reconnect");
  CHECK(errors[0].wait < 1s);  // a fresh connection soon, not the ladder's 30 s
  const auto& c = run.sink().counters();
  CHECK(c.transport_errors.load() == 1);
  CHECK(c.transport_errors_body.load() == 1);
  CHECK(c.aborts.load() == 0);
  const auto seen = server.WaitFor(2);
  REQUIRE(seen.size() == 2);
  // The same request again: same key, same length.
  const auto key = [](const std::string& head) {
    const auto at = head.find("Idempotency-Key: ");
    return head.substr(at + 17, head.find("\r\n", at) - at - 17);
  };
  CHECK(key(seen[0].head) == key(seen[1].head));
  CHECK(seen[1].body_bytes == 16'000'000);
}

// The twin: Close() while the body is being written aborts the partition.
TEST_CASE("ThroughTheSinkCloseDuringABodyWriteAborts") {
  const auto dir = CentralProcess::ScratchDir("it_breaks_close");
  const auto path = dir / "p.ndjson";
  fwdsink::test::WriteRows(path, 64 * 1024, 1000);  // 64 MB in one chunk
  RawServer server({Mode::kStallMidBody});
  auto o = SinkOptions(server.url());
  o.transport.expect_continue_bytes = 0;
  o.chunker.chunk_bytes = 128 * 1024 * 1024;
  o.chunker.max_line_bytes = o.chunker.chunk_bytes;
  o.max_inflight_bytes = 256 * 1024 * 1024;
  fwdsink::test::SinkRun run(o);
  auto forwarded = std::async(std::launch::async, [&] { return run.Forward("p", path); });
  REQUIRE(server.WaitFor(1).size() == 1);
  std::this_thread::sleep_for(100ms);
  run.sink().Close();
  REQUIRE(forwarded.wait_for(5s) == std::future_status::ready);
  const auto r = forwarded.get();
  CHECK(r.outcome == fwdsink::Outcome::kAborted);
  CHECK(run.sink().counters().transport_errors.load() == 0);
}

TEST_CASE("A417ToExpectSendsTheSameRequestOnceMoreWithoutItAndTurnsExpectOff") {
  const auto dir = CentralProcess::ScratchDir("it_breaks_417");
  const auto path = dir / "p.ndjson";
  fwdsink::test::WriteRows(path, 8000, 50);  // 400 kB: two chunks of 200 kB
  RawServer server({Mode::kExpectationFailed, Mode::kRead, Mode::kRead});
  auto o = SinkOptions(server.url());
  o.chunker.chunk_bytes = 200'000;
  o.window = 1;
  o.expect_continue = fwdsink::ExpectContinue::kAlways;  // the first request asks
  fwdsink::test::SinkRun run(o);
  const auto r = run.Forward("p", path);
  CHECK_MESSAGE(r.outcome == fwdsink::Outcome::kDelivered, r.message);
  const auto seen = server.WaitFor(3);
  REQUIRE(seen.size() == 3);
  CHECK(HasExpect(seen[0].head));
  CHECK_FALSE(HasExpect(seen[1].head));  // the same request, once more, without it
  CHECK_FALSE(HasExpect(seen[2].head));  // and Expect stays off for the endpoint
  CHECK(seen[1].body_bytes == 200'000);
  const auto off = run.Named("forward.expect_off");
  REQUIRE(off.size() == 1);
  CHECK(off[0].status == 417);
  CHECK(off[0].reason == "expectation_failed");
  const auto& c = run.sink().counters();
  CHECK(c.expect_refusals.load() == 1);
  CHECK(c.expect_off.load() == 1);
  CHECK(c.chunks_acked.load() == 2);
  CHECK(run.Named("forward.backpressure").empty());
}

// The twin: a 417 to a request that carried no Expect is a permanent error, as before.
TEST_CASE("A417WithoutExpectIsAPermanentError") {
  const auto dir = CentralProcess::ScratchDir("it_breaks_417_plain");
  const auto path = dir / "p.ndjson";
  fwdsink::test::WriteRows(path, 100, 50);  // 5 kB: below the threshold, no Expect
  RawServer server({Mode::kExpectationFailed, Mode::kRead});
  fwdsink::test::SinkRun run(SinkOptions(server.url()));
  const auto r = run.Forward("p", path);
  CHECK(r.outcome != fwdsink::Outcome::kDelivered);
  CHECK(r.status == 417);
  CHECK(run.Named("forward.expect_off").empty());
  CHECK(run.sink().counters().expect_off.load() == 0);
  const auto seen = server.WaitFor(1);
  REQUIRE(seen.size() >= 1);
  CHECK_FALSE(HasExpect(seen[0].head));
}
