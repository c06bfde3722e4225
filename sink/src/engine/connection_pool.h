// SPDX-License-Identifier: Apache-2.0
// Private to the engine: the connections the sinks post on. A cpp-httplib client carries
// one request at a time, so each request in flight has a connection of its own (a
// transport to each endpoint) and a thread that posts on it. The pool is shared by every
// sender made from one ForwardDeps (the driver's, partitions and packs alike), so that
// connections and their threads follow the requests in flight, not the partitions; one
// idle for the keep-alive is closed with its thread. @ref LLP 0014#window
// @ref LLP 0014#threads
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/clock.h"
#include "fwdsink/transport.h"
#include "io/deadline_timer.h"
#include "io/single_slot_worker.h"

namespace fwdsink {

// What one post came to, and how long it took.
struct PostDone {
  TransportResult result;
  std::chrono::microseconds took{0};
};

class ConnectionPool {
 public:
  // `urls` one per endpoint, in order; connections idle for `keep_alive` are closed (0:
  // kept until the pool goes).
  ConnectionPool(std::vector<std::string> urls, TransportOptions options, TimeSource& time,
                 std::chrono::milliseconds keep_alive);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // A connection with no post running, made if none is idle: the one given back last,
  // so that the others age out. -1 when one cannot be made. Any thread.
  [[nodiscard]] int Take();
  // Posts on connection `conn`'s thread to endpoint `endpoint`; `done` runs on that thread
  // when the post returns. The headers, body and query must outlive the post.
  void Post(int conn, std::size_t endpoint, const HeaderList& headers, std::string& body,
            std::string_view query, PostLimits limits, std::function<void(PostDone)> done);
  // The connection's post has been answered (its `done` ran): free for another.
  void Give(int conn);
  // Shuts every connection down (a Close() of any sink on the pool: only the driver
  // shares one, and it closes all its senders); later posts fail at once. Any thread.
  void AbortAll();

  // Closes the connections idle for the keep-alive or longer at `now`; returns how many.
  // The pool's timer calls it; tests call it with a fake clock.
  std::size_t CloseIdle(MonotonicTime now);
  // Connections open now (busy or idle).
  [[nodiscard]] std::size_t open() const;

 private:
  struct Connection {
    std::vector<std::unique_ptr<HttpTransport>> transports;  // one per endpoint
    MonotonicTime idle_since{};                              // guarded by mu_
    SingleSlotWorker worker;                                 // last: idle first
  };
  // Arms the timer for the oldest idle connection's keep-alive, unless it is armed.
  void ArmSweepLocked(MonotonicTime now);
  void Sweep();

  const std::vector<std::string> urls_;
  const TransportOptions options_;
  TimeSource& time_;  // Not owned.
  const std::chrono::milliseconds keep_alive_;
  const std::shared_ptr<DeadlineTimer> timer_ = DeadlineTimer::Shared();
  mutable std::mutex mu_;
  bool aborted_ = false;                              // guarded by mu_
  bool closing_ = false;                              // the destructor runs; mu_
  int next_id_ = 0;                                   // guarded by mu_
  std::map<int, std::unique_ptr<Connection>> conns_;  // guarded by mu_
  std::vector<int> idle_;                             // given back last at the end; mu_
  DeadlineTimer::Id sweep_ = 0;                       // armed sweep, 0: none; mu_
};

}  // namespace fwdsink
