// SPDX-License-Identifier: Apache-2.0
// A fault proxy for the network tests: a TCP proxy in front of one HTTP/1.1 server that
// reads the requests and responses going through it and breaks them on demand, the
// way Shopify's Toxiproxy names network faults ("toxics"). Hand-written: Toxiproxy is
// not a Debian package, and ours must see HTTP (where a head ends, 100 Continue) to
// break a request in a named phase. @ref LLP 0014#fault-proxy
//
//   fwdsink-fault-proxy --to 127.0.0.1:PORT --listen-port-file F --control-port-file C
//                       [--delay-ms MS] [--rate BYTES_PER_S] [--ignore-expect] [--log FILE]
//
// Listens on 127.0.0.1 (ephemeral ports written to F and C). Runs until killed or told
// "quit". Link toxics apply to every connection:
//   latency MS      every byte held MS in each direction (2 x MS of round trip)
//   rate BPS        one upload bandwidth cap shared by every connection (0: none); a
//                   connection holds rate x latency + 256 KiB, so one alone fills the link
//   slow_close MS   a connection the server closes is closed to the client MS later
//   down MS         the listener closes and every connection is reset; back after MS
//   ignore_expect 0|1  requests go to the server without their Expect header: a server
//                   that ignores Expect, never says 100 Continue (--ignore-expect: 1)
// Request toxics are armed for the next COUNT requests (after skipping AFTER of them),
// counted across connections in the order their heads arrive:
//   arm TOXIC [COUNT [AFTER]]
//   reset_head      reset after 10 bytes of the request's head
//   reset_await     reset once the whole head is in (with Expect: while the client waits
//                   for 100 Continue; without it, as the body starts)
//   reset_body      reset halfway through the request's body
//   close_head      close (FIN) once the whole head is in, nothing forwarded
//   close_continue  forward the server's 100 Continue, then close (FIN); without
//                   Expect, close once the head is forwarded
//   answer_reset    forward the server's final response head, then reset
//   blackhole       swallow the request, never answer (the client's deadline ends it)
//   down            when the request's head is in, the proxy restarts: as "down 300"
// Other control lines: "clear" (disarm), "stats" (requests=N fired=N connections=N),
// "quit". Each control line gets one reply line ("ok ..." or "error ...").
//
// The request log (--log) has one JSON line per request head: req (0-based order), conn,
// key (Idempotency-Key), content_length, expect, toxic (the one it got, or "").
// Two threads per direction per connection; meant for the handful of connections a
// test opens, on loopback only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kMaxHead = 64 * 1024;
// Bytes held per direction before reading stops, beyond what the link carries in one
// delay (rate x delay, upload only): so that one connection can fill the link.
constexpr std::size_t kQueueCap = 256 * 1024;

enum class Toxic {
  kNone,
  kResetHead,
  kResetAwait,
  kResetBody,
  kCloseHead,
  kCloseContinue,
  kAnswerReset,
  kBlackhole,
  kDown
};

const std::map<std::string, Toxic, std::less<>> kToxics = {
    {"reset_head", Toxic::kResetHead},         {"reset_await", Toxic::kResetAwait},
    {"reset_body", Toxic::kResetBody},         {"close_head", Toxic::kCloseHead},
    {"close_continue", Toxic::kCloseContinue}, {"answer_reset", Toxic::kAnswerReset},
    {"blackhole", Toxic::kBlackhole},          {"down", Toxic::kDown}};

std::string_view Name(Toxic t) {
  for (const auto& [name, toxic] : kToxics) {
    if (toxic == t) return name;
  }
  return "";
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The value of header `name` in a head ("" when absent).
std::string HeaderValue(std::string_view head, std::string_view name) {
  std::size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    const std::size_t end = head.find("\r\n", at + 2);
    const std::string_view line =
        head.substr(at + 2, (end == std::string_view::npos ? head.size() : end) - at - 2);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && IEquals(line.substr(0, colon), name)) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return std::string(v);
    }
    at = end;
  }
  return "";
}

