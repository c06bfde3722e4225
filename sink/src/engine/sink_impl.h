// SPDX-License-Identifier: Apache-2.0
// Private to the engine: what a ForwardSink keeps between calls, for the files that
// implement its calls (forward_sink.cc: one partition's call). @ref LLP 0014#core
#pragma once

#include <mutex>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "engine/auth.h"
#include "engine/chunk_source.h"
#include "engine/connection_pool.h"
#include "fwdsink/forward_sink.h"
#include "io/single_slot_worker.h"

namespace fwdsink {

// Everything a sink keeps between calls; the public class is its handle.
struct ForwardSink::Impl {
  Impl(ForwardOptions o, ForwardDeps d, std::vector<EndpointLink> l)
      : options(std::move(o)),
        deps(std::move(d)),
        encoder(options.compression, options.zstd_level),
        credentials{.headers = options.headers, .links = std::move(l)} {
    buffers.Reserve(options.chunker.chunk_bytes, options.compression != Compression::kIdentity);
    for (EndpointLink& link : credentials.links) {
      link.basic_authorization = BasicAuthorizationFor(options, link.transport->endpoint());
    }
  }

  void SetState(State s) {
    std::lock_guard lock(state_mu);
    state = std::move(s);
  }

  // Takes `bytes` of the in-flight budget for `partition`, waiting for room (the state
  // says so meanwhile) until `stop`: both kinds of call wait for their first body so.
  // @ref LLP 0014#inflight-cap
  bool WaitForInflight(std::uint64_t bytes, const std::string& partition,
                       const std::stop_token& stop) {
    if (deps.inflight->TryTake(bytes)) return true;
    SetState(
        {.phase = State::Phase::kWaiting, .partition = partition, .reason = "inflight_budget"});
    return deps.inflight->Take(bytes, stop);
  }

  const ForwardOptions options;
  ForwardDeps deps;      // resolved (ResolveDeps): every default filled
  Encoder encoder;       // sender thread, or the read-ahead job while it runs
  ChunkBuffers buffers;  // sender thread, or the read-ahead job (buffers.ahead)
  // The extra headers and one link per endpoint, in deps.endpoints' order. Sender
  // thread only; never logged.
  SinkCredentials credentials;
  // One connection per request in flight, shared with the other senders made from
  // the same deps (ResolveDeps). @ref LLP 0014#threads
  ConnectionPool& connections{*deps.connections};
  std::stop_source stop;
  Counters counters;
  mutable std::mutex state_mu;
  State state;  // guarded by state_mu
  // On the process's file threads. @ref LLP 0014#threads
  SingleSlotWorker read_ahead{JobThreads::ForFiles()};  // last: idle before the buffers go
};

}  // namespace fwdsink
