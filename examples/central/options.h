// SPDX-License-Identifier: Apache-2.0
// Command-line options of fwdsink-central, the reference ingest receiver.
//
// Parsing is pure (no I/O beyond what the caller prints), so a bad flag is reported with
// a message naming the option and the process exits 64 (EX_USAGE).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace central {

// Everything the receiver can be told on its command line. Plain data; see Usage() for
// the meaning of each flag.
struct Options {
  std::string host = "127.0.0.1";                  // --listen HOST:PORT
  int port = 0;                                    // 0 = ephemeral
  std::filesystem::path out_dir;                   // --out DIR (required)
  std::optional<std::filesystem::path> port_file;  // --port-file FILE
  std::string key_header = "Idempotency-Key";      // --key-header NAME

  // Token bucket on wire body bytes; no throttle when rate is absent.
  std::optional<std::uint64_t> rate_bytes_per_sec;  // --rate
  std::optional<std::uint64_t> burst_bytes;         // --burst (default: one second of rate)
  bool ratelimit_headers = false;                   // --ratelimit-headers

  // Bearer auth: a fixed token, or the current content of a file re-read per request.
  std::optional<std::string> token;                 // --token
  std::optional<std::filesystem::path> token_file;  // --token-file
  std::optional<std::chrono::seconds> token_ttl;    // --token-ttl

  std::uint64_t max_body = 64ull << 20;  // --max-body: wire and decoded limit
  // --threads: connections served at once (cpp-httplib serves a connection per thread
  // until it closes or its keep-alive ends). @ref LLP 0011#threads
  std::uint64_t threads = 128;

  std::optional<std::filesystem::path> tls_cert;  // --tls-cert
  std::optional<std::filesystem::path> tls_key;   // --tls-key

  // Fault injection. A POST is failed when any selector matches.
  std::optional<int> fail_status;                         // --fail-status
  std::optional<std::uint64_t> fail_every;                // --fail-every N
  std::optional<std::uint64_t> fail_first;                // --fail-first N
  std::optional<std::chrono::milliseconds> fail_for;      // --fail-for-ms MS
  std::string fail_reason = "injected";                   // --fail-reason
  std::optional<std::string> retry_after_raw;             // --retry-after RAW
  bool no_retry_after = false;                            // --no-retry-after
  std::size_t error_body_bytes = 0;                       // --error-body-bytes N
  std::optional<std::chrono::milliseconds> header_delay;  // --header-delay-ms MS
  std::optional<std::uint64_t> header_delay_every;        // --header-delay-every N

  std::optional<std::filesystem::path> request_log;  // --request-log FILE

  bool help = false;     // --help
  bool version = false;  // --version
};

// The outcome of parsing: options, or a message that names the offending flag.
struct ParseResult {
  std::optional<Options> options;
  std::string error;  // empty when options is set
};

// Parses argv (without argv[0]). Validates combinations up front.
[[nodiscard]] ParseResult ParseOptions(const std::vector<std::string>& args);

// Returns the --help text.
[[nodiscard]] std::string Usage();

}  // namespace central