// `head` without its `name` header lines.
std::string WithoutHeader(std::string_view head, std::string_view name) {
  std::string out;
  std::size_t at = 0;
  while (at < head.size()) {
    std::size_t end = head.find("\r\n", at);
    end = end == std::string_view::npos ? head.size() : end + 2;
    const std::string_view line = head.substr(at, end - at);
    const std::size_t colon = line.find(':');
    if (at == 0 || colon == std::string_view::npos || !IEquals(line.substr(0, colon), name)) {
      out.append(line);
    }
    at = end;
  }
  return out;
}

// One upload bandwidth cap shared by every connection: a token bucket. Any thread.
class Link {
 public:
  void SetRate(std::uint64_t bytes_per_s) {
    std::lock_guard lock(mu_);
    rate_ = bytes_per_s;
    tokens_ = 0;
    last_ = Clock::now();
  }
  std::uint64_t Rate() {
    std::lock_guard lock(mu_);
    return rate_;
  }
  // Waits until `n` bytes may go. The bucket is one 16 KiB piece (or 1 ms of the rate)
  // deep for a writer that was idle, so the link does not burst after a pause, and 50 ms
  // deep for one with bytes waiting (`backlogged`, and always after a wait here): a writer
  // that a busy host scheduled late then sends what the link would have carried meanwhile,
  // and the link keeps its rate.
  void Take(std::size_t n, bool backlogged) {
    std::unique_lock lock(mu_);
    for (;;) {
      if (rate_ == 0) return;
      const auto now = Clock::now();
      const auto rate = static_cast<double>(rate_);
      const double depth = std::max(16.0 * 1024, rate / (backlogged ? 20 : 1000));
      tokens_ =
          std::min(tokens_ + std::chrono::duration<double>(now - last_).count() * rate, depth);
      last_ = now;
      if (tokens_ >= std::min(static_cast<double>(n), depth)) {
        tokens_ -= static_cast<double>(n);
        return;
      }
      const double need = static_cast<double>(n) - tokens_;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::duration<double>(need / rate));
      lock.lock();
      backlogged = true;
    }
  }

 private:
  std::mutex mu_;
  std::uint64_t rate_ = 0;  // guarded by mu_
  double tokens_ = 0;       // guarded by mu_
  Clock::time_point last_ = Clock::now();
};

struct Proxy;

// One accepted connection and its upstream. The readers parse; the writers deliver
// pieces when due. A fault shuts both sides down; the last thread out closes them.
struct Conn : std::enable_shared_from_this<Conn> {
  int client = -1;
  int server = -1;
  int id = 0;
  Proxy* proxy = nullptr;
  std::atomic<bool> dead{false};
  std::mutex mu;  // guards the current request's toxic
  Toxic toxic = Toxic::kNone;
  bool expect = false;

  void Reset() {
    if (dead.exchange(true)) return;
    const linger rst{.l_onoff = 1, .l_linger = 0};
    ::setsockopt(client, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
    // A disconnect sends the RST now and wakes every thread blocked on the socket.
    sockaddr unspec{};
    unspec.sa_family = AF_UNSPEC;
    ::connect(client, &unspec, sizeof unspec);
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(server, SHUT_RDWR);
  }
  void Close() {
    if (dead.exchange(true)) return;
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(server, SHUT_RDWR);
  }
  ~Conn() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
};

struct Proxy {
  sockaddr_in upstream{};
  Link link;
  std::atomic<long> delay_ms{0};
  std::atomic<long> slow_close_ms{0};
  std::atomic<bool> ignore_expect{false};
  std::mutex mu;  // guards everything below
  Toxic armed = Toxic::kNone;
  long armed_count = 0;
  long armed_after = 0;
  long requests = 0;
  long fired = 0;
  int connections = 0;
  std::ofstream log;
  std::vector<std::weak_ptr<Conn>> live;
  std::function<void(long)> down;  // the listener's Down(), set once at start

