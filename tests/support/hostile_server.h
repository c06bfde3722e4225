// SPDX-License-Identifier: Apache-2.0
// HostileServer: a raw TCP server on 127.0.0.1 that misbehaves on purpose, for the
// deadline tests (LLP 0023#deadlines): it drips its response headers one byte at a time,
// or reads the request body at a crawl. It records how many bytes it received and when
// each connection was closed by the client, so a test can check that an abandoned
// attempt really closed its connection rather than kept draining into the server.
//
// Threads: an accept thread plus one thread per connection; the accessors may be
// called from the test thread at any time. Stop() (or the destructor) ends them all.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/ports.h"

namespace fwdsink::test {

class HostileServer {
 public:
  enum class Mode {
    kDripHeaders,  // read what comes, then send "HTTP/1.1 200 OK..." one byte per period
    kSlowRead,     // read `read_bytes` per period, never answer
  };

  HostileServer(Mode mode, std::chrono::milliseconds period, std::size_t read_bytes = 1024)
      : mode_(mode), period_(period), read_bytes_(read_bytes) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (mode_ == Mode::kSlowRead) {
      const int small = 4096;  // inherited by accepted sockets: the crawl shows at once
      ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }
    port_ = ListenOnLoopback(listen_fd_, 16);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;
  ~HostileServer() { Stop(); }

  void Stop() {
    if (stop_.exchange(true)) return;
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/ingest"; }
  std::uint64_t bytes_received() const { return bytes_.load(); }
  int connections() const { return connections_.load(); }
  // Connections the client has closed (EOF or reset seen) so far.
  int closed_by_client() const { return closed_.load(); }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      connections_.fetch_add(1);
      std::lock_guard lock(mu_);
      threads_.emplace_back([this, fd] {
        mode_ == Mode::kDripHeaders ? Drip(fd) : Crawl(fd);
        ::close(fd);
      });
    }
  }

  // Reads up to `max` bytes if any arrive within `wait`; false once the peer is gone.
  bool ReadSome(int fd, std::size_t max, std::chrono::milliseconds wait) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return true;
    std::vector<char> buf(max);
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) {
      closed_.fetch_add(1);
      return false;
    }
    bytes_.fetch_add(static_cast<std::uint64_t>(n));
    return true;
  }

  void Drip(int fd) {
    const std::string response =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    std::size_t sent = 0;
    while (!stop_) {
      if (!ReadSome(fd, 1 << 16, period_)) return;  // the period passes in here
      if (sent < response.size() && !stop_) {
        if (::send(fd, response.data() + sent, 1, MSG_NOSIGNAL) != 1) {
          closed_.fetch_add(1);
          return;
        }
        ++sent;
      }
    }
  }

  void Crawl(int fd) {
    while (!stop_) {
      const auto next = std::chrono::steady_clock::now() + period_;
      if (!ReadSome(fd, read_bytes_, period_)) return;
      std::this_thread::sleep_until(next);
    }
  }

  const Mode mode_;
  const std::chrono::milliseconds period_;
  const std::size_t read_bytes_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> threads_;  // guarded by mu_
};

}  // namespace fwdsink::test
