// SPDX-License-Identifier: Apache-2.0
// "Expect: 100-continue" on real sockets on 127.0.0.1 (issue 22 item 6, LLP
// 0017#expect-continue, LLP 0011#expect-continue): a server that refuses before the body
// gets no body bytes; below the threshold, or with the threshold 0, no Expect is sent
// and the body goes at once; a server that ignores the header gets the body after the
// wait, over plain TCP and TLS; fwdsink-central answers a throttled request from its
// head and says 100 Continue to one it will read.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <openssl/ssl.h>

#include "fwdsink/transport.h"
#include "support/central_process.h"
#include "support/it_support.h"
#include "support/ports.h"
#include "support/raw_server.h"
#include "support/test_files.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::HttpTransport;
using fwdsink::TransportError;
using fwdsink::TransportOptions;
using fwdsink::test::CentralProcess;
using fwdsink::test::ListenOnLoopback;
using Clock = std::chrono::steady_clock;
using fwdsink::test::HasExpect;
using fwdsink::test::kOk;
using fwdsink::test::RawServer;

constexpr std::size_t kBig = 200 * 1024;  // over the default threshold of 64 KiB
constexpr std::size_t kSmall = 1024;
constexpr auto kContinueWait = 1s;  // the transport's wait for 100 Continue

std::unique_ptr<HttpTransport> Make(const std::string& url, TransportOptions o = {}) {
  return fwdsink::test::MakeTransport(url, std::move(o));
}

// Posts `bytes` (a multiple of 1 KiB) of valid rows, 1 KiB each.
fwdsink::TransportResult Post(HttpTransport& t, std::size_t bytes) {
  REQUIRE(bytes % 1024 == 0);
  std::string body;
  while (body.size() < bytes) body += "{\"p\":\"" + std::string(1015, 'x') + "\"}\n";
  const std::size_t size = body.size();
  auto r = t.Post({{"Content-Type", "application/x-ndjson"}}, body, "", {});
  CHECK(body.size() == size);  // handed back unchanged for a re-send
  return r;
}

}  // namespace

TEST_CASE("ARefusalBeforeTheBodyCostsNoBodyBytes") {
  RawServer server({RawServer::Mode::kRefuse, RawServer::Mode::kRead});
  auto t = Make(server.url());
  const auto refused = Post(*t, kBig);
  REQUIRE(refused.error == TransportError::kNone);
  CHECK(refused.response.status == 429);
  CHECK(refused.response.retry_after == std::optional<std::string>("1"));
  CHECK(refused.body_withheld);
  // The same transport goes on, on a new connection: the refused one was closed.
  const auto accepted = Post(*t, kBig);
  CHECK(accepted.error == TransportError::kNone);
  CHECK(accepted.response.status == 200);
  CHECK_FALSE(accepted.body_withheld);
  const auto seen = server.WaitFor(2);
  REQUIRE(seen.size() == 2);
  CHECK(HasExpect(seen[0].head));
  CHECK(seen[0].body_bytes == 0);
  CHECK(seen[0].closed_after_answer);
  CHECK(seen[1].body_bytes == kBig);
  CHECK(server.connections() == 2);
}

TEST_CASE("ThroughTheSinkARefusedChunkIsResentAndOnlyTheAcceptedBodyCounts") {
  const auto dir = CentralProcess::ScratchDir("it_expect_sink");
  const auto path = dir / "p.ndjson";
  fwdsink::test::WriteRows(path, 4000, 50);  // 200 kB: one chunk over the threshold
  RawServer server({RawServer::Mode::kRefuse, RawServer::Mode::kRead});
  fwdsink::ForwardOptions o;
  o.url = server.url();
  o.compression = fwdsink::Compression::kIdentity;
  // Every large body asks first (a fresh endpoint gets no Expect by default: LLP
  // 0017#expect-continue, integration_expect_likely_test).
  o.expect_continue = fwdsink::ExpectContinue::kAlways;
  fwdsink::test::SinkRun run(o);
  const auto r = run.Forward("p", path);  // 429 with Retry-After: 1, then 200
  CHECK_MESSAGE(r.outcome == fwdsink::Outcome::kDelivered, r.message);
  CHECK(run.acks().size() == 1);
  const auto& c = run.sink().counters();
  CHECK(c.chunks_sent.load() == 2);
  CHECK(c.status_429.load() == 1);
  CHECK(c.bodies_withheld.load() == 1);
  CHECK(c.wire_bytes_sent.load() == 200'000);  // the accepted body only
  const auto seen = server.WaitFor(2);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].body_bytes == 0);
  CHECK(seen[1].body_bytes == 200'000);
}

