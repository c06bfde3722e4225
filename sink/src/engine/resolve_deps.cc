// SPDX-License-Identifier: Apache-2.0
#include "engine/resolve_deps.h"

#include "base/default_random.h"
#include "engine/connection_pool.h"
#include "fwdsink/endpoints.h"

namespace fwdsink {

Result<ForwardDeps> ResolveDeps(const ForwardOptions& options, ForwardDeps deps) {
  if (!deps.time) deps.time = &RealTimeSource();
  if (!deps.sleeper) deps.sleeper = &RealSleeper();
  if (!deps.random) deps.random = MakeDefaultRandom();
  // Every sender made from copies of one deps shares the endpoints' state.
  // @ref LLP 0019#shared
  if (!deps.endpoints) deps.endpoints = Endpoints::Make(options, deps);
  if (!deps.endpoints->Matches(EndpointUrls(options))) {
    return Status::Config("fallback_urls", "ForwardDeps::endpoints was made for other URLs");
  }
  if (!deps.inflight) deps.inflight = std::make_shared<InflightBudget>(options.max_inflight_bytes);
  // One pool for every sender made from these deps. @ref LLP 0014#threads
  if (!deps.connections) {
    deps.connections = std::make_shared<ConnectionPool>(EndpointUrls(options), options.transport,
                                                        *deps.time, options.transport.keep_alive);
  }
  deps.gate = deps.endpoints->at(0).gate;
  deps.pacer = deps.endpoints->at(0).pacer;
  return deps;
}

}  // namespace fwdsink
