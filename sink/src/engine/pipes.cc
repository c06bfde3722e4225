// SPDX-License-Identifier: Apache-2.0
#include "engine/pipes.h"

#include <utility>

#include "fwdsink/forward_deps.h"

namespace fwdsink {

bool InflightBudget::TryTake(std::uint64_t bytes, std::uint64_t /*held*/) {
  // @ref LLP 0014#inflight-cap
  // Sequentially consistent, with Give(): a giver that sees no taker waiting has its
  // bytes seen by the taker's next check.
  std::uint64_t used = used_.load();
  for (;;) {
    if (used > 0 && used + bytes > limit_) return false;
    if (used_.compare_exchange_weak(used, used + bytes)) break;
  }
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (used + bytes > peak &&
         !peak_.compare_exchange_weak(peak, used + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

bool InflightBudget::Take(std::uint64_t bytes, const std::stop_token& stop) {
  if (TryTake(bytes)) return true;
  waits_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock lock(mu_);
  waiting_.fetch_add(1);
  const bool took = room_.wait(lock, stop, [&] { return TryTake(bytes); });
  waiting_.fetch_sub(1);
  return took;
}

void InflightBudget::Give(std::uint64_t bytes) {
  used_.fetch_sub(bytes);
  if (waiting_.load() == 0) return;
  // Under the lock: a taker between its failed check and its sleep cannot miss this.
  { const std::lock_guard lock(mu_); }
  room_.notify_all();
}

Pipes::Pipes(std::vector<std::string> urls, TransportOptions options,
             std::vector<EndpointLink>& links, TimeSource& time)
    : urls_(std::move(urls)), options_(std::move(options)), links_(links), time_(time) {}

Pipes::~Pipes() = default;

int Pipes::Take(std::size_t limit) {
  for (std::size_t i = 0; i < pipes_.size(); ++i) {
    if (!pipes_[i]->busy) {
      pipes_[i]->busy = true;
      return static_cast<int>(i);
    }
  }
  if (pipes_.size() >= limit) return -1;
  auto pipe = std::make_unique<Pipe>();
  if (!pipes_.empty()) {  // pipe 0 posts on the links' own transports
    for (const std::string& url : urls_) {
      auto made = HttpTransport::Create(url, options_);
      if (!made.ok()) return -1;  // the links' were made from the same options: not expected
      pipe->own.push_back(std::move(made).value());
    }
  }
  pipe->busy = true;
  std::lock_guard lock(mu_);
  if (aborted_) {
    for (auto& t : pipe->own) t->Abort();
  }
  pipes_.push_back(std::move(pipe));
  return static_cast<int>(pipes_.size() - 1);
}

HttpTransport& Pipes::Transport(int pipe, std::size_t endpoint) {
  Pipe& p = *pipes_[static_cast<std::size_t>(pipe)];
  return p.own.empty() ? *links_[endpoint].transport : *p.own[endpoint];
}

void Pipes::Post(int pipe, std::size_t endpoint, const HeaderList& headers, std::string& body,
                 std::string_view query, PostLimits limits, std::function<void(PostDone)> done) {
  HttpTransport& transport = Transport(pipe, endpoint);
  pipes_[static_cast<std::size_t>(pipe)]->worker.Post([this, &transport, &headers, &body, query,
                                                       limits, done = std::move(done)] {
    const MonotonicTime posted = time_.MonotonicNow();
    PostDone out{.result = transport.Post(headers, body, query, limits)};
    out.took = std::chrono::duration_cast<std::chrono::microseconds>(time_.MonotonicNow() - posted);
    done(std::move(out));
  });
}

void Pipes::Give(int pipe) { pipes_[static_cast<std::size_t>(pipe)]->busy = false; }

void Pipes::AbortAll() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  for (auto& p : pipes_) {
    for (auto& t : p->own) t->Abort();
  }
  for (EndpointLink& link : links_) link.transport->Abort();
}

}  // namespace fwdsink