TEST_CASE("A100ContinueLetsTheBodyGoWithoutTheWait") {
  RawServer server({RawServer::Mode::kContinue});
  auto t = Make(server.url());
  const auto r = Post(*t, kBig);
  CHECK(r.error == TransportError::kNone);
  CHECK(r.response.status == 200);
  const auto seen = server.WaitFor(1);
  REQUIRE(seen.size() == 1);
  CHECK(HasExpect(seen[0].head));
  CHECK(seen[0].body_bytes == kBig);
  // Measured from the phase (the 100 sent), against the wait it must not take.
  CHECK(seen[0].head_to_body < kContinueWait - 200ms);
}

// Twins: no Expect below the threshold or with it off; the body goes without a wait
// (the server sends no 100 and gets it all the same, with no Expect to wait for).
TEST_CASE("BelowTheThresholdOrWithItOffNoExpectIsSentAndTheBodyGoesAtOnce") {
  struct Case {
    const char* name;
    std::uint64_t threshold;
    std::size_t bytes;
  };
  for (const Case c : {Case{"below the default threshold", 64 * 1024, kSmall},
                       Case{"one byte below a threshold", kBig + 1, kBig},
                       Case{"expect_continue_bytes 0", 0, kBig}}) {
    CAPTURE(c.name);
    RawServer server({RawServer::Mode::kRead});
    TransportOptions o;
    o.expect_continue_bytes = c.threshold;
    auto t = Make(server.url(), o);
    const auto r = Post(*t, c.bytes);
    CHECK(r.error == TransportError::kNone);
    CHECK(r.response.status == 200);
    CHECK_FALSE(r.body_withheld);
    const auto seen = server.WaitFor(1);
    REQUIRE(seen.size() == 1);
    CHECK_FALSE(HasExpect(seen[0].head));
    CHECK(seen[0].body_bytes == c.bytes);
  }
  SUBCASE("and at the threshold exactly it is sent") {
    RawServer server({RawServer::Mode::kRefuse});
    TransportOptions o;
    o.expect_continue_bytes = kBig;
    auto t = Make(server.url(), o);
    CHECK(Post(*t, kBig).body_withheld);
    const auto seen = server.WaitFor(1);
    REQUIRE(seen.size() == 1);
    CHECK(HasExpect(seen[0].head));
  }
}

TEST_CASE("AServerThatIgnoresExpectGetsTheBodyAfterTheWaitAndTheChunkIsAcknowledged") {
  SUBCASE("the transport") {
    RawServer server({RawServer::Mode::kRead});
    auto t = Make(server.url());
    const auto r = Post(*t, kBig);
    CHECK(r.error == TransportError::kNone);
    CHECK(r.response.status == 200);
    CHECK_FALSE(r.body_withheld);
    const auto seen = server.WaitFor(1);
    REQUIRE(seen.size() == 1);
    CHECK(HasExpect(seen[0].head));
    CHECK(seen[0].body_bytes == kBig);
    // Lower bound only: the body waited for a 100 Continue that never came.
    CHECK(seen[0].head_to_body >= kContinueWait - 100ms);
  }
  SUBCASE("the sink: delivered, one chunk acknowledged") {
    const auto dir = CentralProcess::ScratchDir("it_expect_ignore");
    const auto path = dir / "p.ndjson";
    fwdsink::test::WriteRows(path, 4000, 50);  // 200 kB: one chunk over the threshold
    RawServer server({RawServer::Mode::kRead});
    fwdsink::ForwardOptions o;
    o.url = server.url();
    o.compression = fwdsink::Compression::kIdentity;
    o.expect_continue = fwdsink::ExpectContinue::kAlways;  // it asks on a fresh endpoint
    fwdsink::test::SinkRun run(o);
    const auto r = run.Forward("p", path);
    CHECK_MESSAGE(r.outcome == fwdsink::Outcome::kDelivered, r.message);
    CHECK(run.acks().size() == 1);
    CHECK(run.sink().counters().wire_bytes_sent.load() == 200'000);
    CHECK(run.sink().counters().bodies_withheld.load() == 0);
    const auto seen = server.WaitFor(1);
    REQUIRE(seen.size() == 1);
    CHECK(HasExpect(seen[0].head));
  }
}

// A TLS server that never answers the head: it reads the body when it comes and says
// 200. OpenSSL directly, one connection, so that nothing sends a 100 behind our back.
class RawTlsServer {
 public:
  RawTlsServer(const std::string& crt, const std::string& key) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    REQUIRE(SSL_CTX_use_certificate_file(ctx_, crt.c_str(), SSL_FILETYPE_PEM) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) == 1);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    port_ = ListenOnLoopback(fd_, 4);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawTlsServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    SSL_CTX_free(ctx_);
  }
  int port() const { return port_; }
  std::uint64_t body_bytes() const { return body_bytes_.load(); }

 private:
  void Serve() {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, c);
    std::string in;
    char buf[65536];
    std::size_t need = std::string::npos;
    const bool shook = SSL_accept(ssl) == 1;
    while (shook && (need == std::string::npos || in.size() < need)) {
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
      const auto end = in.find("\r\n\r\n");
      const auto at = in.find("Content-Length: ");
      if (end != std::string::npos && at != std::string::npos) {
        need = end + 4 + std::stoul(in.substr(at + 16));
        body_bytes_ = in.size() - end - 4;
      }
    }
    if (need != std::string::npos && in.size() >= need) {
      SSL_write(ssl, kOk.data(), static_cast<int>(kOk.size()));
    }
    SSL_shutdown(ssl);
    SSL_free(ssl);
    ::close(c);
  }
  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<std::uint64_t> body_bytes_{0};
  std::thread thread_;
};

