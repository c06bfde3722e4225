// SPDX-License-Identifier: Apache-2.0
// Private to the engine: the connections a sink posts on. A cpp-httplib client carries
// one request at a time, so each request in flight has a connection of its own (one to
// each endpoint) and a thread that posts on it. Connection 0 posts on the links'
// transports; the others are made on first use and kept open between calls.
// @ref LLP 0014#window
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/auth.h"
#include "fwdsink/transport.h"
#include "io/single_slot_worker.h"

namespace fwdsink {

// What one post came to, and how long it took.
struct PostDone {
  TransportResult result;
  std::chrono::microseconds took{0};
};

class Connections {
 public:
  // `links` is the sink's (connection 0's transports); `urls` one per endpoint, in order.
  Connections(std::vector<std::string> urls, TransportOptions options,
              std::vector<EndpointLink>& links, TimeSource& time);
  ~Connections();
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  // A connection with no post running, made if need be (at most `limit` in all); -1 when
  // none is free or one cannot be made. Sender thread.
  [[nodiscard]] int Take(std::size_t limit);
  // Posts on connection `conn`'s thread to endpoint `endpoint`; `done` runs on that thread
  // when the post returns. The headers, body and query must outlive the post.
  void Post(int conn, std::size_t endpoint, const HeaderList& headers, std::string& body,
            std::string_view query, PostLimits limits, std::function<void(PostDone)> done);
  // The connection's post has been answered (its `done` ran): free for another.
  void Give(int conn);
  // Shuts every connection down (Close()); later posts fail at once. Any thread.
  void AbortAll();

 private:
  struct Connection {
    std::vector<std::unique_ptr<HttpTransport>> own;  // empty for connection 0
    bool busy = false;                                // sender thread
    SingleSlotWorker worker;                          // last: joined first
  };
  HttpTransport& Transport(int conn, std::size_t endpoint);

  const std::vector<std::string> urls_;
  const TransportOptions options_;
  std::vector<EndpointLink>& links_;  // Not owned.
  TimeSource& time_;                  // Not owned.
  std::mutex mu_;                     // guards conns_' growth and aborted_ against AbortAll
  bool aborted_ = false;
  std::vector<std::unique_ptr<Connection>> conns_;
};

}  // namespace fwdsink
