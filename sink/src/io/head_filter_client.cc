// SPDX-License-Identifier: Apache-2.0
// Hand-written because cpp-httplib 0.11.4 cannot do it: its response parser skips a
// "100 Continue" only when no header follows it (and takes 102, 103 or a 100 with a
// header for the final response), and it reads response headers without a bound. Its
// one seam is the virtual process_socket(), which hands each request's Stream to the
// parser: ours wraps that Stream. For https the library's own TLS stream is not in its
// header, so TlsStream below reads and writes the SSL* the library set up, with the
// same timeouts. @ref LLP 0023#response-heads
// Nor can its client send "Expect: 100-continue" and wait (it writes head and body in
// one go): the same wrapper holds the body back. @ref LLP 0017#expect-continue
#include "io/head_filter_client.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string_view>

#include "io/http_rules.h"
#include "io/response_head.h"

namespace fwdsink::internal {
namespace {

int TimeoutMs(time_t sec, time_t usec) {
  const long long ms = static_cast<long long>(sec) * 1000 + usec / 1000;
  return static_cast<int>(std::clamp<long long>(ms, 0, std::numeric_limits<int>::max()));
}

// Returns 1 when `events` (or a hang-up or error) are pending, 0 on timeout, -1 when
// poll() itself failed.
int Poll(socket_t sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0 ? 1 : 0;
}

bool WaitFor(socket_t sock, short events, int timeout_ms) {
  return Poll(sock, events, timeout_ms) > 0;
}

// Reads what the peer has sent within a time limit and never blocks past it: > 0 bytes
// read, 0 nothing complete arrived in time, -1 the connection closed or failed.
class TimedReader {
 public:
  virtual ssize_t ReadWithin(char* ptr, size_t size, int timeout_ms) = 0;

 protected:
  ~TimedReader() = default;
};

// For cpp-httplib's plain socket stream: once poll() says readable, its recv() returns
// at once.
class PlainReader final : public TimedReader {
 public:
  explicit PlainReader(httplib::Stream& stream) : stream_(stream) {}
  ssize_t ReadWithin(char* ptr, size_t size, int timeout_ms) override {
    const int ready = Poll(stream_.socket(), POLLIN, timeout_ms);
    if (ready <= 0) return ready;
    const ssize_t got = stream_.read(ptr, size);
    return got > 0 ? got : -1;
  }

 private:
  httplib::Stream& stream_;
};

// Watches the request head as cpp-httplib writes it: where it ends (the empty line) and
// whether it asks "Expect: 100-continue". cpp-httplib writes "Name: value" lines.
struct RequestHeadMatcher {
  static constexpr std::size_t kLineCap = 64;  // longer lines are not the Expect field
  std::string line;
  bool long_line = false;
  bool expect = false;
  bool done = false;

  // Takes bytes up to the end of the head; returns how many it took.
  std::size_t Take(std::string_view bytes) {
    std::size_t used = 0;
    while (!done && used < bytes.size()) {
      const char c = bytes[used++];
      if (c != '\n') {
        if (line.size() < kLineCap)
          line.push_back(c);
        else
          long_line = true;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      done = line.empty() && !long_line;
      if (!long_line) expect = expect || IsExpectContinue(line);
      line.clear();
      long_line = false;
    }
    return used;
  }

  static bool IsExpectContinue(std::string_view field) {
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view value = field.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    return http_rules::IEquals(field.substr(0, colon), "expect") &&
           http_rules::IEquals(value, "100-continue");
  }
};

// Passes writes through, holding the body of an "Expect: 100-continue" request back
// until the server's 100 Continue or the wait's end, and swallowing it when a final
// response comes first; serves reads from the scanner's final head (and the bytes that
// came with it) once the interim heads are gone, then from the stream itself.
// @ref LLP 0017#expect-continue
class HeadFilterStream final : public httplib::Stream {
 public:
  HeadFilterStream(httplib::Stream& inner, TimedReader& reader,
                   std::chrono::milliseconds continue_wait, HeadReport& report)
      : inner_(inner), reader_(reader), continue_wait_(continue_wait), report_(report) {}