// Over TLS: an early answer withholds the body; a server that ignores Expect gets the
// body after the wait, also when a TLS 1.3 session ticket arrives during the wait (a
// blocking SSL_read would take the ticket and then block until the response deadline).
TEST_CASE("OverTlsAnEarlyAnswerWithholdsTheBodyAndTheWaitEnds") {
  const auto dir = CentralProcess::ScratchDir("it_expect_tls");
  const auto crt = dir / "c.crt";
  const auto key = dir / "c.key";
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -keyout '" +
      key.string() + "' -out '" + crt.string() + "' >'" + (dir / "openssl.log").string() + "' 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  TransportOptions o;
  o.verify_tls = false;     // a throwaway self-signed certificate
  o.response_timeout = 5s;  // a wait that blocks fails as kTimeout soon after
  SUBCASE("an early 429 from fwdsink-central over https") {
    CentralProcess central(dir / "c");
    REQUIRE(central.Start({"--tls-cert", crt.string(), "--tls-key", key.string(), "--fail-status",
                           "429", "--fail-first", "1"}));
    auto t = Make("https://127.0.0.1:" + std::to_string(central.port()) + "/ingest", o);
    const auto refused = Post(*t, kBig);
    CHECK_MESSAGE(refused.error == TransportError::kNone, refused.message);
    CHECK(refused.response.status == 429);
    CHECK(refused.body_withheld);
    const auto accepted = Post(*t, kBig);  // a new connection, a 100 Continue, stored
    CHECK_MESSAGE(accepted.error == TransportError::kNone, accepted.message);
    CHECK(accepted.response.status == 200);
    CHECK_FALSE(accepted.body_withheld);
    const auto log = central.request_log();
    REQUIRE(log.size() == 2);
    CHECK(log[0]["body_bytes"] == 0);
    CHECK(log[1]["body_bytes"] == kBig);
  }
  SUBCASE("a TLS server that never says 100") {
    RawTlsServer server(crt.string(), key.string());
    auto t = Make("https://127.0.0.1:" + std::to_string(server.port()) + "/ingest", o);
    const auto start = Clock::now();
    const auto r = Post(*t, kBig);
    CHECK_MESSAGE(r.error == TransportError::kNone, r.message);
    CHECK(r.response.status == 200);
    CHECK(Clock::now() - start >= kContinueWait);  // lower bound: it waited, then sent
    CHECK(server.body_bytes() == kBig);
  }
}

