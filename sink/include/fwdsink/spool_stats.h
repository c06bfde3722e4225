// SPDX-License-Identifier: Apache-2.0
// What a spool holds, measured from outside: for metrics, the stats line and
// `fwdsink status`. Read-only: no lock is taken, nothing is written, so it works while
// a daemon forwards the spool. @ref LLP 0025#status
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "fwdsink/status.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

// The spool's backlog and dead-letter area, as found on disk.
struct SpoolUsage {
  std::uint64_t ready_partitions = 0;  // sealed `<name>.ndjson` files in ready/
  std::uint64_t ready_bytes = 0;
  // Modification time of the oldest ready partition (about when it was sealed: a
  // rename keeps it), if any.
  std::optional<std::chrono::system_clock::time_point> oldest_ready;
  std::uint64_t dead_letters = 0;  // records (`*.json`) in dead/
  std::uint64_t dead_bytes = 0;    // every file of dead/ (rows and records)
};

// Measures the spool at `spool_dir`. kNotFound when it has no ready/ folder; kIo when
// a folder cannot be listed. Any thread.
[[nodiscard]] Result<SpoolUsage> MeasureSpool(const std::filesystem::path& spool_dir);
// Counts the sealed partitions waiting in SPOOL/ready (as MeasureSpool does, without
// reading sizes or dead/); 0 when the folder cannot be listed. For progress and stats
// lines, often. Any thread.
[[nodiscard]] std::uint64_t CountReadyPartitions(const std::filesystem::path& spool_dir);

// Where the daemon records its last error: SPOOL/last_error.json, one JSON object (the
// event as logged, with `ts`). @ref LLP 0025#status
[[nodiscard]] std::filesystem::path LastErrorPath(const std::filesystem::path& spool_dir);
// Returns whether `name` is an error worth recording there (auth, TLS, config,
// permanent, spool and partition errors, give-ups; not backpressure).
[[nodiscard]] bool IsRecordedError(std::string_view event_name);
// Replaces SPOOL/last_error.json with `event` stamped `when`, atomically.
[[nodiscard]] Status WriteLastError(const std::filesystem::path& spool_dir, const Event& event,
                                    std::chrono::system_clock::time_point when);
// Reads SPOOL/last_error.json: its text, or nullopt when there is none.
[[nodiscard]] Result<std::optional<std::string>> ReadLastError(
    const std::filesystem::path& spool_dir);

}  // namespace fwdsink
