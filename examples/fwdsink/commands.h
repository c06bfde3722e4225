// SPDX-License-Identifier: Apache-2.0
// The daemon's sub-commands. Each runs on the main thread and returns the process exit
// code (see options.h); none throws for operational failures.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "options.h"

namespace fwdsink_cli {

// Forwards until SIGINT/SIGTERM, or one pass with --once. Must be called before any
// other thread exists: it blocks SIGINT/SIGTERM for the whole process so that only its
// signal thread sees them. @ref LLP 0022#signals
[[nodiscard]] int RunForward(const ForwardConfig& config);

// `fwdsink dead list|requeue|purge`.
[[nodiscard]] int RunDead(const DeadConfig& config);

// `fwdsink generate`.
[[nodiscard]] int RunGenerate(const GenerateConfig& config);

// `fwdsink status` (status.cc): a read-only look at a spool. @ref LLP 0025#status
struct StatusConfig {
  std::filesystem::path spool;
  bool json = false;
  bool help = false;
};
[[nodiscard]] Parsed<StatusConfig> ParseStatus(const std::vector<std::string>& args);
[[nodiscard]] std::string StatusUsage();
[[nodiscard]] int RunStatus(const StatusConfig& config);

// Returns one telemetry row (no newline) for row number `seq` of a generator seeded
// with `seed`. Deterministic: the same (seed, seq) gives the same row everywhere.
[[nodiscard]] std::string GenerateRow(std::uint64_t seed, std::uint64_t seq);

}  // namespace fwdsink_cli
