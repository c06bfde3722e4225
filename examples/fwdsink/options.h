// Command-line parsing for the `fwdsink` daemon: pure functions from argv to plain
// config structs, so a bad flag is reported with a message naming it and exit 64
// (EX_USAGE) before anything touches the spool or the network.
// @ref LLP 0022#exit-codes
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/dead_letters.h"
#include "fwdsink/driver.h"
#include "request_options.h"

namespace fwdsink_cli {

// sysexits(3) codes: shell scripts and service managers read these.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;     // EX_USAGE: bad command line or config
inline constexpr int kExitDataErr = 65;   // EX_DATAERR: rows went to dead letters
inline constexpr int kExitNoInput = 66;   // EX_NOINPUT: named dead letter not found
inline constexpr int kExitIoErr = 74;     // EX_IOERR: the spool cannot be read/written
inline constexpr int kExitTempFail = 75;  // EX_TEMPFAIL: something left for a later run
inline constexpr int kExitNoPerm = 77;    // EX_NOPERM: the server refused our token
inline constexpr int kExitConfig = 78;    // EX_CONFIG: the server refuses our configuration

// A command-line problem: the option concerned ("--ladder") and what is wrong.
struct UsageError {
  std::string option;
  std::string message;
  // Returns "fwdsink: --ladder: rung 2 must be positive" style text.
  [[nodiscard]] std::string Text() const;
};

enum class LogMode {
  kAuto,      // progress line if stderr is a terminal, JSON lines otherwise
  kJson,      // --log-json
  kProgress,  // --progress
};

struct ForwardConfig {
  fwdsink::DriverOptions driver{};
  std::optional<std::filesystem::path> token_file;  // --token-file
  RequestFlags request{};  // --header-file, --basic-auth-file, --proxy (read at start)
  bool once = false;       // --once
  LogMode log_mode = LogMode::kAuto;
  std::optional<std::filesystem::path> log_file;  // --log-file: JSON lines, appended
  std::chrono::milliseconds stats_interval = std::chrono::seconds{10};  // --stats-interval
  bool help = false;
  // @ref LLP 0025 (ops): --metrics-listen ADDR:PORT; --max-dead-bytes and --max-dead-age
  // set driver.dead_caps.
  std::optional<std::string> metrics_listen;
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

// Parses the arguments after `fwdsink forward`, then runs fwdsink::Validate on the
// result and maps a bad field back to the option that sets it.
[[nodiscard]] Parsed<ForwardConfig> ParseForward(const std::vector<std::string>& args);
// Parses the arguments after `fwdsink dead` (the first one is list|requeue|purge).
[[nodiscard]] Parsed<DeadConfig> ParseDead(const std::vector<std::string>& args);
// Parses the arguments after `fwdsink generate`.
[[nodiscard]] Parsed<GenerateConfig> ParseGenerate(const std::vector<std::string>& args);

// Returns the option that sets a DriverOptions field ("forward.backpressure.ladder[1]"
// -> "--ladder"), or the field itself prefixed with "config " if no option does.
[[nodiscard]] std::string OptionForField(std::string_view field);

// Parses a duration: a number (fractions allowed) with an optional unit ms|s|m|h;
// seconds when there is none. Returns nullopt for garbage, negatives and overflow.
[[nodiscard]] std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);
// Parses a byte count: digits with an optional k|m|g suffix (powers of 1024).
[[nodiscard]] std::optional<std::uint64_t> ParseSize(std::string_view text);

[[nodiscard]] std::string MainUsage();
[[nodiscard]] std::string ForwardUsage();
[[nodiscard]] std::string DeadUsage();
[[nodiscard]] std::string GenerateUsage();

}  // namespace fwdsink_cli