  // Takes the toxic for the next request head, and logs the head.
  Toxic NextRequest(const Conn& c, std::string_view head) {
    std::lock_guard lock(mu);
    Toxic t = Toxic::kNone;
    if (armed != Toxic::kNone && armed_count > 0) {
      if (armed_after > 0) {
        --armed_after;
      } else {
        t = armed;
        if (--armed_count == 0) armed = Toxic::kNone;
        ++fired;
      }
    }
    if (log.is_open()) {
      std::string key = HeaderValue(head, "Idempotency-Key");
      key.erase(
          std::remove_if(key.begin(), key.end(), [](char ch) { return ch == '"' || ch == '\\'; }),
          key.end());
      log << "{\"req\":" << requests << ",\"conn\":" << c.id << ",\"key\":\"" << key
          << "\",\"content_length\":" << std::atoll(HeaderValue(head, "Content-Length").c_str())
          << ",\"expect\":" << (HeaderValue(head, "Expect").empty() ? "false" : "true")
          << ",\"toxic\":\"" << Name(t) << "\"}\n"
          << std::flush;
    }
    ++requests;
    return t;
  }
};

// One direction's delivery: pieces written when due, through the shared link upstream.
class Delivery {
 public:
  Delivery(std::shared_ptr<Conn> conn, int to, bool upload)
      : conn_(std::move(conn)), to_(to), upload_(upload), writer_([this] { Write(); }) {}
  ~Delivery() {
    Finish();
    writer_.join();
  }
  // Queues bytes (blocks while Cap() bytes wait); false once the far side is gone.
  bool Push(std::string bytes) {
    const std::size_t cap = Cap();
    std::unique_lock lock(mu_);
    room_.wait(lock, [&] { return held_ < cap || broken_; });
    if (broken_) return false;
    held_ += bytes.size();
    queue_.push_back(
        {Clock::now() + milliseconds(conn_->proxy->delay_ms.load()), std::move(bytes), false});
    ready_.notify_one();
    return true;
  }
  // Sends FIN after what is queued (after `after` more).
  void Finish(milliseconds after = milliseconds::zero()) {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    queue_.push_back(
        {Clock::now() + milliseconds(conn_->proxy->delay_ms.load()) + after, "", true});
    ready_.notify_one();
  }
  // Waits until everything queued so far has been written.
  void Drain() {
    std::unique_lock lock(mu_);
    room_.wait(lock, [&] { return queue_.empty() || broken_; });
  }

 private:
  // kQueueCap, and upload the bytes the link carries in one delay.
  std::size_t Cap() const {
    if (!upload_) return kQueueCap;
    const auto delay_ms = static_cast<std::uint64_t>(std::max(0L, conn_->proxy->delay_ms.load()));
    return kQueueCap + static_cast<std::size_t>(conn_->proxy->link.Rate() * delay_ms / 1000);
  }
  struct Piece {
    Clock::time_point due;
    std::string bytes;
    bool fin;
  };
  void Write() {
    for (;;) {
      Piece p;
      bool backlogged = false;  // the piece was due and waiting when this writer came back
      {
        std::unique_lock lock(mu_);
        backlogged = !queue_.empty();
        ready_.wait(lock, [&] { return !queue_.empty(); });
        p = std::move(queue_.front());
      }
      backlogged = backlogged && p.due <= Clock::now();
      std::this_thread::sleep_until(p.due);
      bool ok = true;
      if (p.fin) {
        if (!conn_->dead.load()) ::shutdown(to_, SHUT_WR);
      } else {
        std::size_t off = 0;
        while (ok && off < p.bytes.size()) {
          const std::size_t n = std::min<std::size_t>(p.bytes.size() - off, 16 * 1024);
          if (upload_) conn_->proxy->link.Take(n, backlogged || off > 0);
          const ssize_t put = ::send(to_, p.bytes.data() + off, n, MSG_NOSIGNAL);
          ok = put > 0;
          if (ok) off += static_cast<std::size_t>(put);
        }
      }
      std::lock_guard lock(mu_);
      queue_.pop_front();
      held_ -= std::min(held_, p.bytes.size());
      if (!ok) broken_ = true;
      room_.notify_all();
      if (p.fin) return;
      if (broken_) {
        queue_.clear();
        return;
      }
    }
  }

