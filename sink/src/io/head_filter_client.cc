// SPDX-License-Identifier: Apache-2.0
// Hand-written because cpp-httplib 0.11.4 cannot do it: its response parser skips a
// "100 Continue" only when no header follows it (and takes 102, 103 or a 100 with a
// header for the final response), and it reads response headers without a bound. Its
// one seam is the virtual process_socket(), which hands each request's Stream to the
// parser: ours wraps that Stream. For https the library's own TLS stream is not in its
// header, so TlsStream below reads and writes the SSL* the library set up, with the
// same timeouts. @ref LLP 0023#response-heads
#include "io/head_filter_client.h"

#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string_view>

#include "io/response_head.h"

namespace fwdsink::internal {
namespace {

int TimeoutMs(time_t sec, time_t usec) {
  const long long ms = static_cast<long long>(sec) * 1000 + usec / 1000;
  return static_cast<int>(std::clamp<long long>(ms, 0, std::numeric_limits<int>::max()));
}

bool WaitFor(socket_t sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
}

// Passes writes through; serves reads from the scanner's final head (and the bytes
// that came with it) once the interim heads are gone, then from the stream itself.
class HeadFilterStream final : public httplib::Stream {
 public:
  HeadFilterStream(httplib::Stream& inner, HeadReport& report) : inner_(inner), report_(report) {}

  bool is_readable() const override { return pos_ < pending_.size() || inner_.is_readable(); }
  bool is_writable() const override { return inner_.is_writable(); }
  ssize_t write(const char* ptr, size_t size) override { return inner_.write(ptr, size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_remote_ip_and_port(ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_local_ip_and_port(ip, port);
  }
  socket_t socket() const override { return inner_.socket(); }

  ssize_t read(char* ptr, size_t size) override {
    while (scanner_.state() == ResponseHeadScanner::State::kReading) {
      char buf[4096];
      const ssize_t n = inner_.read(buf, sizeof buf);
      if (n <= 0) return n;
      const std::string_view got(buf, static_cast<std::size_t>(n));
      const std::size_t used = scanner_.Feed(got);
      report_.interim = scanner_.interim();
      if (scanner_.state() == ResponseHeadScanner::State::kTooLarge) {
        report_.too_large = true;
        return -1;  // cpp-httplib fails the request (Error::Read) and closes the socket
      }
      if (scanner_.state() == ResponseHeadScanner::State::kFinal) {
        pending_ = scanner_.final_head();
        pending_.append(got.substr(used));
      }
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
  httplib::Stream& inner_;
  HeadReport& report_;
  ResponseHeadScanner scanner_;
  std::string pending_;  // the final head and what followed it, not yet read
  std::size_t pos_ = 0;
};

// The TLS connection cpp-httplib set up (blocking socket, SSL* connected), read and
// written with its timeouts, as its SSLSocketStream does.
class TlsStream final : public httplib::Stream {
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
  PlainClient(const std::string& host, int port, HeadReport& report)
      : httplib::ClientImpl(host, port), report_(report) {}

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    report_ = {};
    return httplib::detail::process_client_socket(socket.sock, read_timeout_sec_,
                                                  read_timeout_usec_, write_timeout_sec_,
                                                  write_timeout_usec_, [&](httplib::Stream& strm) {
                                                    HeadFilterStream filtered(strm, report_);
                                                    return callback(filtered);
                                                  });
  }
  HeadReport& report_;
};

class TlsClient final : public httplib::SSLClient {
 public:
  TlsClient(const std::string& host, int port, const std::string& cert, const std::string& key,
            HeadReport& report)
      : httplib::SSLClient(host, port, cert, key), report_(report) {}

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    report_ = {};
    TlsStream tls(socket.sock, socket.ssl, TimeoutMs(read_timeout_sec_, read_timeout_usec_),
                  TimeoutMs(write_timeout_sec_, write_timeout_usec_));
    HeadFilterStream filtered(tls, report_);
    return callback(filtered);
  }
  HeadReport& report_;
};

}  // namespace

std::unique_ptr<httplib::ClientImpl> MakeHeadFilterClient(bool https, const std::string& host,
                                                          int port,
                                                          const std::string& client_cert_file,
                                                          const std::string& client_key_file,
                                                          HeadReport& report) {
  if (https) {
    return std::make_unique<TlsClient>(host, port, client_cert_file, client_key_file, report);
  }
  return std::make_unique<PlainClient>(host, port, report);
}

}  // namespace fwdsink::internal
