// SPDX-License-Identifier: Apache-2.0
// Hand-written, not cpp-httplib's Server: in 0.11.4 each connection holds a thread of a
// fixed pool for as long as it trickles bytes (its read timeout is per read), stop()
// joins those threads, and it has no connection limit; eight slow clients blocked
// /healthz and SIGTERM waited for them. @ref LLP 0023#metrics-server
#include "http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace fwdsink_cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd = -1;
  Clock::time_point deadline;
  std::string in{};   // the request so far
  std::string out{};  // the answer left to send
  bool answered = false;
};

std::string_view StatusText(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

std::string Render(const HttpAnswer& a, bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " +
                    std::string(StatusText(a.status)) + "\r\nContent-Type: " + a.content_type +
                    "\r\nContent-Length: " + std::to_string(a.body.size()) +
                    "\r\nConnection: close\r\n\r\n";
  if (!head) out += a.body;
  return out;
}

// The answer to a complete request head `in` (up to the empty line).
std::string Answer(const std::string& in, const HttpListener::Handler& handler) {
  const auto line_end = in.find("\r\n");
  const std::string line = in.substr(0, line_end);
  const auto sp1 = line.find(' ');
  const auto sp2 = line.find(' ', sp1 == std::string::npos ? sp1 : sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos ||
      line.compare(sp2 + 1, 5, "HTTP/") != 0) {
    return Render({.status = 400, .body = "bad request\n"}, false);
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (method != "GET" && method != "HEAD") {
    return Render({.status = 405, .body = "only GET\n"}, false);
  }
  if (const auto q = path.find('?'); q != std::string::npos) path.resize(q);
  return Render(handler(path), method == "HEAD");
}

void Close(Connection& c) {
  ::close(c.fd);
  c.fd = -1;
}

// Reads what there is; answers once the head is complete. False: close it.
bool OnReadable(Connection& c, const HttpListenerLimits& limits,
                const HttpListener::Handler& handler) {
  char buf[4096];
  const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
  if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EINTR);
  if (c.answered) return true;  // bytes after the request: ignored
  c.in.append(buf, static_cast<std::size_t>(n));
  const auto end = c.in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (c.in.size() <= limits.max_request_bytes) return true;
    c.out = Render({.status = 431, .body = "request too large\n"}, false);
  } else {
    c.out = Answer(c.in.substr(0, end + 2), handler);
  }
  c.answered = true;
  c.in.clear();
  return true;
}

// Sends what it can; false when done or broken.
bool OnWritable(Connection& c) {
  const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  c.out.erase(0, static_cast<std::size_t>(n));
  return !c.out.empty();
}

}  // namespace

std::unique_ptr<HttpListener> HttpListener::Bind(const std::string& host, int port, Handler handler,
                                                 HttpListenerLimits limits, std::string& error) {
  // A literal or a name (as cpp-httplib's Server took it): the first address it has.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0 || !found) {
    error = "'" + host + "': " + ::gai_strerror(rc);
    return nullptr;
  }
  sockaddr_storage addr{};
  socklen_t len = found->ai_addrlen;
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  std::unique_ptr<HttpListener> l(new HttpListener());
  l->handler_ = std::move(handler);
  l->limits_ = limits;
  l->listen_fd_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // SO_REUSEADDR only: with SO_REUSEPORT a second daemon would share a taken port
  // silently and answer half the scrapes. @ref LLP 0025#metrics
  const int yes = 1;
  if (l->listen_fd_ < 0 ||
      ::setsockopt(l->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0 ||
      ::bind(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(l->listen_fd_, 64) != 0 || ::pipe2(l->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  len = sizeof addr;
  ::getsockname(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  l->port_ = ntohs(addr.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return l;
}

HttpListener::~HttpListener() {
  Stop();
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void HttpListener::Start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void HttpListener::Stop() {
  if (!thread_.joinable()) return;
  const char b = 1;
  (void)!::write(wake_[1], &b, 1);
  thread_.join();
}

void HttpListener::Loop() {
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = Clock::now();
    int timeout_ms = -1;
    fds.assign({{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const Connection& c : conns) {
      fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now).count();
      const int ms = static_cast<int>(std::max<long long>(left, 0));
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // Stop()
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Connection& c = conns[i];
      const short ev = fds[i + 2].revents;
      bool keep = true;
      if (ev & POLLOUT) {
        keep = OnWritable(c);
      } else if (ev & (POLLIN | POLLHUP | POLLERR)) {
        keep = OnReadable(c, limits_, handler_);
      }
      if (!keep || Clock::now() >= c.deadline) Close(c);
    }
    std::erase_if(conns, [](const Connection& c) { return c.fd < 0; });
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        if (conns.size() >= limits_.max_connections) {
          ::close(fd);  // refused: the slots are taken
          continue;
        }
        Connection c;
        c.fd = fd;
        c.deadline = Clock::now() + limits_.request_timeout;
        conns.push_back(std::move(c));
      }
    }
  }
  for (Connection& c : conns) Close(c);
}

}  // namespace fwdsink_cli