  std::shared_ptr<Conn> conn_;
  const int to_;
  const bool upload_;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Piece> queue_;  // guarded by mu_
  std::size_t held_ = 0;     // guarded by mu_
  bool finished_ = false;    // guarded by mu_
  bool broken_ = false;      // guarded by mu_
  std::thread writer_;       // last: started once the rest is set
};

ssize_t Recv(int fd, char* buf, std::size_t n) {
  for (;;) {
    const ssize_t got = ::recv(fd, buf, n, 0);
    if (got < 0 && errno == EINTR) continue;
    return got;
  }
}

// Client to server: finds each request's head and body, and breaks the request its
// toxic names.
void Upload(std::shared_ptr<Conn> c) {
  Delivery out(c, c->server, /*upload=*/true);
  std::string head;
  std::uint64_t body_left = 0, body_len = 0;
  bool in_body = false;
  Toxic toxic = Toxic::kNone;
  std::vector<char> buf(64 * 1024);
  while (!c->dead.load()) {
    const ssize_t n = Recv(c->client, buf.data(), buf.size());
    if (n <= 0) break;
    std::string_view got(buf.data(), static_cast<std::size_t>(n));
    while (!got.empty() && !c->dead.load()) {
      if (in_body) {
        const std::size_t take =
            static_cast<std::size_t>(std::min<std::uint64_t>(body_left, got.size()));
        if (toxic == Toxic::kResetBody && body_left - take <= body_len / 2) {
          // Halfway through: what came before goes, then the reset.
          const std::size_t upto = static_cast<std::size_t>(body_left - body_len / 2);
          out.Push(std::string(got.substr(0, std::min(upto, take))));
          out.Drain();
          c->Reset();
          break;
        }
        if (toxic != Toxic::kBlackhole) out.Push(std::string(got.substr(0, take)));
        body_left -= take;
        got.remove_prefix(take);
        if (body_left == 0) {
          in_body = false;
          head.clear();
        }
        continue;
      }
      const std::size_t before = head.size();
      head.append(got.substr(0, kMaxHead - std::min(kMaxHead, head.size())));
      const std::size_t end = head.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (head.size() >= kMaxHead) {
          c->Close();
          break;
        }
        got.remove_prefix(got.size());
        continue;
      }
      const std::size_t head_len = end + 4;
      got.remove_prefix(head_len - before);
      head.resize(head_len);
      toxic = c->proxy->NextRequest(*c, head);
      {
        std::lock_guard lock(c->mu);
        c->toxic = toxic;
        c->expect = !HeaderValue(head, "Expect").empty();
      }
      body_len = body_left =
          std::strtoull(HeaderValue(head, "Content-Length").c_str(), nullptr, 10);
      switch (toxic) {
        case Toxic::kResetHead:
          out.Push(head.substr(0, 10));
          out.Drain();
          c->Reset();
          break;
        case Toxic::kResetAwait: c->Reset(); break;
        case Toxic::kCloseHead: c->Close(); break;
        case Toxic::kBlackhole: break;
        case Toxic::kDown: c->proxy->down(300); break;
        default:
          out.Push(c->proxy->ignore_expect.load() ? WithoutHeader(head, "Expect") : head);
          break;
      }
      if (c->dead.load()) break;
      if (toxic == Toxic::kCloseContinue && !c->expect) {
        out.Drain();
        c->Close();
        break;
      }
      in_body = body_left > 0;
      if (!in_body) head.clear();
    }
  }
  if (!c->dead.load()) out.Finish();
}

