// SPDX-License-Identifier: Apache-2.0
// The transport against a raw server on 127.0.0.1 (issue 25 items 6 and 7, LLP
// 0023#response-heads): 1xx interim responses before the final one are skipped whatever
// they carry, on a kept-alive connection too; a server that sends endless response
// headers fails the attempt as headers_too_large at once, and memory stays small.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "fwdsink/transport.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/ports.h"
#include "support/test_files.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::HttpTransport;
using fwdsink::TransportError;
using fwdsink::test::ListenOnLoopback;

// Answers each request on a connection with the next scripted reply; an empty reply
// means "endless headers": a 200 status line, then 4 KiB header lines until the
// client goes away. Counts the header bytes it managed to send.
class RawServer {
 public:
  // `repeat_last`: the last reply answers every request after it.
  explicit RawServer(std::deque<std::string> replies, bool repeat_last = false)
      : replies_(std::move(replies)), repeat_last_(repeat_last) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    port_ = ListenOnLoopback(fd_, 8);
    thread_ = std::thread([this] { Loop(); });
  }
  ~RawServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/ingest"; }
  int connections() const { return connections_.load(); }
  std::uint64_t endless_bytes() const { return endless_bytes_.load(); }
  int requests() const { return requests_.load(); }

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      connections_ += 1;
      Serve(c);
      ::close(c);
    }
  }
  // Reads one request (head and Content-Length body); false when the client is gone.
  bool ReadRequest(int c) {
    std::string in;
    char buf[8192];
    std::size_t need = std::string::npos;
    while (!stop_) {
      const auto end = in.find("\r\n\r\n");
      if (end != std::string::npos && need == std::string::npos) {
        const auto at = in.find("Content-Length: ");
        need = end + 4 + (at == std::string::npos ? 0 : std::stoul(in.substr(at + 16)));
      }
      if (need != std::string::npos && in.size() >= need) return true;
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in.append(buf, static_cast<std::size_t>(n));
    }
    return false;
  }
  void Serve(int c) {
    while (!stop_ && ReadRequest(c)) {
      std::string reply;
      {
        std::lock_guard lock(mu_);
        if (replies_.empty()) return;
        reply = replies_.front();
        if (!repeat_last_ || replies_.size() > 1) replies_.pop_front();
        requests_ += 1;
      }
      if (reply.empty()) return Endless(c);
      if (::send(c, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return;
    }
  }
  void Endless(int c) {
    const std::string status = "HTTP/1.1 200 OK\r\n";
    ::send(c, status.data(), status.size(), MSG_NOSIGNAL);
    const std::string line = "X-Pad: " + std::string(4088, 'p') + "\r\n";
    while (!stop_ && endless_bytes_ < (200u << 20)) {
      if (::send(c, line.data(), line.size(), MSG_NOSIGNAL) < 0) return;
      endless_bytes_ += line.size();
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<std::uint64_t> endless_bytes_{0};
  std::mutex mu_;
  std::deque<std::string> replies_;  // guarded by mu_
  const bool repeat_last_;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

const std::string kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

std::unique_ptr<HttpTransport> Make(const std::string& url) {
  fwdsink::TransportOptions o;
  o.response_timeout = 3s;  // before the fix, a reply read as a body waits this out
  o.read_timeout = 3s;
  auto t = HttpTransport::Create(url, o);
  REQUIRE(t.ok());
  return std::move(*t);
}

fwdsink::TransportResult Post(HttpTransport& t) {
  std::string body = "{\"a\":1}\n";
  return t.Post({{"Content-Type", "application/x-ndjson"}}, body, "", {});
}

long MaxRssKiB() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("EveryInterimResponseBeforeTheFinalOneIsSkipped") {
  const struct {
    const char* name;
    std::string interim;
  } cases[] = {
      {"103 Early Hints with a header",
       "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"},
      {"102 Processing", "HTTP/1.1 102 Processing\r\n\r\n"},
      {"100 Continue with a header", "HTTP/1.1 100 Continue\r\nX-Why: because\r\n\r\n"},
      {"three in a row",
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
       "HTTP/1.1 103 Early Hints\r\nLink: <b>\r\n\r\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    // Two requests on one kept-alive connection, each behind the interim responses.
    RawServer server({c.interim + kOk, c.interim + kOk});
    auto t = Make(server.url());
    for (int i = 0; i < 2; ++i) {
      const auto r = Post(*t);
      CHECK(r.error == TransportError::kNone);
      CHECK(r.message == "");
      CHECK(r.response.status == 200);
      CHECK(r.response.body_prefix == "{}");
    }
    CHECK(server.connections() == 1);
  }
}

// Twin: a plain final response, and a 429 with its Retry-After, read as before.
TEST_CASE("AFinalResponseWithoutInterimOnesIsReadAsBefore") {
  RawServer server(
      {kOk, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n"});
  auto t = Make(server.url());
  CHECK(Post(*t).response.status == 200);
  const auto r = Post(*t);
  CHECK(r.response.status == 429);
  CHECK(r.response.retry_after == std::optional<std::string>("7"));
}

TEST_CASE("EndlessResponseHeadersFailAsHeadersTooLargeAndMemoryStaysSmall") {
  RawServer server({""});
  auto t = Make(server.url());
  const long rss_before = MaxRssKiB();
  const auto start = std::chrono::steady_clock::now();
  const auto r = Post(*t);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(r.error == TransportError::kHeadersTooLarge);
  CHECK(fwdsink::to_string(r.error) == "headers_too_large");
  CHECK(r.message.find("64 KiB of response headers") != std::string::npos);
  CHECK(took < 2s);  // not the 3 s response deadline
  const long grew = MaxRssKiB() - rss_before;
  MESSAGE("peak RSS grew by " << grew << " KiB; the server sent " << server.endless_bytes()
                              << " header bytes");
  CHECK(grew < 16 * 1024);
  // Twin: the next attempt is a fresh connection and works (the server has no reply
  // left, so it fails as a transport error, not as headers_too_large).
  const auto again = Post(*t);
  CHECK(again.error != TransportError::kHeadersTooLarge);
}

// The case end to end: every answer is a 103 Early Hints with a Link header,
// then the 200. `--once` used to re-send the first chunk forever (stuck after 40 s);
// now each chunk goes once and the run ends clean.
TEST_CASE("TheDaemonDeliversBehindEarlyHintsOncePerChunk") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FWDSINK_TEST_TMP) / "response_head_daemon";
  fs::remove_all(dir);
  const fs::path spool = dir / "spool";
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  (void)fwdsink::test::WriteRows(spool / "ready" / "p.ndjson", 40, 100);  // 4 chunks of 1 KiB
  RawServer server({"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" + kOk},
                   /*repeat_last=*/true);
  fwdsink::test::DaemonProcess d(
      dir, "once",
      {"forward", "--once", "--spool", spool.string(), "--url", server.url(), "--chunk-bytes", "1k",
       "--compression", "identity", "--log-json",
       // The raw server serves one connection at a time: one chunk at a time (the limit
       // starts at 4 since issue 39, LLP 0018#start).
       "--window", "1"});
  CHECK(d.Wait(20s) == std::optional<int>(0));
  CHECK(server.requests() == 4);
  CHECK_FALSE(fs::exists(spool / "ready" / "p.ndjson"));
}
