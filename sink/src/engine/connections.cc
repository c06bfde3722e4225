// SPDX-License-Identifier: Apache-2.0
#include "engine/connections.h"

#include <utility>

namespace fwdsink {

Connections::Connections(std::vector<std::string> urls, TransportOptions options,
                         std::vector<EndpointLink>& links, TimeSource& time)
    : urls_(std::move(urls)), options_(std::move(options)), links_(links), time_(time) {}

Connections::~Connections() = default;

int Connections::Take(std::size_t limit) {
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    if (!conns_[i]->busy) {
      conns_[i]->busy = true;
      return static_cast<int>(i);
    }
  }
  if (conns_.size() >= limit) return -1;
  auto conn = std::make_unique<Connection>();
  if (!conns_.empty()) {  // connection 0 posts on the links' own transports
    for (const std::string& url : urls_) {
      auto made = HttpTransport::Create(url, options_);
      if (!made.ok()) return -1;  // the links' were made from the same options: not expected
      conn->own.push_back(std::move(made).value());
    }
  }
  conn->busy = true;
  std::lock_guard lock(mu_);
  if (aborted_) {
    for (auto& t : conn->own) t->Abort();
  }
  conns_.push_back(std::move(conn));
  return static_cast<int>(conns_.size() - 1);
}

HttpTransport& Connections::Transport(int conn, std::size_t endpoint) {
  Connection& p = *conns_[static_cast<std::size_t>(conn)];
  return p.own.empty() ? *links_[endpoint].transport : *p.own[endpoint];
}

void Connections::Post(int conn, std::size_t endpoint, const HeaderList& headers, std::string& body,
                       std::string_view query, PostLimits limits,
                       std::function<void(PostDone)> done) {
  HttpTransport& transport = Transport(conn, endpoint);
  conns_[static_cast<std::size_t>(conn)]->worker.Post([this, &transport, &headers, &body, query,
                                                       limits, done = std::move(done)] {
    const MonotonicTime posted = time_.MonotonicNow();
    PostDone out{.result = transport.Post(headers, body, query, limits)};
    out.took = std::chrono::duration_cast<std::chrono::microseconds>(time_.MonotonicNow() - posted);
    done(std::move(out));
  });
}

void Connections::Give(int conn) { conns_[static_cast<std::size_t>(conn)]->busy = false; }

void Connections::AbortAll() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  for (auto& p : conns_) {
    for (auto& t : p->own) t->Abort();
  }
  for (EndpointLink& link : links_) link.transport->Abort();
}

}  // namespace fwdsink