// fwdsink-central, driven by a raw client that sends only the head and reads.
TEST_CASE("CentralAnswersAThrottledRequestFromItsHeadAndContinuesOtherwise") {
  const auto dir = CentralProcess::ScratchDir("it_expect_central");
  CentralProcess central(dir / "c");
  // A bucket of 100 kB filling at 1 kB/s: a full one takes any body (it may go into
  // debt), one 1 kB short refuses a body of the bucket's size or more.
  REQUIRE(central.Start({"--rate", "1000", "--burst", "100000"}));
  // Sends the head; after a 100 Continue also the body. Returns the status lines read.
  const auto exchange = [&](std::size_t length) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(central.port()));
    REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const std::string head =
        "POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/x-ndjson\r\nIdempotency-Key: k" +
        std::to_string(length) + "\r\nContent-Length: " + std::to_string(length) +
        "\r\nExpect: 100-continue\r\n\r\n";
    REQUIRE(::send(c, head.data(), head.size(), MSG_NOSIGNAL) == ssize_t(head.size()));
    std::vector<std::string> lines;
    std::string got;
    char buf[4096];
    const auto until = Clock::now() + fwdsink::test::kPollTimeout;
    while (Clock::now() < until) {
      if (const auto end = got.find("\r\n\r\n"); end != std::string::npos) {
        lines.push_back(got.substr(0, got.find("\r\n")));
        got.erase(0, end + 4);
        if (lines.back() != "HTTP/1.1 100 Continue") break;
        std::string body = "{\"a\":\"" + std::string(length - 9, 'x') + "\"}\n";
        REQUIRE(::send(c, body.data(), body.size(), MSG_NOSIGNAL) == ssize_t(length));
        continue;
      }
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(c);
    return lines;
  };
  using Lines = std::vector<std::string>;
  // Twin first: it fits, so the body is asked for, read and stored (1 kB of tokens gone).
  CHECK(exchange(1'000) == Lines{"HTTP/1.1 100 Continue", "HTTP/1.1 200 OK"});
  // Now the bucket is short of what a full bucket holds: the head is enough to refuse.
  CHECK(exchange(200'000) == Lines{"HTTP/1.1 429 Too Many Requests"});
  const auto log = central.request_log();
  REQUIRE(log.size() == 2);
  CHECK(log[0]["status"] == 200);
  CHECK(log[0]["body_bytes"] == 1000);
  CHECK(log[1]["status"] == 429);
  CHECK(log[1]["body_bytes"] == 0);
  const auto stats = central.Stats();
  CHECK(stats["throttled"] == 1);
  CHECK(stats["accepted_chunks"] == 1);
  CHECK(stats["requests"] == 2);
}

namespace {
// A raw HTTP/1.1 client for one request: the head, the answer's status lines, the body.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~RawClient() { ::close(fd_); }
  void Head(std::size_t length, const std::string& key) {
    Send(
        "POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
        "Idempotency-Key: " +
        key + "\r\nContent-Length: " + std::to_string(length) + "\r\nExpect: 100-continue\r\n\r\n");
  }
  // `length` bytes of rows; `valid` false makes the last one malformed.
  void Body(std::size_t length, bool valid = true) {
    std::string body;
    while (body.size() + 1024 <= length) body += "{\"p\":\"" + std::string(1015, 'x') + "\"}\n";
    REQUIRE(body.size() == length);
    if (!valid) body[body.size() - 2] = ',';
    Send(body);
  }
  // Returns the next response's status line ("" when none came in time).
  std::string Status() {
    char buf[4096];
    const auto until = Clock::now() + fwdsink::test::kPollTimeout;
    while (Clock::now() < until) {
      if (const auto end = in_.find("\r\n\r\n"); end != std::string::npos) {
        last_head_ = in_.substr(0, end + 4);
        std::string line = in_.substr(0, in_.find("\r\n"));
        const auto cl = in_.find("Content-Length: ");
        const std::size_t body =
            cl != std::string::npos && cl < end ? std::stoul(in_.substr(cl + 16)) : 0;
        if (in_.size() >= end + 4 + body) {
          in_.erase(0, end + 4 + body);
          return line;
        }
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      in_.append(buf, static_cast<std::size_t>(n));
    }
    return "";
  }

 private:
  void Send(const std::string& s) {
    REQUIRE(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()));
  }
  const int fd_;
  std::string in_;
  std::string last_head_;

 public:
  const std::string& last_head() const { return last_head_; }
};
}  // namespace

// The tokens for a body are taken when its head is let through, so two bodies that
// arrive together cannot both be let through into a bucket that holds one; a body that
// is not stored gives its tokens back.
TEST_CASE("CentralReservesTheBucketForABodyItAskedForAndGivesItBackWhenNotStored") {
  const auto dir = CentralProcess::ScratchDir("it_expect_reserve");
  CentralProcess central(dir / "c");
  REQUIRE(central.Start({"--rate", "1000", "--burst", "100000"}));
  constexpr std::size_t kLen = 60 * 1024;  // one fits the 100 kB bucket, two do not
  SUBCASE("two heads at once: the second is refused while the first body is on its way") {
    RawClient a(central.port());
    RawClient b(central.port());
    a.Head(kLen, "a");
    CHECK(a.Status() == "HTTP/1.1 100 Continue");
    b.Head(kLen, "b");
    CHECK(b.Status() == "HTTP/1.1 429 Too Many Requests");
    // Framed by its length: a client need not wait for the server to close.
    CHECK(b.last_head().find("\r\nContent-Length: ") != std::string::npos);
    a.Body(kLen);
    CHECK(a.Status() == "HTTP/1.1 200 OK");
  }
  SUBCASE("twin: a body refused as malformed gives its tokens back") {
    RawClient a(central.port());
    a.Head(kLen, "a");
    CHECK(a.Status() == "HTTP/1.1 100 Continue");
    a.Body(kLen, /*valid=*/false);
    CHECK(a.Status() == "HTTP/1.1 400 Bad Request");
    RawClient b(central.port());
    b.Head(kLen, "b");
    CHECK(b.Status() == "HTTP/1.1 100 Continue");
    b.Body(kLen);
    CHECK(b.Status() == "HTTP/1.1 200 OK");
  }
}
