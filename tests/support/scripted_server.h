// SPDX-License-Identifier: Apache-2.0
// A tiny in-process HTTP server on 127.0.0.1 that answers from a script and records
// every request: real sockets for the forward sink's unit tests, with the fake clock
// doing the waiting. (Integration tests use the fwdsink-central receiver instead.)
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fwdsink_test {

struct Reply {
  int status = 200;
  httplib::Headers headers{};
  std::string body = "{}";
  std::chrono::milliseconds delay{0};  // before answering (interruptible by Stop)
};

struct Recorded {
  std::string key;
  std::string encoding;
  std::string authorization;
  std::string content_type;
  std::string user_agent;
  std::string body;          // as received on the wire
  std::string target;        // request target as sent: path and query
  httplib::Headers headers;  // every header, as received
};

class ScriptedServer {
 public:
  explicit ScriptedServer(std::string key_header = "Idempotency-Key")
      : key_header_(std::move(key_header)) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      const int now = ++in_flight_;
      for (int seen = max_in_flight_.load(); now > seen;) {
        if (max_in_flight_.compare_exchange_weak(seen, now)) break;
      }
      Reply r;
      {
        std::unique_lock lock(mu_);
        requests_.push_back(
            {req.get_header_value(key_header_), req.get_header_value("Content-Encoding"),
             req.get_header_value("Authorization"), req.get_header_value("Content-Type"),
             req.get_header_value("User-Agent"), req.body, req.target, req.headers});
        if (!script_.empty()) {
          r = script_.front();
          script_.pop_front();
        }
        if (r.delay.count() > 0) {
          cv_.wait_for(lock, r.delay, [this] { return stopping_; });
        }
      }
      res.status = r.status;
      for (const auto& [k, v] : r.headers) res.set_header(k, v);
      res.set_content(r.body, "application/json");
      --in_flight_;
    });
    server_.set_tcp_nodelay(true);  // see LLP 0011#tcp-nodelay
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      listen_ended_ = true;
    });
    // cpp-httplib 0.11.4 has no wait_until_ready(), and a stop() before is_running()
    // is lost (Stop() would then hang in join). The socket already listens, so clients
    // may connect at once; only Stop() needs the loop running. A handshake, not a sleep:
    // yield until the loop runs or has ended (a failed bind ends it at once).
    while (!server_.is_running() && !listen_ended_) std::this_thread::yield();
  }
  ~ScriptedServer() { Stop(); }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Queues replies; once the script runs out every request gets 200 "{}".
  void Then(Reply r) {
    std::lock_guard lock(mu_);
    script_.push_back(std::move(r));
  }
  void Then(int status, httplib::Headers h = {}, std::string body = "{}") {
    Then(Reply{status, std::move(h), std::move(body)});
  }

  std::vector<Recorded> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // The most requests whose handler ran at once (since the start or the last reset).
  int max_in_flight() const { return max_in_flight_.load(); }
  void ResetMaxInFlight() { max_in_flight_.store(in_flight_.load()); }
  int port() const { return port_; }
  std::string url(const std::string& path = "/ingest") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  const std::string key_header_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> listen_ended_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Reply> script_;        // guarded by mu_
  std::vector<Recorded> requests_;  // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
};

}  // namespace fwdsink_test