// Server to client: finds each response's head (1xx included) and body.
void Download(std::shared_ptr<Conn> c) {
  Delivery out(c, c->client, /*upload=*/false);
  std::string head;
  std::uint64_t body_left = 0;
  bool in_body = false;
  std::vector<char> buf(64 * 1024);
  while (!c->dead.load()) {
    const ssize_t n = Recv(c->server, buf.data(), buf.size());
    if (n <= 0) break;
    std::string_view got(buf.data(), static_cast<std::size_t>(n));
    while (!got.empty() && !c->dead.load()) {
      if (in_body) {
        const std::size_t take =
            static_cast<std::size_t>(std::min<std::uint64_t>(body_left, got.size()));
        out.Push(std::string(got.substr(0, take)));
        body_left -= take;
        got.remove_prefix(take);
        in_body = body_left > 0;
        continue;
      }
      const std::size_t before = head.size();
      head.append(got.substr(0, kMaxHead - std::min(kMaxHead, head.size())));
      const std::size_t end = head.find("\r\n\r\n");
      if (end == std::string::npos) {
        got.remove_prefix(got.size());
        continue;
      }
      const std::size_t head_len = end + 4;
      got.remove_prefix(head_len - before);
      head.resize(head_len);
      const bool interim = head.size() > 9 && head[9] == '1';
      Toxic toxic;
      {
        std::lock_guard lock(c->mu);
        toxic = c->toxic;
      }
      out.Push(head);
      if ((interim && toxic == Toxic::kCloseContinue) ||
          (!interim && toxic == Toxic::kAnswerReset)) {
        out.Drain();
        if (interim) {
          c->Close();
        } else {
          c->Reset();
        }
        break;
      }
      if (!interim) {
        body_left = std::strtoull(HeaderValue(head, "Content-Length").c_str(), nullptr, 10);
        in_body = body_left > 0;
      }
      head.clear();
    }
  }
  if (!c->dead.load()) out.Finish(milliseconds(c->proxy->slow_close_ms.load()));
}

