// SPDX-License-Identifier: Apache-2.0
// What a forward sink is given: its collaborators (clock, sleeper, gate, pacer, token
// provider, event callback, endpoints, credentials, latency histogram, attempt
// observer), the request slots and the in-flight byte budget it shares with other
// senders. Apart from the sink (forward_sink.h). @ref LLP 0014#layers
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "fwdsink/backoff.h"
#include "fwdsink/clock.h"
#include "fwdsink/credentials.h"
#include "fwdsink/forward_result.h"
#include "fwdsink/gate.h"
#include "fwdsink/histogram.h"
#include "fwdsink/pacer.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

class Endpoints;  // fwdsink/endpoints.h

// Supplies bearer tokens. Called with force_refresh=false before the first request and
// with true after a 401; returns nullopt when no token is available. Called on the
// sending thread. An empty std::function means "no Authorization header".
using TokenProvider = std::function<std::optional<std::string>(bool force_refresh)>;

// Injected collaborators; everything defaults to the real thing.
//
// Lifetimes: the objects `time` and `sleeper` point to are not owned, and must
// outlive every ForwardSink (and Driver) created with these deps. The gate, the pacer
// and the endpoints are shared ownership. The callables are copied into the sink and
// called on the sending thread (the token provider, the event callback, the random
// source): whatever they capture must outlive the sink.
class RequestSlots;    // below
class InflightBudget;  // below
class ConnectionPool;  // engine-internal

struct ForwardDeps {
  TimeSource* time = nullptr;          // Not owned. Default: RealTimeSource()
  Sleeper* sleeper = nullptr;          // Not owned. Default: RealSleeper()
  std::shared_ptr<EndpointGate> gate;  // shared per endpoint; default: a private one
  // Shared per endpoint like the gate; default: a private one from options.pacing.
  std::shared_ptr<EndpointPacer> pacer;
  TokenProvider tokens;    // default: no Authorization header
  EventCallback on_event;  // default: events are dropped
  // Jitter source, when policy.jitter > 0; default: a private generator seeded from
  // std::random_device (guarded: safe from any thread).
  UniformRandom random;
  // Per-endpoint state (gate, pacer, token provider, counters, health) shared by every
  // sender made from copies of these deps; default: Endpoints::Make(options, deps),
  // whose primary takes `gate` and `pacer` above. @ref LLP 0019
  std::shared_ptr<Endpoints> endpoints;
  // Credentials published while the sink runs (the daemon's SIGHUP), shared by every
  // sender; default: none, the options' headers and basic_auth hold. @ref LLP 0024#reload
  std::shared_ptr<const CredentialsBox> credentials;
  // Request latency (Post start to verdict input), shared like the gate; default: none
  // (not recorded). @ref LLP 0025#metrics
  std::shared_ptr<LatencyHistogram> latency;
  // Told of every answered request, on the sending thread; default: nobody.
  AttemptObserver on_attempt;
  // Slots for a partition's second and later requests in flight (its first is the
  // sender's own): the driver's adaptive limit counts requests. The driver gives each
  // sender its own, over one shared limit, since Yield() acts on that sender's slot.
  // Default: none (a sink alone fills its window). @ref LLP 0014#window
  std::shared_ptr<RequestSlots> requests;
  // The bytes in flight, shared by every sender made from these deps; default: a
  // private budget of options.max_inflight_bytes. @ref LLP 0014#window-memory
  std::shared_ptr<InflightBudget> inflight;
  // The connections (and their threads) that every sender made from these deps posts
  // on, partitions and packs alike; engine-internal: copied, never made outside. Default:
  // a private pool. @ref LLP 0014#threads
  std::shared_ptr<ConnectionPool> connections;
};

// Slots for requests in flight beyond a sender's first, and the point between two
// chunks where the sender may give its own slot up. Thread-safe.
class RequestSlots {
 public:
  virtual ~RequestSlots() = default;
  // Takes a slot if one is free now, without waiting; `held` is how many this sender
  // holds already (a fair share caps it).
  [[nodiscard]] virtual bool TryAcquire(std::size_t held) = 0;
  virtual void Release() = 0;
  // Called by the sink between two chunks: after an acknowledgement whose cursor was
  // taken, that leaves none of the partition's requests in flight (the sender holds its
  // own slot alone) and more of the partition to send. It may give that slot up and
  // wait for it again (a limit that fell) before the sink's next request; the sink goes
  // on when it returns, and a Close() that cut it short aborts that request. Default:
  // returns at once. @ref LLP 0021#cursor-road @ref LLP 0018#slots
  virtual void Yield() {}
};

// A budget of bytes, taken by a request's bodies while it is in flight: a cap, like
// Kafka's buffer.memory. Thread-safe. @ref LLP 0014#inflight-cap
class InflightBudget {
 public:
  explicit InflightBudget(std::uint64_t limit) : limit_(limit) {}
  // Takes `bytes` if they fit under the limit, or if nothing at all is in flight: a body
  // larger than the whole budget goes, alone, and only then. `held` is not read any
  // more (a sender's first request went whatever the others held: not a cap); kept so
  // that callers still compile.
  [[nodiscard]] bool TryTake(std::uint64_t bytes, std::uint64_t held = 0);
  // Waits until TryTake(bytes) succeeds (true) or `stop` is requested (false).
  [[nodiscard]] bool Take(std::uint64_t bytes, const std::stop_token& stop);
  void Give(std::uint64_t bytes);
  [[nodiscard]] std::uint64_t in_use() const { return used_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }
  // The most ever taken at once, and how many times a taker had to wait for room.
  [[nodiscard]] std::uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<std::uint64_t> waits_{0};
  std::atomic<int> waiting_{0};  // takers in Take(): Give() wakes them only then
  std::mutex mu_;
  std::condition_variable_any room_;
};

}  // namespace fwdsink
