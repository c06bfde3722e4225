// SPDX-License-Identifier: Apache-2.0
// A userspace TCP delay proxy for the WAN-latency benchmarks (this kernel has no
// netem): every byte is held for --delay-ms in each direction, so a request/response
// sees 2 x delay of added round trip. Bandwidth is not limited: each direction reads
// as fast as it can and writes each piece when its time has come.
//
//   fwdsink-bench-delay-proxy --listen-port-file F --to 127.0.0.1:PORT --delay-ms 50
//
// Listens on 127.0.0.1, an ephemeral port written to F. Runs until killed. Two threads
// per direction per connection (a reader and a delayed writer); good for a handful of
// keep-alive connections, which is what the benchmark opens.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Piece {
  Clock::time_point due;
  std::string bytes;  // empty: the reader saw EOF or an error
};

// One direction: `from` is read into timed pieces, written to `to` when due.
void Pump(int from, int to, std::chrono::milliseconds delay) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Piece> queue;
  std::thread writer([&] {
    for (;;) {
      Piece p;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !queue.empty(); });
        p = std::move(queue.front());
        queue.pop_front();
      }
      std::this_thread::sleep_until(p.due);
      if (p.bytes.empty()) {
        ::shutdown(to, SHUT_WR);
        return;
      }
      std::size_t off = 0;
      while (off < p.bytes.size()) {
        const ssize_t n = ::send(to, p.bytes.data() + off, p.bytes.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return;
        off += static_cast<std::size_t>(n);
      }
    }
  });
  std::vector<char> buf(256 * 1024);
  for (;;) {
    const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
    Piece p{Clock::now() + delay,
            n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : ""};
    {
      std::lock_guard lock(mu);
      queue.push_back(std::move(p));
    }
    cv.notify_one();
    if (n <= 0) break;
  }
  writer.join();
}

int ConnectTo(const sockaddr_in& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void Serve(int client, sockaddr_in upstream, std::chrono::milliseconds delay) {
  const int server = ConnectTo(upstream);
  if (server < 0) {
    ::close(client);
    return;
  }
  std::thread up([=] { Pump(client, server, delay); });
  Pump(server, client, delay);
  up.join();
  ::close(server);
  ::close(client);
}

}  // namespace

int main(int argc, char** argv) {
  std::string port_file, to;
  long delay_ms = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--listen-port-file")
      port_file = argv[i + 1];
    else if (a == "--to")
      to = argv[i + 1];
    else if (a == "--delay-ms")
      delay_ms = std::strtol(argv[i + 1], nullptr, 10);
  }
  const auto colon = to.rfind(':');
  if (port_file.empty() || colon == std::string::npos || delay_ms < 0) {
    std::fprintf(stderr, "usage: %s --listen-port-file F --to HOST:PORT --delay-ms N\n", argv[0]);
    return 64;
  }
  sockaddr_in upstream{};
  upstream.sin_family = AF_INET;
  upstream.sin_port = htons(static_cast<std::uint16_t>(std::atoi(to.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, to.substr(0, colon).c_str(), &upstream.sin_addr) != 1) return 64;

  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(lfd, 64) != 0) {
    std::perror("bind/listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  {
    std::ofstream(port_file + ".tmp") << ntohs(addr.sin_port) << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  const auto delay = std::chrono::milliseconds{delay_ms};
  for (;;) {
    const int c = ::accept(lfd, nullptr, nullptr);
    if (c < 0) continue;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread(Serve, c, upstream, delay).detach();
  }
}
