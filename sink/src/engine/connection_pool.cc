// SPDX-License-Identifier: Apache-2.0
#include "engine/connection_pool.h"

#include <algorithm>
#include <utility>

namespace fwdsink {

ConnectionPool::ConnectionPool(std::vector<std::string> urls, TransportOptions options,
                               TimeSource& time, std::chrono::milliseconds keep_alive)
    : urls_(std::move(urls)), options_(std::move(options)), time_(time), keep_alive_(keep_alive) {}

ConnectionPool::~ConnectionPool() {
  DeadlineTimer::Id sweep = 0;
  {
    std::lock_guard lock(mu_);
    closing_ = true;  // a sweep that runs now arms no other
    sweep = std::exchange(sweep_, 0);
  }
  // Waits out a sweep that runs now; the connections go with conns_.
  if (sweep != 0) timer_->Cancel(sweep);
}

int ConnectionPool::Take() {
  std::unique_lock lock(mu_);
  if (!idle_.empty()) {
    const int id = idle_.back();
    idle_.pop_back();
    return id;
  }
  lock.unlock();
  // Made outside the lock: a transport's setup (a TLS context) takes a while.
  auto conn = std::make_unique<Connection>();
  for (const std::string& url : urls_) {
    auto made = HttpTransport::Create(url, options_);
    if (!made.ok()) return -1;  // the options were checked when the sink was made
    conn->transports.push_back(std::move(made).value());
  }
  lock.lock();
  if (aborted_) {
    for (auto& t : conn->transports) t->Abort();
  }
  const int id = next_id_++;
  conns_.emplace(id, std::move(conn));
  return id;
}

void ConnectionPool::Post(int conn, std::size_t endpoint, const HeaderList& headers,
                          std::string& body, std::string_view query, PostLimits limits,
                          std::function<void(PostDone)> done) {
  Connection* c = nullptr;
  {
    std::lock_guard lock(mu_);
    c = conns_.at(conn).get();  // taken: not closed before it is given back
  }
  HttpTransport& transport = *c->transports.at(endpoint);
  c->worker.Post([this, &transport, &headers, &body, query, limits, done = std::move(done)] {
    const MonotonicTime posted = time_.MonotonicNow();
    PostDone out{.result = transport.Post(headers, body, query, limits)};
    out.took = std::chrono::duration_cast<std::chrono::microseconds>(time_.MonotonicNow() - posted);
    done(std::move(out));
  });
}

void ConnectionPool::Give(int conn) {
  const MonotonicTime now = time_.MonotonicNow();
  std::lock_guard lock(mu_);
  conns_.at(conn)->idle_since = now;
  idle_.push_back(conn);
  ArmSweepLocked(now);
}

void ConnectionPool::AbortAll() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  for (auto& [id, c] : conns_) {
    for (auto& t : c->transports) t->Abort();
  }
}

std::size_t ConnectionPool::CloseIdle(MonotonicTime now) {
  std::vector<std::unique_ptr<Connection>> closing;
  {
    std::lock_guard lock(mu_);
    // idle_ runs from the longest idle to the last given back.
    auto kept = idle_.begin();
    while (kept != idle_.end() && keep_alive_.count() > 0 &&
           now - conns_.at(*kept)->idle_since >= keep_alive_) {
      closing.push_back(std::move(conns_.at(*kept)));
      conns_.erase(*kept);
      ++kept;
    }
    idle_.erase(idle_.begin(), kept);
  }
  return closing.size();  // closed here, outside the lock: each joins its thread
}

std::size_t ConnectionPool::open() const {
  std::lock_guard lock(mu_);
  return conns_.size();
}

void ConnectionPool::ArmSweepLocked(MonotonicTime now) {
  if (closing_ || sweep_ != 0 || idle_.empty() || keep_alive_.count() <= 0) return;
  const auto due = conns_.at(idle_.front())->idle_since + keep_alive_ - now;
  const auto wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(due),
                             std::chrono::milliseconds(1));
  sweep_ = timer_->Arm(std::chrono::steady_clock::now() + wait, [this] { Sweep(); });
}

void ConnectionPool::Sweep() {
  const MonotonicTime now = time_.MonotonicNow();
  CloseIdle(now);
  std::lock_guard lock(mu_);
  sweep_ = 0;
  ArmSweepLocked(now);
}

}  // namespace fwdsink
