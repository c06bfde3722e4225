// SPDX-License-Identifier: Apache-2.0
// Command-line parsing for the `fwdsink` daemon: pure functions from argv to plain
// config structs, so a bad flag is reported with a message naming it and exit 64
// (EX_USAGE) before anything touches the spool or the network.
// @ref LLP 0022#exit-codes
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/dead_letters.h"
#include "fwdsink/driver.h"
#include "fwdsink/exit_code.h"
#include "fwdsink/settings.h"
#include "request_options.h"

namespace fwdsink_cli {

// sysexits(3) codes: shell scripts and service managers read these. The library's
// (fwdsink/exit_code.h, shared with the C API), plus the daemon's own 66.
using fwdsink::kExitConfig;              // 78 EX_CONFIG: the server refuses our configuration
using fwdsink::kExitDataErr;             // 65 EX_DATAERR: rows went to dead letters
using fwdsink::kExitIoErr;               // 74 EX_IOERR: the spool cannot be read/written
using fwdsink::kExitNoPerm;              // 77 EX_NOPERM: the server refused our token
using fwdsink::kExitOk;                  // 0
using fwdsink::kExitTempFail;            // 75 EX_TEMPFAIL: something left for a later run
using fwdsink::kExitUsage;               // 64 EX_USAGE: bad command line or config
inline constexpr int kExitNoInput = 66;  // EX_NOINPUT: named dead letter not found

// A command-line problem: the option concerned ("--ladder") and what is wrong.
struct UsageError {
  std::string option;
  std::string message;
  // Returns "fwdsink: --ladder: rung 2 must be positive" style text.
  [[nodiscard]] std::string Text() const;
};

using LogMode = fwdsink::LogMode;

// `fwdsink forward`: the settings from flags, FWDSINK_* variables and the --config
// file (fwdsink/settings.h), plus what only the command line asks for.
struct ForwardConfig : fwdsink::SinkSettings {
  bool help = false;
  bool print_config = false;  // --print-config: print `effective` and exit
  // Every key's effective value and source, secrets redacted (for --print-config).
  std::vector<fwdsink::Settings::Effective> effective;
  // With --print-config only: why the settings do not build ("" when they do).
  std::string print_error;
  // FWDSINK_* variables that are not keys, warned about at start. @ref LLP 0024#environment
  std::vector<std::string> unknown_variables;
};

enum class DeadAction { kList, kRequeue, kPurge };

struct DeadConfig {
  DeadAction action = DeadAction::kList;
  std::filesystem::path spool;
  fwdsink::DeadFilter filter{};
  bool has_filter = false;  // any of --reason/--status/--kind/--older-than/...
  bool all = false;         // purge --all
  bool json = false;        // list --json
  std::vector<std::string> names;
  bool help = false;
};

struct GenerateConfig {
  std::filesystem::path spool;
  std::uint64_t bytes = 0;
  std::uint64_t partitions = 4;
  std::uint64_t seed = 1;
  bool help = false;
};

// The result of parsing one sub-command: a config, or the error naming the option.
template <typename T>
struct Parsed {
  std::optional<T> config;
  UsageError error{};
};

// Parses the arguments after `fwdsink forward`, reads the --config file (or
// FWDSINK_CONFIG) and the FWDSINK_<KEY> entries of `environment` ("NAME=value"), and
// builds the settings (flags > environment > file > defaults). Errors name the source
// (flag, variable, file:line) and the key. @ref LLP 0024#precedence
[[nodiscard]] Parsed<ForwardConfig> ParseForward(const std::vector<std::string>& args,
                                                 std::span<const std::string> environment = {});
// Parses the arguments after `fwdsink dead` (the first one is list|requeue|purge).
[[nodiscard]] Parsed<DeadConfig> ParseDead(const std::vector<std::string>& args);
// Parses the arguments after `fwdsink generate`.
[[nodiscard]] Parsed<GenerateConfig> ParseGenerate(const std::vector<std::string>& args);

// Returns the option that sets a DriverOptions field ("forward.backpressure.ladder[1]"
// -> "--ladder"), or the field itself prefixed with "config " if no option does.
[[nodiscard]] std::string OptionForField(std::string_view field);

// Durations and byte counts, parsed as the settings parse them (fwdsink/settings.h).
using fwdsink::ParseDuration;
using fwdsink::ParseSize;

[[nodiscard]] std::string MainUsage();
[[nodiscard]] std::string ForwardUsage();
// Returns the --print-config text: one `key = value  # source` line per effective value.
[[nodiscard]] std::string PrintConfig(const ForwardConfig& config);
[[nodiscard]] std::string DeadUsage();
[[nodiscard]] std::string GenerateUsage();

}  // namespace fwdsink_cli
