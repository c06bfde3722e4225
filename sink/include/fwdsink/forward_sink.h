// SPDX-License-Identifier: Apache-2.0
// The forward sink: streams one NDJSON partition to the ingest endpoint, chunk by
// chunk, retrying the same chunk in place under backpressure.
//
// The class alone: its contracts have headers of their own, included here (with
// spool.h, which it has always brought) so that this header still declares
// every name it did. @ref LLP 0014#layers
//   fwdsink/forward_options.h  ForwardOptions, ResponseRules, BasicAuth, Validate()
//   fwdsink/forward_result.h   Outcome, ForwardResult, ForwardStart, PoisonedChunk,
//                              AttemptRecord, SenderState, the callbacks
//   fwdsink/cursor_log.h       CursorLog, AckedChunk, JournalState (the spool's; included
//                              by forward_result.h)
//   fwdsink/forward_deps.h     ForwardDeps, TokenProvider, RequestSlots, InflightBudget
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/clock.h"
#include "fwdsink/forward_deps.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/forward_result.h"
#include "fwdsink/pacer.h"
#include "fwdsink/spool.h"
#include "fwdsink/status.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

class Endpoints;    // fwdsink/endpoints.h
struct PackMember;  // fwdsink/forward_pack.h
struct PackResult;

// Streams partitions to one endpoint, or to the one in use of a primary and its
// fallbacks (ForwardOptions::fallback_urls). @ref LLP 0019
//
// Threads: ForwardPartition() runs on one thread at a time (the sender). Close(),
// counters() and state() may be called from any thread. Close() is idempotent,
// returns promptly (it only signals and shuts the socket down), and makes the current
// and every later ForwardPartition() return kAborted with the cursor at the last
// acknowledged chunk.
//
// Deliberately ignores: partition discovery, how cursors are stored and dead letters
// (the driver's job, through the cursor log it hands over, the poison callback and the
// outcome; a caller of its own may take the cursor through the ack callback).
class ForwardSink {
 public:
  // Creates a sink; returns a kInvalidConfig status naming the field when the options
  // do not validate or the URL/TLS settings are unusable ("transport.ca_file").
  [[nodiscard]] static Result<std::unique_ptr<ForwardSink>> Create(ForwardOptions options,
                                                                   ForwardDeps deps);
  ~ForwardSink();
  ForwardSink(const ForwardSink&) = delete;
  ForwardSink& operator=(const ForwardSink&) = delete;

  // Sends `path` (partition id `partition`) from byte `begin` to the end, chunk by
  // chunk, calling `on_ack` after each acknowledged chunk and `on_poison` with each
  // chunk the server refuses as malformed. Never throws for operational failures: the
  // outcome says what happened. The callbacks are called on this thread, before it
  // returns.
  [[nodiscard]] ForwardResult ForwardPartition(std::string_view partition,
                                               const std::filesystem::path& path,
                                               std::uint64_t begin, const AckCallback& on_ack,
                                               const PoisonCallback& on_poison = {});
  // The same from a cursor and its journal, telling `start.cursor_log` (when set) the
  // journal and each acknowledged chunk before `on_ack` (when set).
  // @ref LLP 0014#journal @ref LLP 0021#cursor-road
  [[nodiscard]] ForwardResult ForwardPartition(std::string_view partition,
                                               const std::filesystem::path& path,
                                               const ForwardStart& start, const AckCallback& on_ack,
                                               const PoisonCallback& on_poison = {});

  // Sends `members` (whole partitions, as their manifest recorded them) as one request
  // under `key`, with their own keys in an Idempotency-Members header. Nothing is sent
  // when a member is not as recorded. Same threads as ForwardPartition(). @ref LLP 0027
  [[nodiscard]] PackResult ForwardPack(const std::string& key,
                                       const std::vector<PackMember>& members);

  // Aborts any pause or in-flight request at once, and all later work. Any thread.
  void Close();
  [[nodiscard]] bool closed() const;

  // What the sender is doing now (SenderState, fwdsink/forward_result.h).
  using State = SenderState;
  [[nodiscard]] State state() const;
  [[nodiscard]] const Counters& counters() const;
  // Returns the pacer's rate now, of the endpoint in use, and where it comes from. Any
  // thread.
  [[nodiscard]] PaceRate pacing() const;
  // Returns the endpoints (one unless fallback URLs are set). Any thread.
  [[nodiscard]] const Endpoints& endpoints() const;
  [[nodiscard]] const ForwardOptions& options() const;

 private:
  struct Impl;  // the transport, encoder, chunk buffers, read-ahead worker, token, state
  class Call;   // one call, of a partition or a pack: its flights, attempts and conclusions
  explicit ForwardSink(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace fwdsink
