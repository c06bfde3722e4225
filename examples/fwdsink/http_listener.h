// SPDX-License-Identifier: Apache-2.0
// A small HTTP/1.1 GET server for the daemon's /metrics, /healthz and /readyz that a
// slow or hostile client cannot hold up: one thread polls every connection; a request
// must arrive whole within request_timeout and its answer leave within it too, or the
// connection is closed; at most max_connections are open (one more is accepted and
// closed at once: refused); Stop() wakes the poll and returns within milliseconds
// whatever the clients do. Answers one request per connection (Connection: close).
// Deliberately ignores everything but GET/HEAD, the path and the query (headers are
// read past, bodies refused). @ref LLP 0023#metrics-server
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace fwdsink_cli {

struct HttpListenerLimits {
  std::chrono::milliseconds request_timeout{2000};  // from accept to the answer sent
  std::size_t max_connections = 64;
  std::size_t max_request_bytes = 16 * 1024;  // request line and headers
};

struct HttpAnswer {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

// Threads: Bind, Start and Stop on one thread; the handler runs on the server's thread.
class HttpListener {
 public:
  using Handler = std::function<HttpAnswer(const std::string& path)>;

  // Binds HOST:PORT (an address or a name: its first address); port 0 picks one. On
  // failure returns nullptr and sets `error` with the reason.
  [[nodiscard]] static std::unique_ptr<HttpListener> Bind(const std::string& host, int port,
                                                          Handler handler,
                                                          HttpListenerLimits limits,
                                                          std::string& error);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // Starts the serving thread.
  void Start();
  // Closes every connection and joins the thread; idempotent.
  void Stop();

 private:
  HttpListener() = default;
  void Loop();

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: Stop() writes, the loop wakes
  int port_ = 0;
  Handler handler_;
  HttpListenerLimits limits_;
  std::thread thread_;
};

}  // namespace fwdsink_cli
