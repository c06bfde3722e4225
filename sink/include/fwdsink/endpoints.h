// SPDX-License-Identifier: Apache-2.0
// Several endpoints: a primary and its fallbacks, each with what its senders share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "fwdsink/endpoint_health.h"
#include "fwdsink/expect_continue.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/gate.h"
#include "fwdsink/pacer.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

// One endpoint and the state every sender to it shares.
struct EndpointEntry {
  std::string url;   // as configured (may carry credentials: never log it)
  std::string name;  // RedactUrl(url): for events, logs and stats
  std::shared_ptr<EndpointGate> gate;
  std::shared_ptr<EndpointPacer> pacer;
  // One provider for every endpoint by default (ForwardDeps::tokens); an embedder may
  // set one per endpoint before the first sink is created. Each sink keeps the token
  // it got per endpoint.
  TokenProvider tokens;
  EndpointCounters counters;
  // Set once the endpoint answered "Expect: 100-continue" with 417: no request to it
  // carries the header again until the endpoints are made anew (a reload). Shared by
  // copies of the entry. @ref LLP 0017#expect-417
  std::shared_ptr<std::atomic<bool>> expect_off = std::make_shared<std::atomic<bool>>(false);
  // Its recent refusals and how it answered Expect: whether the next request should
  // carry "Expect: 100-continue". Thread-safe; shared by copies of the entry.
  // @ref LLP 0017#expect-when
  std::shared_ptr<ExpectAdvisor> expect = std::make_shared<ExpectAdvisor>();
  // The last request limit that held a whole window clean against it (0: none yet): where
  // a driver made later for it starts. Written by the driver whose limit learned it.
  // @ref LLP 0018#start
  std::shared_ptr<std::atomic<std::size_t>> stable_limit =
      std::make_shared<std::atomic<std::size_t>>(0);
  // When a request to it last got an HTTP answer (monotonic, ms since the clock's epoch;
  // 0: never): a refused connect soon after is a front restarting, not an outage.
  // @ref LLP 0014#reconnect
  std::shared_ptr<std::atomic<std::int64_t>> last_answer_ms =
      std::make_shared<std::atomic<std::int64_t>>(0);
};

// The endpoints of one ForwardOptions (url, then fallback_urls, in order), their
// shared state, and their health: which one the next request goes to. Held by
// shared_ptr in ForwardDeps so that several senders (ForwardSinks made from copies of
// one ForwardDeps) share gates, pacers, counters and the choice of endpoint.
//
// Ignores the transport (each sink keeps its own connection per endpoint) and what a
// response means (the verdict). Threads: any thread may call any method; the entries
// are fixed at Make() (their gates, pacers and counters are thread-safe themselves),
// the health is guarded by mu_. @ref LLP 0019#states
class Endpoints {
 public:
  class Waiting;

  // Makes the endpoints of `options`. The primary takes deps.gate and deps.pacer when
  // set; every other gate and pacer is new (the pacer from options.pacing, its max_wait
  // options.backpressure.max_wait). Every token provider is deps.tokens.
  [[nodiscard]] static std::shared_ptr<Endpoints> Make(const ForwardOptions& options,
                                                       const ForwardDeps& deps);

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  // Returns endpoint i (0: the primary). Checked: i < size().
  [[nodiscard]] EndpointEntry& at(std::size_t i);
  [[nodiscard]] const EndpointEntry& at(std::size_t i) const;

  // Returns where the next request goes (EndpointHealth::Choose) at `now`; `moves`
  // (if given) gets the count of moves that woke waiters so far (see WaitOn).
  [[nodiscard]] EndpointHealth::Choice Choose(MonotonicTime now, std::uint64_t* moves = nullptr);
  // Takes the outcome of one request (EndpointHealth::Report). A move with resend_now
  // (to an endpoint up) wakes the waiters on the endpoint left. `moves` as for Choose.
  HealthDecision Report(const HealthReport& report, MonotonicTime now,
                        std::uint64_t* moves = nullptr);
  // Returns the endpoint in use now.
  [[nodiscard]] std::size_t active() const;
  // Returns whether endpoint i is up or down.
  [[nodiscard]] EndpointState state(std::size_t i) const;
  // Returns whether the URLs are `urls`, in order (a sink checks the deps it is given).
  [[nodiscard]] bool Matches(const std::vector<std::string>& urls) const;
  // Registers a sender about to wait on endpoint i: the returned token is stopped when
  // `stop` is, or when a move wakes the waiters on i — at once if one did since the
  // sender saw `moves` (from its last Choose or Report) and i is no longer in use. The
  // registration ends with the Waiting. @ref LLP 0019#wake
  [[nodiscard]] Waiting WaitOn(std::size_t i, std::uint64_t moves, std::stop_token stop);

 private:
  Endpoints(FailoverPolicy policy, std::size_t n);
  void Forget(std::uint64_t id);
  void WakeWaitersOn(std::size_t i);  // mu_ held

  struct Wake {
    void operator()() { source.request_stop(); }
    std::stop_source source;
  };

  std::vector<std::unique_ptr<EndpointEntry>> entries_;  // fixed after Make()
  mutable std::mutex mu_;
  EndpointHealth health_;  // guarded by mu_
  // The senders waiting on an endpoint, by registration: id -> (endpoint, wake).
  std::map<std::uint64_t, std::pair<std::size_t, std::stop_source>> waiting_;  // guarded by mu_
  std::uint64_t next_waiting_ = 0;                                             // guarded by mu_
  std::uint64_t moves_ = 0;  // moves that woke waiters; guarded by mu_
};

// One sender's wait on one endpoint (Endpoints::WaitOn): its token() ends the wait on
// Close() or when a failover leaves the endpoint. Lives on the waiting thread's stack;
// the Endpoints must outlive it. Not copyable or movable.
class Endpoints::Waiting {
 public:
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;
  ~Waiting() { owner_->Forget(id_); }

  // Returns the token a sleep on the endpoint waits with.
  [[nodiscard]] std::stop_token token() const { return wake_.source.get_token(); }
  // Returns whether the endpoint waited on is no longer the one in use.
  [[nodiscard]] bool left() const {
    return wake_.source.stop_requested() && !stop_.stop_requested();
  }

 private:
  friend class Endpoints;
  Waiting(Endpoints* owner, std::uint64_t id, Wake wake, std::stop_token stop)
      : owner_(owner), id_(id), wake_(std::move(wake)), stop_(stop), on_stop_(stop_, wake_) {}

  Endpoints* owner_;  // not owned
  std::uint64_t id_;
  Wake wake_;
  std::stop_token stop_;
  std::stop_callback<Wake> on_stop_;  // Close() ends the wait too
};

}  // namespace fwdsink
