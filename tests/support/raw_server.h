// SPDX-License-Identifier: Apache-2.0
// RawServer: a one-connection-at-a-time HTTP/1.1 server on 127.0.0.1 written on bare
// sockets, for what cpp-httplib's server cannot be made to do: answer from the head
// before the body, withhold 100 Continue, answer 417, reset or close a connection
// in the middle of a request. Each request gets the next Mode of its script.
//
// Threading: the server runs its own thread; WaitFor(), url() and connections() may be
// called from the test thread at any time.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/transport.h"
#include "support/it_support.h"
#include "support/ports.h"

namespace fwdsink::test {

using namespace std::chrono_literals;

using RawClock = std::chrono::steady_clock;

inline const std::string kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
inline const std::string kThrottled =
    "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}";

inline bool HasExpect(const std::string& head) {
  return head.find("\r\nExpect: 100-continue\r\n") != std::string::npos;
}

// What the raw server saw of one request.
struct Seen {
  std::string head;
  std::uint64_t body_bytes = 0;       // body bytes read on the connection after the head
  RawClock::duration head_to_body{};  // from the end of the head to the first body byte
  bool closed_after_answer = false;   // the client closed the connection after a refusal
};

inline const std::string kExpectationFailed =
    "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 2\r\n\r\n{}";

// One connection at a time. Each request is answered by the next mode: kRefuse answers
// 429 as soon as the head is in, then counts what still arrives until the client closes;
// kRead reads the Content-Length body (never sending 100 Continue) and answers 200;
// kContinue says 100 Continue first, then does the same. The broken ones (the network
// as it really is, @ref LLP 0014#only-close-aborts) end the connection: kResetMidBody
// reads half the body and resets; kCloseAfterHead closes once the head is in;
// kContinueThenClose says 100 Continue and closes; kContinueThen429Reset says 100,
// answers 429 and resets; kExpectationFailed answers 417 to the head and closes;
// kStallMidBody reads half the body and then reads nothing more until the client goes.
class RawServer {
 public:
  enum class Mode {
    kRefuse,
    kRead,
    kContinue,
    kResetMidBody,
    kCloseAfterHead,
    kContinueThenClose,
    kContinueThen429Reset,
    kExpectationFailed,
    kStallMidBody,
  };
  explicit RawServer(std::deque<Mode> modes) : modes_(std::move(modes)) {
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
  // Waits (bounded) until `n` requests are complete, and returns what was seen.
  std::vector<Seen> WaitFor(std::size_t n) {
    const auto until = RawClock::now() + kPollTimeout;
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (seen_.size() >= n || RawClock::now() > until) return seen_;
      }
      std::this_thread::sleep_for(5ms);
    }
  }

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
  // Reads into `in` until it holds `want` bytes; -1 timeout, 0 peer closed, 1 done.
  int ReadUntil(int c, std::string& in, std::size_t want, std::chrono::milliseconds patience) {
    const auto until = RawClock::now() + patience;
    char buf[65536];
    while (in.size() < want && !stop_) {
      if (RawClock::now() > until) return -1;
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return 0;
      in.append(buf, static_cast<std::size_t>(n));
    }
    return 1;
  }
  void Serve(int c) {
    std::string in;
    while (!stop_) {
      std::size_t end = std::string::npos;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        if (ReadUntil(c, in, in.size() + 1, 10s) != 1) return;
      }
      Seen s;
      s.head = in.substr(0, end + 4);
      in.erase(0, end + 4);
      const auto head_at = RawClock::now();
      Mode mode = Mode::kRead;
      {
        std::lock_guard lock(mu_);
        if (!modes_.empty()) mode = modes_.front(), modes_.pop_front();
      }
      const auto at_length = s.head.find("Content-Length: ");
      const std::size_t want =
          at_length == std::string::npos ? 0 : std::stoul(s.head.substr(at_length + 16));
      if (Broken(c, mode, s, in, want)) return;
      if (mode == Mode::kRefuse) {
        ::send(c, kThrottled.data(), kThrottled.size(), MSG_NOSIGNAL);
        // Whatever comes now is body bytes the refusal should have saved.
        s.closed_after_answer = ReadUntil(c, in, SIZE_MAX, 10s) == 0;
        s.body_bytes = in.size();
        Record(std::move(s));
        return;
      }
      if (mode == Mode::kContinue) {
        const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
        ::send(c, go.data(), go.size(), MSG_NOSIGNAL);
      }
      const auto at = s.head.find("Content-Length: ");
      const std::size_t length = at == std::string::npos ? 0 : std::stoul(s.head.substr(at + 16));
      if (ReadUntil(c, in, 1, 10s) != 1 && length > 0) return;
      s.head_to_body = RawClock::now() - head_at;
      if (ReadUntil(c, in, length, 10s) != 1) return;
      s.body_bytes = length;
      in.erase(0, length);
      ::send(c, kOk.data(), kOk.size(), MSG_NOSIGNAL);
      Record(std::move(s));
    }
  }
  // Carries out a broken mode; returns true when it ended the connection.
  bool Broken(int c, Mode mode, Seen& s, std::string& in, std::size_t length) {
    const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
    switch (mode) {
      case Mode::kResetMidBody:
      case Mode::kStallMidBody:
        if (HasExpect(s.head)) ::send(c, go.data(), go.size(), MSG_NOSIGNAL);
        (void)ReadUntil(c, in, length / 2, 10s);
        s.body_bytes = std::min(in.size(), length);
        Record(s);
        if (mode == Mode::kStallMidBody) {
          // Reads nothing more: the client's write blocks once the buffers are full,
          // until it goes.
          for (;;) {
            pollfd p{c, POLLRDHUP, 0};
            if (stop_ || (::poll(&p, 1, 20) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))))
              break;
          }
          return true;
        }
        Reset(c);
        return true;
      case Mode::kCloseAfterHead: Record(s); return true;
      case Mode::kContinueThenClose:
        ::send(c, go.data(), go.size(), MSG_NOSIGNAL);
        Record(s);
        return true;
      case Mode::kContinueThen429Reset:
        ::send(c, go.data(), go.size(), MSG_NOSIGNAL);
        ::send(c, kThrottled.data(), kThrottled.size(), MSG_NOSIGNAL);
        Record(s);
        Reset(c);
        return true;
      case Mode::kExpectationFailed:
        ::send(c, kExpectationFailed.data(), kExpectationFailed.size(), MSG_NOSIGNAL);
        Record(s);
        return true;
      default: return false;
    }
  }
  static void Reset(int c) {
    const linger rst{.l_onoff = 1, .l_linger = 0};
    ::setsockopt(c, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
  }
  void Record(Seen s) {
    std::lock_guard lock(mu_);
    seen_.push_back(std::move(s));
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::deque<Mode> modes_;  // guarded by mu_
  std::vector<Seen> seen_;  // guarded by mu_
  std::thread thread_;
};

// A transport to `url` with short connect and read timeouts for the raw servers.
inline std::unique_ptr<HttpTransport> MakeTransport(const std::string& url,
                                                    TransportOptions o = {}) {
  o.connect_timeout = 2s;
  o.read_timeout = 10s;
  auto t = HttpTransport::Create(url, o);
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  return std::move(*t);
}

}  // namespace fwdsink::test
