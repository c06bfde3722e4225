// SPDX-License-Identifier: Apache-2.0
// Several endpoints: a primary and its fallbacks, each with what its senders share.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fwdsink/endpoint_health.h"
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
  // Makes the endpoints of `options`. The primary takes deps.gate and deps.pacer when
  // set; every other gate and pacer is new (the pacer from options.pacing, its max_wait
  // options.backpressure.max_wait). Every token provider is deps.tokens.
  [[nodiscard]] static std::shared_ptr<Endpoints> Make(const ForwardOptions& options,
                                                       const ForwardDeps& deps);

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  // Returns endpoint i (0: the primary). Checked: i < size().
  [[nodiscard]] EndpointEntry& at(std::size_t i);
  [[nodiscard]] const EndpointEntry& at(std::size_t i) const;

  // Returns where the next request goes (EndpointHealth::Choose) at `now`.
  [[nodiscard]] EndpointHealth::Choice Choose(MonotonicTime now);
  // Takes the outcome of one request (EndpointHealth::Report).
  HealthDecision Report(const HealthReport& report, MonotonicTime now);
  // Returns the endpoint in use now.
  [[nodiscard]] std::size_t active() const;
  // Returns whether endpoint i is up or down.
  [[nodiscard]] EndpointState state(std::size_t i) const;
  // Returns whether the URLs are `urls`, in order (a sink checks the deps it is given).
  [[nodiscard]] bool Matches(const std::vector<std::string>& urls) const;

 private:
  Endpoints(FailoverPolicy policy, std::size_t n);

  std::vector<std::unique_ptr<EndpointEntry>> entries_;  // fixed after Make()
  mutable std::mutex mu_;
  EndpointHealth health_;  // guarded by mu_
};

}  // namespace fwdsink
