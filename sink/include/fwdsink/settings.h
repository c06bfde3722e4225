// SPDX-License-Identifier: Apache-2.0
// One table of settings for everything that configures a forwarding daemon: every
// key, its value shape, its help line, whether it is secret. The `fwdsink` daemon's
// flags, its config file (TOML), its FWDSINK_<KEY> environment variables and the C
// API's fwdsink_conf_set() all set values through Settings::Set(), and one Build()
// turns them into DriverOptions plus the daemon-only values.
//
// Precedence is by source, not by call order: a flag beats the environment, which
// beats the config file, which beats the default (kApi ranks with kFlag). Every error
// names where the value came from ("fwdsink.toml:12", "FWDSINK_CHUNK_BYTES",
// "--chunk-bytes", "api") and the key. @ref LLP 0024#precedence
//
// Deliberately ignores: reading secrets (Build() names the files; LoadRequestSecrets()
// and FileTokenProvider() read them when the caller is ready), and command-line syntax
// (the daemon maps "--chunk-bytes" to "chunk_bytes" with KeyForFlag()).
//
// Threads: a Settings object is a plain value; use it from one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fwdsink/driver.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/status.h"

namespace fwdsink {

// Where a value came from, lowest precedence first (kApi ranks with kFlag).
enum class SettingSource { kDefault, kFile, kEnvironment, kFlag, kApi };
[[nodiscard]] std::string_view to_string(SettingSource source);

struct SettingInfo {                    // one row of the table
  std::string_view key;                 // "chunk_bytes"; the flag is "--" + key with '_' -> '-'
  std::string_view value_name;          // "N", "S", "URL", "" for a switch
  std::string_view help;                // one line (the --help text and --print-config use it)
  bool secret = false;                  // value redacted by Describe()
  bool repeatable = false;              // "header": each Set() appends (a later source replaces
                                        //  the whole list of an earlier source)
  bool daemon_only = false;             // log_file, log_json, progress, once, metrics_listen...
  bool is_switch = false;               // flag takes no value; "true"/"false"/"1"/"0" elsewhere
  std::string_view default_value = {};  // as shown by --help and Describe(); "" = none
};

// Every key, in the order --help lists them.
[[nodiscard]] std::span<const SettingInfo> SettingTable();
// Returns the row for `key`, or nullptr.
[[nodiscard]] const SettingInfo* FindSetting(std::string_view key);
// "chunk_bytes" -> "--chunk-bytes".
[[nodiscard]] std::string FlagForKey(std::string_view key);
// "--chunk-bytes" -> "chunk_bytes"; "" when no key has that flag.
[[nodiscard]] std::string KeyForFlag(std::string_view flag);
// "chunk_bytes" -> "FWDSINK_CHUNK_BYTES".
[[nodiscard]] std::string EnvironmentVariableForKey(std::string_view key);
// Returns the key that sets a DriverOptions field ("forward.backpressure.ladder[1]" ->
// "ladder"), or "" when no key does.
[[nodiscard]] std::string KeyForField(std::string_view field);

// How the daemon logs. @ref LLP 0022#logs
enum class LogMode {
  kAuto,      // progress line if stderr is a terminal, JSON lines otherwise
  kJson,      // log_json
  kProgress,  // progress
};
// LogLevel and EventLevel() are telemetry.h's (the events' list gives the levels).
[[nodiscard]] std::string_view to_string(LogLevel level);
[[nodiscard]] std::optional<LogLevel> ParseLogLevel(std::string_view text);

// The request files named by the settings, read by LoadRequestSecrets() (at start, and
// again on the daemon's SIGHUP). @ref LLP 0017#request-options
struct RequestFiles {
  std::vector<std::pair<std::string, std::filesystem::path>> header_files;  // header_file
  std::optional<std::filesystem::path> basic_auth_file;                     // basic_auth_file
  std::optional<std::string> proxy;                                         // proxy
};

// Values only the `fwdsink` daemon uses (the C API ignores them).
struct DaemonSettings {
  bool once = false;
  LogMode log_mode = LogMode::kAuto;
  std::optional<std::filesystem::path> log_file;
  LogLevel log_level = LogLevel::kInfo;
  std::chrono::milliseconds stats_interval = std::chrono::seconds{10};
  // GET /metrics, /healthz, /readyz on this HOST:PORT (ParseListenAddress). @ref LLP 0025
  std::optional<std::string> metrics_listen;
  // Inserts per second the whole fleet makes into the target table: --profile
  // clickhouse checks the table's deduplication window against it. @ref LLP 0017#dedup-window
  double fleet_insert_rate = 10;
};

struct SinkSettings {  // what Build() yields
  DriverOptions driver;
  std::optional<std::filesystem::path> token_file;
  RequestFiles request;  // header files, basic-auth file, proxy (read at start)
  // daemon-only values (ignored by the C API): once, log mode, log file, log level,
  // stats interval, and any a later helper adds (metrics_listen, max_dead_bytes,...)
  DaemonSettings daemon;
};

// Values by key, each with its source; builds the options. See the file comment.
class Settings {
 public:
  Settings();

