// SPDX-License-Identifier: Apache-2.0
// The driver: forwards a spool's ready partitions, tick after tick, until closed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/concurrency.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/spool.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

struct DriverOptions {
  std::filesystem::path spool_dir;
  ForwardOptions forward{};
  // Partitions failing for longer than this (wall clock, from the first failure with
  // no progress since, persisted across restarts) are moved to dead letters whole.
  std::chrono::milliseconds horizon = std::chrono::hours{24};
  // Pauses between ticks by overload level (see OverloadLevel); the first is the idle
  // poll interval.
  std::vector<std::chrono::milliseconds> tick_pauses = {
      std::chrono::seconds{1}, std::chrono::seconds{5}, std::chrono::seconds{15},
      std::chrono::seconds{30}, std::chrono::seconds{60}};
  // How many partitions are sent at once (each by its own sender, all sharing the
  // endpoint's gate and pacer): adaptive between 1 and max (the default), or fixed at
  // max. {.adaptive = false, .max = 1} is one request in flight. @ref LLP 0018
  ConcurrencyPolicy concurrency{};
  // Caps on dead/, enforced at the start of every tick (oldest deleted first, each with
  // a driver.dead_purged event). Default: none. @ref LLP 0025#caps
  DeadCaps dead_caps{};
  // Ready partitions smaller than this many bytes (with no cursor) are sent several to a
  // request, consecutive ones up to forward.chunker.chunk_bytes, under a durable
  // manifest. nullopt (the default): half of chunk_bytes; 0: off. @ref LLP 0027
  std::optional<std::uint64_t> pack_below{};
  // Waits up to this long (from the oldest member's seal) for more small partitions
  // before sending a pack that is not full; 0: pack what is ready now.
  std::chrono::milliseconds pack_linger{0};
};

// Checks the options; returns OK, or a kInvalidConfig status naming the bad field
// ("spool_dir", "horizon", "forward.url", ...).
[[nodiscard]] Status Validate(const DriverOptions& options);

// A pass in which every request failed the same permanent way. @ref LLP 0017#permanent-errors
struct PermanentError {
  int status = 0;       // the HTTP status (the same for every partition of the pass)
  std::string reason;   // the engine's code name, or "http_404"
  std::string message;  // the server's own words, or ours when it said nothing
  Outcome outcome = Outcome::kRespooled;  // kRespooled (404, 405, 415...) or kConfigError
};

// What one tick did.
struct TickReport {
  std::uint64_t partitions = 0;       // ready partitions looked at
  std::uint64_t delivered = 0;        // delivered and removed
  std::uint64_t respooled = 0;        // given back for a later tick
  std::uint64_t poisoned_chunks = 0;  // chunks moved to dead letters (the rest went on)
  std::uint64_t horizon_dead = 0;     // whole partitions moved to dead letters (horizon)
  std::uint64_t torn = 0;             // unreadable/torn tails moved to dead letters
  std::uint64_t errors = 0;           // auth/TLS/spool errors that stopped work
  std::uint64_t quarantined = 0;      // entries of ready/ moved to quarantine/
  std::uint64_t chunks_acked = 0;
  std::uint64_t rows_acked = 0;
  std::uint64_t bytes_acked = 0;
  bool throttled = false;                    // some partition hit 429/503
  bool aborted = false;                      // Close() cut the tick short
  Outcome last_error = Outcome::kDelivered;  // auth/TLS/config when errors > 0
  // Set when no chunk was acknowledged and every partition tried failed with the same
  // permanent status and reason (also emitted once as driver.permanent_error).
  std::optional<PermanentError> permanent_error;
  // Clean: nothing left behind for a later tick (the daemon's --once exit code).
  [[nodiscard]] bool all_delivered() const {
    return respooled == 0 && errors == 0 && quarantined == 0 && !aborted;
  }
};

// DriverCounters (the driver's counters) is generated in telemetry.h.

// Forwards every ready partition of one spool to one endpoint.
//
// Threads: Tick() and Run() are called from one driver thread. A tick with several
// ready partitions sends them on up to options.concurrency.max sender threads of its
// own (joined before Tick() returns), one ForwardSink each, made from copies of the one
// ForwardDeps: the callables in the deps (on_event, tokens, random) may then be called
// from several threads at once, and what they capture must be safe for that. Close()
// may be called from any thread (a signal-handling thread, typically), any number of
// times; it returns at once, and Run()/Tick() return within ~100 ms with every cursor
// at its last acknowledged chunk. counters() (overload_level and concurrency_limit
// included), sink(), sink_counters() and sender_states() are readable from any thread.
// The deps' lifetimes are as ForwardDeps says (they must outlive the driver).
// @ref LLP 0018
class Driver {
 public:
  // Creates a driver; returns a kInvalidConfig status naming the field ("spool_dir",
  // "forward.url", ...) when the options do not validate or the spool cannot be opened,
  // and kBusy (field "spool_dir", the message naming the holder's pid) when another
  // driver holds the spool's lock. The lock is held until the driver is destroyed.
  // @ref LLP 0023#spool-lock
  [[nodiscard]] static Result<std::unique_ptr<Driver>> Create(DriverOptions options,
                                                              ForwardDeps deps);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Forwards ready partitions oldest first, once each. A partition whose chunk
  // exhausts its inline budget is respooled and the tick moves on.
  TickReport Tick();
  // Ticks until Close(), pausing between ticks per the overload level.
  void Run();
  // Stops Run()/Tick() and aborts the sink's pause or request. Any thread, idempotent.
  void Close();
  [[nodiscard]] bool closed() const;

  [[nodiscard]] const DriverCounters& counters() const;
  // Returns the first sender: its options and pacing are the endpoint's, its counters
  // and state its own (use sink_counters() and sender_states() for all of them).
  [[nodiscard]] const ForwardSink& sink() const;
  // Returns the senders' counters summed (gauges: the largest). Any thread.
  [[nodiscard]] CountersSnapshot sink_counters() const;
  // Returns what each sender is doing now, one entry per sender. Any thread.
  [[nodiscard]] std::vector<ForwardSink::State> sender_states() const;
  // Returns the spool for reading (cursors, dead letters). Call it on the driver
  // thread while neither Tick() nor Run() runs: then no cursor save is in flight
  // (checked by FWDSINK_DCHECK).
  [[nodiscard]] const Spool& spool() const;

 private:
  struct Impl;  // the spool, the senders and their cursor writers, the limits
  explicit Driver(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace fwdsink
