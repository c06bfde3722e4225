// SPDX-License-Identifier: Apache-2.0
// What a driver is told to do (DriverOptions) and what one of its ticks did
// (TickReport, PermanentError). Plain data, apart from the driver (driver.h).
// @ref LLP 0014#layers
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/concurrency.h"
#include "fwdsink/dead_letters.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/forward_result.h"
#include "fwdsink/status.h"

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

}  // namespace fwdsink