  // Sets `key` (as in the table) from `source`. kNotFound: unknown key.
  // kInvalidArgument: bad value; the message names `where` and the key
  // ("fwdsink.toml:12: chunk_bytes: '4x' is not a byte count ..."; for a flag, the flag:
  // "--chunk-bytes: '4x' is not ..."). `where` is the file and line, the variable, the
  // flag, or "api". A value from a lower-precedence source than the one held is checked
  // and then ignored. A switch takes "", "true", "1" (on) or "false", "0" (off).
  Status Set(std::string_view key, std::string_view value, SettingSource source, std::string where);

  // Reads a TOML config file (flat `key = value` lines; arrays for repeatable keys and
  // lists) and sets every key with source kFile, where "FILE:LINE". An unknown key, a
  // table, or a syntax error is kInvalidArgument naming the file and line. A file that
  // cannot be read — missing, not a regular file (a folder, a FIFO, a device), over
  // kMaxConfigFileBytes — is an error with field() "config_file" naming it
  // (ReadRegularFile's code). @ref LLP 0023#regular-files
  Status LoadFile(const std::filesystem::path& path);

  // Sets every FWDSINK_<KEY> of `environment` ("NAME=value" strings, as in environ) with
  // source kEnvironment. Variables starting with FWDSINK_ that are not keys are not
  // errors: their names are appended to `unknown` (the daemon warns). `ignore` lists
  // names that are not settings but are known (FWDSINK_CONFIG). @ref LLP 0024#environment
  Status LoadEnvironment(std::span<const std::string> environment,
                         std::vector<std::string>* unknown,
                         std::span<const std::string_view> ignore = {});

  // Checks required keys and cross-key rules, then fwdsink::Validate(); errors name the
  // key and where its value came from.
  [[nodiscard]] Result<SinkSettings> Build() const;

  struct Effective {
    std::string key, value;
    SettingSource source;
    std::string where;
  };
  // Returns every key of the table in order with its effective value (the default when
  // unset; "" when there is none), secrets redacted.
  [[nodiscard]] std::vector<Effective> Describe() const;

 private:
  struct Held {
    std::vector<std::string> values;  // one unless the key is repeatable
    SettingSource source = SettingSource::kDefault;
    std::string where;
  };
  std::map<std::string, Held, std::less<>> held_;
};

// Reads the header files and the basic-auth file into `forward` (moved from the daemon).
// Header values are appended to forward.headers; statuses name the key and the file,
// never the secret.
[[nodiscard]] Status LoadRequestSecrets(const RequestFiles& files, ForwardOptions& forward);

// A TokenProvider reading a bearer token file: on first use, and again on refresh.
// Leading and trailing whitespace is trimmed; an empty or missing file gives no token.
// Copies share one cache. Called on the sending thread.
[[nodiscard]] TokenProvider FileTokenProvider(std::filesystem::path path);
// Reads the token file now and checks the token as a header value (no CR, LF, NUL or
// other control byte). A missing or empty file is OK (an agent may write it later).
[[nodiscard]] Status CheckTokenFile(const std::filesystem::path& path);

// Parses a duration: a number (fractions allowed) with an optional unit ms|s|m|h;
// seconds when there is none. Returns nullopt for garbage, negatives and overflow.
[[nodiscard]] std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);
// Parses a byte count: digits with an optional k|m|g suffix (powers of 1024).
[[nodiscard]] std::optional<std::uint64_t> ParseSize(std::string_view text);
// Returns the reason ParseSize(text) failed, for an error message: "out of range (at
// most 2^64-1 bytes)" for digits with a suffix that do not fit, "not a byte count
// (digits with an optional k/m/g)" otherwise. @ref LLP 0023#smaller-findings
[[nodiscard]] std::string SizeProblem(std::string_view text);
// Parses a listen address: "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces, as
// "0.0.0.0"); port 0 picks a free one. Returns nullopt for anything else.
[[nodiscard]] std::optional<std::pair<std::string, int>> ParseListenAddress(std::string_view text);
// Splits "Name: value" (optional whitespace after the colon) and checks both parts
// (ValidateHeaderField); the status names `source` and never quotes the value.
[[nodiscard]] Result<std::pair<std::string, std::string>> ParseHeaderFlag(std::string_view text,
                                                                          std::string_view source);

// Looks an environment variable up; returns nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// Returns the proxy for `url` from the environment, curl's way: https_proxy (or
// HTTPS_PROXY) for https, http_proxy (lower case only) for http, none when no_proxy
// (or NO_PROXY) is "*" or lists the host or a domain suffix of it. Empty when none.
[[nodiscard]] std::string ProxyFromEnvironment(std::string_view url, const EnvLookup& env);
// The real environment.
[[nodiscard]] EnvLookup ProcessEnvironment();
// Returns the process environment as "NAME=value" strings (for LoadEnvironment()).
[[nodiscard]] std::vector<std::string> ProcessEnvironmentEntries();

}  // namespace fwdsink