  bool is_readable() const override { return pos_ < pending_.size() || inner_.is_readable(); }
  bool is_writable() const override { return inner_.is_writable(); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_remote_ip_and_port(ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_local_ip_and_port(ip, port);
  }
  socket_t socket() const override { return inner_.socket(); }

  ssize_t write(const char* ptr, size_t size) override {
    if (phase_ == Phase::kHead) {
      report_.phase = WirePhase::kHead;
      return WriteHead(ptr, size);
    }
    if (phase_ == Phase::kAwait) {
      report_.phase = WirePhase::kAwaitContinue;
      if (!AwaitContinue()) return -1;
    }
    // The answer came first: cpp-httplib is told the body went out, and never sends it.
    if (phase_ == Phase::kWithheld) return static_cast<ssize_t>(size);
    report_.phase = WirePhase::kBody;
    return inner_.write(ptr, size);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (report_.phase != WirePhase::kResponseBody) report_.phase = WirePhase::kResponseHead;
    while (scanner_.state() == ResponseHeadScanner::State::kReading) {
      char buf[4096];
      const ssize_t n = inner_.read(buf, sizeof buf);
      if (n <= 0) return n;
      if (!Absorb(std::string_view(buf, static_cast<std::size_t>(n)))) return -1;
    }
    if (scanner_.state() == ResponseHeadScanner::State::kTooLarge) return -1;
    if (pos_ < pending_.size()) {
      const std::size_t n = std::min(size, pending_.size() - pos_);
      std::copy_n(pending_.data() + pos_, n, ptr);
      pos_ += n;
      if (pos_ == pending_.size()) std::string().swap(pending_), pos_ = 0;
      return static_cast<ssize_t>(n);
    }
    return inner_.read(ptr, size);
  }

 private:
  enum class Phase {
    kHead,      // writing the request head
    kAwait,     // head written, it asked for 100-continue: the body waits
    kBody,      // the body goes out
    kWithheld,  // a final response came before 100 Continue: no body
  };

  // Writes no further than the end of the head, so the body's first write can wait.
  ssize_t WriteHead(const char* ptr, size_t size) {
    RequestHeadMatcher trial = matcher_;
    const std::size_t part = trial.Take(std::string_view(ptr, size));
    const ssize_t put = inner_.write(ptr, part);
    if (put <= 0) return put;
    if (static_cast<std::size_t>(put) == part) {
      matcher_ = std::move(trial);
    } else {
      matcher_.Take(std::string_view(ptr, static_cast<std::size_t>(put)));
    }
    if (matcher_.done) phase_ = matcher_.expect ? Phase::kAwait : Phase::kBody;
    return put;
  }

  // Reads the server's answer to the head for up to continue_wait_ (curl waits 1 s: a
  // server that ignores Expect must still get the body). Returns false when the
  // connection failed (an Abort() and the deadline watchdog shut it down this way).
  bool AwaitContinue() {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point until = Clock::now() + continue_wait_;
    while (phase_ == Phase::kAwait) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
      if (left.count() <= 0) {
        report_.continue_timed_out = true;
        phase_ = Phase::kBody;
        break;
      }
      char buf[4096];
      const int ms = static_cast<int>(std::min<long long>(left.count(), 60'000));
      const ssize_t n = reader_.ReadWithin(buf, sizeof buf, ms);
      if (n < 0) return false;
      if (n == 0) continue;
      if (!Absorb(std::string_view(buf, static_cast<std::size_t>(n)))) return false;
      if (scanner_.state() == ResponseHeadScanner::State::kFinal) {
        phase_ = Phase::kWithheld;
        report_.body_withheld = true;
      } else if (scanner_.continued()) {
        return TakeWhatFollowsContinue();
      }
    }
    return true;
  }

  // A server may say 100 Continue and refuse at once after it (nginx does, when it
  // discards a body it refused): take what is already here before the body goes.
  bool TakeWhatFollowsContinue() {
    phase_ = Phase::kBody;
    for (;;) {
      char buf[4096];
      const ssize_t n = reader_.ReadWithin(buf, sizeof buf, 0);
      if (n < 0) return false;
      if (n == 0) return true;
      if (!Absorb(std::string_view(buf, static_cast<std::size_t>(n)))) return false;
      if (scanner_.state() == ResponseHeadScanner::State::kFinal) {
        phase_ = Phase::kWithheld;
        report_.body_withheld = true;
        return true;
      }
    }
  }

  // Feeds bytes off the wire to the scanner; false once the heads are too large.
  bool Absorb(std::string_view got) {
    const std::size_t used = scanner_.Feed(got);
    report_.interim = scanner_.interim();
    if (scanner_.state() == ResponseHeadScanner::State::kTooLarge) {
      report_.too_large = true;
      return false;  // cpp-httplib fails the request and closes the socket
    }
    if (scanner_.state() == ResponseHeadScanner::State::kFinal) {
      pending_ = scanner_.final_head();
      pending_.append(got.substr(used));
    }
    return true;
  }

  httplib::Stream& inner_;
  TimedReader& reader_;
  const std::chrono::milliseconds continue_wait_;
  HeadReport& report_;
  Phase phase_ = Phase::kHead;
  RequestHeadMatcher matcher_;
  ResponseHeadScanner scanner_;
  std::string pending_;  // the final head and what followed it, not yet read
  std::size_t pos_ = 0;
};

// The TLS connection cpp-httplib set up (blocking socket, SSL* connected), read and
// written with its timeouts, as its SSLSocketStream does.
class TlsStream final : public httplib::Stream, public TimedReader {
 public:
  TlsStream(socket_t sock, SSL* ssl, int read_ms, int write_ms)
      : sock_(sock), ssl_(ssl), read_ms_(read_ms), write_ms_(write_ms) {}

  bool is_readable() const override {
    return SSL_pending(ssl_) > 0 || WaitFor(sock_, POLLIN, read_ms_);
  }
  bool is_writable() const override { return WaitFor(sock_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    const int n = static_cast<int>(std::min<size_t>(size, std::numeric_limits<int>::max()));
    for (;;) {
      if (SSL_pending(ssl_) == 0 && !WaitFor(sock_, POLLIN, read_ms_)) return -1;
      const int got = SSL_read(ssl_, ptr, n);
      if (got > 0) return got;
      const int err = SSL_get_error(ssl_, got);
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      if (err != SSL_ERROR_WANT_READ) return -1;  // a renegotiation write, an error
    }
  }
  // One non-blocking SSL_read: on a blocking socket, bytes that are only a session
  // ticket or part of a record would block it past the limit.
  ssize_t ReadWithin(char* ptr, size_t size, int timeout_ms) override {
    if (SSL_pending(ssl_) == 0) {
      const int ready = Poll(sock_, POLLIN, timeout_ms);
      if (ready <= 0) return ready;
    }
    const int n = static_cast<int>(std::min<size_t>(size, std::numeric_limits<int>::max()));
    const int flags = ::fcntl(sock_, F_GETFL);
    if (flags < 0 || ::fcntl(sock_, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
    const int got = SSL_read(ssl_, ptr, n);
    const int err = got > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, got);
    ::fcntl(sock_, F_SETFL, flags);
    if (got > 0) return got;
    return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? 0 : -1;
  }
  ssize_t write(const char* ptr, size_t size) override {
    const int n = static_cast<int>(std::min<size_t>(size, std::numeric_limits<int>::max()));
    for (;;) {
      if (!WaitFor(sock_, POLLOUT, write_ms_)) return -1;
      const int put = SSL_write(ssl_, ptr, n);
      if (put > 0) return put;
      if (SSL_get_error(ssl_, put) != SSL_ERROR_WANT_WRITE) return -1;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { Peer(ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Peer(ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  static void Peer(std::string& ip, int& port) {  // not used by the client
    ip.clear();
    port = 0;
  }
  const socket_t sock_;
  SSL* const ssl_;
  const int read_ms_, write_ms_;
};

class PlainClient final : public httplib::ClientImpl {
 public:
  PlainClient(const std::string& host, int port, std::chrono::milliseconds continue_wait,
              HeadReport& report)
      : httplib::ClientImpl(host, port), continue_wait_(continue_wait), report_(report) {}

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    report_ = {};
    report_.phase = WirePhase::kHead;
    return httplib::detail::process_client_socket(
        socket.sock, read_timeout_sec_, read_timeout_usec_, write_timeout_sec_, write_timeout_usec_,
        [&](httplib::Stream& strm) {
          PlainReader reader(strm);
          HeadFilterStream filtered(strm, reader, continue_wait_, report_);
          return callback(filtered);
        });
  }
  const std::chrono::milliseconds continue_wait_;
  HeadReport& report_;
};

class TlsClient final : public httplib::SSLClient {
 public:
  TlsClient(const std::string& host, int port, const std::string& cert, const std::string& key,
            std::chrono::milliseconds continue_wait, HeadReport& report)
      : httplib::SSLClient(host, port, cert, key), continue_wait_(continue_wait), report_(report) {}

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    report_ = {};
    report_.phase = WirePhase::kHead;
    TlsStream tls(socket.sock, socket.ssl, TimeoutMs(read_timeout_sec_, read_timeout_usec_),
                  TimeoutMs(write_timeout_sec_, write_timeout_usec_));
    HeadFilterStream filtered(tls, tls, continue_wait_, report_);
    return callback(filtered);
  }
  const std::chrono::milliseconds continue_wait_;
  HeadReport& report_;
};

}  // namespace

std::unique_ptr<httplib::ClientImpl> MakeHeadFilterClient(bool https, const std::string& host,
                                                          int port,
                                                          const std::string& client_cert_file,
                                                          const std::string& client_key_file,
                                                          std::chrono::milliseconds continue_wait,
                                                          HeadReport& report) {
  if (https) {
    return std::make_unique<TlsClient>(host, port, client_cert_file, client_key_file, continue_wait,
                                       report);
  }
  return std::make_unique<PlainClient>(host, port, continue_wait, report);
}

}  // namespace fwdsink::internal