int ConnectTo(const sockaddr_in& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int Listen(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::uint16_t PortOf(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

void WritePortFile(const std::string& path, std::uint16_t port) {
  std::ofstream(path + ".tmp") << port << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());
}

void Serve(Proxy& proxy, int client) {
  auto c = std::make_shared<Conn>();
  c->client = client;
  c->proxy = &proxy;
  c->server = ConnectTo(proxy.upstream);
  {
    std::lock_guard lock(proxy.mu);
    c->id = proxy.connections++;
    proxy.live.push_back(c);
  }
  if (c->server < 0) {
    c->Reset();
    return;
  }
  std::thread up(Upload, c);
  Download(c);
  up.join();
}

// The listener, closed and reopened on the same port by "down".
class Listener {
 public:
  explicit Listener(Proxy& proxy) : proxy_(proxy) {}
  bool Open(std::uint16_t port) {
    fd_ = Listen(port);
    return fd_ >= 0;
  }
  std::uint16_t port() const { return PortOf(fd_); }
  void Run() {
    for (;;) {
      pollfd p{fd_.load(), POLLIN, 0};
      if (p.fd < 0 || ::poll(&p, 1, 50) <= 0) {
        std::this_thread::sleep_for(milliseconds(p.fd < 0 ? 10 : 0));
        continue;
      }
      const int c = ::accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      const int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::thread(Serve, std::ref(proxy_), c).detach();
    }
  }
  // Closes the listener and resets every connection; reopens after `ms`.
  void Down(long ms) {
    const std::uint16_t port = PortOf(fd_);
    const int old = fd_.exchange(-1);
    ::close(old);
    std::vector<std::shared_ptr<Conn>> live;
    {
      std::lock_guard lock(proxy_.mu);
      for (auto& w : proxy_.live) {
        if (auto c = w.lock()) live.push_back(c);
      }
      proxy_.live.clear();
    }
    for (auto& c : live) c->Reset();
    std::thread([this, port, ms] {
      std::this_thread::sleep_for(milliseconds(ms));
      for (int i = 0; i < 200 && fd_.load() < 0; ++i) {
        const int fd = Listen(port);
        if (fd >= 0) {
          fd_ = fd;
          break;
        }
        std::this_thread::sleep_for(milliseconds(10));
      }
    }).detach();
  }

 private:
  Proxy& proxy_;
  std::atomic<int> fd_{-1};
};

std::string Control(Proxy& proxy, Listener& listener, const std::string& line) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  long a = 0;
  if (verb == "arm") {
    std::string name;
    long count = 1, after = 0;
    in >> name;
    if (!(in >> count)) count = 1;
    if (!(in >> after)) after = 0;
    const auto it = kToxics.find(name);
    if (it == kToxics.end() || count < 1 || after < 0) return "error unknown toxic or count";
    std::lock_guard lock(proxy.mu);
    proxy.armed = it->second;
    proxy.armed_count = count;
    proxy.armed_after = after;
    return "ok";
  }
  if (verb == "clear") {
    std::lock_guard lock(proxy.mu);
    proxy.armed = Toxic::kNone;
    proxy.armed_count = 0;
    return "ok";
  }
  if (verb == "stats") {
    std::lock_guard lock(proxy.mu);
    return "ok requests=" + std::to_string(proxy.requests) +
           " fired=" + std::to_string(proxy.fired) +
           " connections=" + std::to_string(proxy.connections);
  }
  if (verb == "latency" && (in >> a) && a >= 0) {
    proxy.delay_ms = a;
    return "ok";
  }
  if (verb == "rate" && (in >> a) && a >= 0) {
    proxy.link.SetRate(static_cast<std::uint64_t>(a));
    return "ok";
  }
  if (verb == "slow_close" && (in >> a) && a >= 0) {
    proxy.slow_close_ms = a;
    return "ok";
  }
  if (verb == "ignore_expect" && (in >> a) && (a == 0 || a == 1)) {
    proxy.ignore_expect = a == 1;
    return "ok";
  }
  if (verb == "down" && (in >> a) && a >= 0) {
    listener.Down(a);
    return "ok";
  }
  if (verb == "quit") std::exit(0);
  return "error unknown command: " + line;
}

void ServeControl(int lfd, Proxy& proxy, Listener& listener) {
  for (;;) {
    const int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::thread([c, &proxy, &listener] {
      std::string pending;
      char buf[1024];
      for (;;) {
        const ssize_t n = Recv(c, buf, sizeof buf);
        if (n <= 0) break;
        pending.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
          std::string line = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          if (!line.empty() && line.back() == '\r') line.pop_back();
          const std::string reply = Control(proxy, listener, line) + "\n";
          (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
        }
      }
      ::close(c);
    }).detach();
  }
}

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --to HOST:PORT --listen-port-file F [--control-port-file C]\n"
               "          [--delay-ms MS] [--rate BYTES_PER_S] [--ignore-expect] [--log FILE]\n",
               argv0);
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::string port_file, control_file, to, log_path;
  long delay_ms = 0, rate = 0;
  bool ignore_expect = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ignore-expect") {
      ignore_expect = true;
      continue;
    }
    if (i + 1 >= argc) return Usage(argv[0]);
    const char* v = argv[++i];
    if (a == "--listen-port-file") {
      port_file = v;
    } else if (a == "--control-port-file") {
      control_file = v;
    } else if (a == "--to") {
      to = v;
    } else if (a == "--delay-ms") {
      delay_ms = std::strtol(v, nullptr, 10);
    } else if (a == "--rate") {
      rate = std::strtol(v, nullptr, 10);
    } else if (a == "--log") {
      log_path = v;
    } else {
      return Usage(argv[0]);
    }
  }
  const auto colon = to.rfind(':');
  if (port_file.empty() || colon == std::string::npos || delay_ms < 0 || rate < 0) {
    return Usage(argv[0]);
  }
  static Proxy proxy;
  proxy.upstream.sin_family = AF_INET;
  proxy.upstream.sin_port = htons(static_cast<std::uint16_t>(std::atoi(to.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, to.substr(0, colon).c_str(), &proxy.upstream.sin_addr) != 1) {
    return Usage(argv[0]);
  }
  proxy.delay_ms = delay_ms;
  proxy.link.SetRate(static_cast<std::uint64_t>(rate));
  proxy.ignore_expect = ignore_expect;
  if (!log_path.empty()) proxy.log.open(log_path, std::ios::app);
  static Listener listener(proxy);
  proxy.down = [](long ms) { listener.Down(ms); };
  if (!listener.Open(0)) {
    std::perror("fault proxy: listen");
    return 1;
  }
  if (!control_file.empty()) {
    const int cfd = Listen(0);
    if (cfd < 0) {
      std::perror("fault proxy: control listen");
      return 1;
    }
    std::thread(ServeControl, cfd, std::ref(proxy), std::ref(listener)).detach();
    WritePortFile(control_file, PortOf(cfd));
  }
  WritePortFile(port_file, listener.port());
  listener.Run();
}
