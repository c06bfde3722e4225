// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include <charconv>
#include <functional>
#include <map>
#include <string_view>
#include <system_error>

namespace central {
namespace {

constexpr std::string_view kUsage =
    R"(usage: fwdsink-central --out DIR [options]

A reference NDJSON ingest receiver. POST any path to ingest a chunk; GET /stats, /healthz.

  --listen HOST:PORT         address to bind (default 127.0.0.1:0; PORT 0 = ephemeral)
  --out DIR                  where received.ndjson and keys.log live (created if missing)
  --port-file FILE           write the bound port to FILE (atomically) once listening
  --key-header NAME          idempotency header (default Idempotency-Key)
  --rate BYTES_PER_SEC       token bucket on wire body bytes (429 byte_rate)
  --burst BYTES              bucket size (default: one second of --rate)
  --ratelimit-headers        advertise the bucket on every POST answered after it:
                             RateLimit-Policy: "bytes";q=RATE;w=1;qu="content-bytes";burst=BURST
                             RateLimit: "bytes";r=TOKENS_LEFT;t=SECONDS_TO_FULL
  --token TOKEN              require Authorization: Bearer TOKEN
  --token-file FILE          like --token, but the token is FILE's content, re-read per request
  --token-ttl SECONDS        a token value expires SECONDS after it was first used
  --max-body BYTES           wire and decoded body limit (default 67108864; 413 max_body)
  --threads N                connections served at once, a thread each (default 128)
  --tls-cert FILE --tls-key FILE   serve HTTPS
  --fail-status CODE         status of injected failures (default 503)
  --fail-every N             fail POSTs N, 2N, 3N, ...
  --fail-first N             fail the first N POSTs
  --fail-for-ms MS           fail every POST during the first MS ms after start-up
  --fail-reason TEXT         details.reason of injected failures (default injected)
  --retry-after RAW          send RAW verbatim as Retry-After on every 429/503
  --no-retry-after           send no Retry-After on 429/503
  --error-body-bytes N       pad injected/throttle error bodies to N bytes
  --header-delay-ms MS       wait MS before answering each POST
  --header-delay-every N     ... only every Nth POST
  --request-log FILE         one NDJSON line per POST with its decision
  --help                     this text
  --version                  the versions of fwdsink-central, OpenSSL, zstd, cpp-httplib
)";

// Parses a whole non-negative decimal integer; nothing else is accepted.
std::optional<std::uint64_t> ParseU64(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A value flag's handler: applies the value to the options, or returns what is wrong
// with it ("" when nothing is).
using Setter = std::function<std::string(const std::string& value, Options& o)>;

// A handler that stores the value as given in `field`.
template <typename Field>
Setter Store(Field Options::*field) {
  return [field](const std::string& value, Options& o) -> std::string {
    o.*field = value;
    return "";
  };
}

// A handler that stores the value in `field`, unless it is empty.
template <typename Field>
Setter NonEmpty(Field Options::*field) {
  return [field](const std::string& value, Options& o) -> std::string {
    if (value.empty()) return "must not be empty";
    o.*field = value;
    return "";
  };
}

// A handler for a whole number of at least `min`, handed to `apply`.
Setter Number(void (*apply)(Options&, std::uint64_t), std::uint64_t min = 0) {
  return [apply, min](const std::string& value, Options& o) -> std::string {
    auto n = ParseU64(value);
    if (!n || *n < min) {
      return "expected an integer >= " + std::to_string(min) + ", got '" + value + "'";
    }
    apply(o, *n);
    return "";
  };
}

// --listen HOST:PORT, where HOST may be a bracketed IPv6 address ([::1]:0).
std::string SetListen(const std::string& value, Options& o) {
  auto colon = value.rfind(':');
  auto port = colon == std::string::npos ? std::nullopt
                                         : ParseU64(std::string_view(value).substr(colon + 1));
  if (!port || *port > 65535 || colon == 0) return "expected HOST:PORT, got '" + value + "'";
  std::string host = value.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]:0
  }
  o.host = host;
  o.port = static_cast<int>(*port);
  return "";
}

std::string SetFailStatus(const std::string& value, Options& o) {
  auto n = ParseU64(value);
  if (!n || *n < 100 || *n > 599) return "expected an HTTP status 100..599, got '" + value + "'";
  o.fail_status = static_cast<int>(*n);
  return "";
}

// The flags that take a value, each with its handler; flags without a value are listed
// apart, in ReadFlags().
const std::map<std::string, Setter, std::less<>>& FlagsWithValue() {
  using Ms = std::chrono::milliseconds;
  static const std::map<std::string, Setter, std::less<>> flags = {
      {"--listen", SetListen},
      {"--out", Store(&Options::out_dir)},
      {"--port-file", Store(&Options::port_file)},
      {"--key-header", NonEmpty(&Options::key_header)},
      {"--rate", Number([](Options& o, std::uint64_t n) { o.rate_bytes_per_sec = n; }, 1)},
      {"--burst", Number([](Options& o, std::uint64_t n) { o.burst_bytes = n; }, 1)},
      {"--token", NonEmpty(&Options::token)},
      {"--token-file", Store(&Options::token_file)},
      {"--token-ttl",
       Number([](Options& o, std::uint64_t n) { o.token_ttl = std::chrono::seconds(n); }, 1)},
      {"--max-body", Number([](Options& o, std::uint64_t n) { o.max_body = n; }, 1)},
      {"--threads", Number([](Options& o, std::uint64_t n) { o.threads = n; }, 1)},
      {"--tls-cert", Store(&Options::tls_cert)},
      {"--tls-key", Store(&Options::tls_key)},
      {"--fail-status", SetFailStatus},
      {"--fail-every", Number([](Options& o, std::uint64_t n) { o.fail_every = n; }, 1)},
      {"--fail-first", Number([](Options& o, std::uint64_t n) { o.fail_first = n; }, 1)},
      {"--fail-for-ms", Number([](Options& o, std::uint64_t n) { o.fail_for = Ms(n); }, 1)},
      {"--fail-reason", Store(&Options::fail_reason)},
      {"--retry-after", Store(&Options::retry_after_raw)},
      {"--error-body-bytes", Number([](Options& o, std::uint64_t n) {
         o.error_body_bytes = static_cast<std::size_t>(n);
       })},
      {"--header-delay-ms", Number([](Options& o, std::uint64_t n) { o.header_delay = Ms(n); })},
      {"--header-delay-every",
       Number([](Options& o, std::uint64_t n) { o.header_delay_every = n; }, 1)},
      {"--request-log", Store(&Options::request_log)},
  };
  return flags;
}

// Walks the arguments into `o` and returns the first problem ("FLAG: why"), or "".
// Stops at --help or --version.
std::string ReadFlags(const std::vector<std::string>& args, Options& o) {
  const auto& with_value = FlagsWithValue();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      return "";
    }
    if (flag == "--version") {
      o.version = true;
      return "";
    }
    if (flag == "--no-retry-after") {
      o.no_retry_after = true;
      continue;
    }
    if (flag == "--ratelimit-headers") {
      o.ratelimit_headers = true;
      continue;
    }
    auto it = with_value.find(flag);
    if (it == with_value.end()) return flag + ": unknown option (see --help)";
    if (i + 1 >= args.size()) return flag + ": missing value";
    if (const std::string why = it->second(args[++i], o); !why.empty()) return flag + ": " + why;
  }
  return "";
}

// Combinations, checked up front so a typo never yields a silently different server.
// Returns the problem ("FLAG: why"), or "" after filling the defaults one flag takes
// from another.
std::string CheckCombinations(Options& o) {
  const bool any_selector = o.fail_every || o.fail_first || o.fail_for;
  if (o.out_dir.empty()) return "--out: is required";
  if (o.burst_bytes && !o.rate_bytes_per_sec) return "--burst: needs --rate";
  if (o.ratelimit_headers && !o.rate_bytes_per_sec) return "--ratelimit-headers: needs --rate";
  if (o.token && o.token_file) return "--token-file: cannot be combined with --token";
  if (o.token_ttl && !o.token && !o.token_file) return "--token-ttl: needs --token or --token-file";
  if (o.tls_cert.has_value() != o.tls_key.has_value()) {
    return std::string(o.tls_cert ? "--tls-key" : "--tls-cert") +
           ": --tls-cert and --tls-key go together";
  }
  if (o.fail_status && !any_selector) {
    return "--fail-status: needs --fail-every, --fail-first or --fail-for-ms";
  }
  if (o.retry_after_raw && o.no_retry_after) {
    return "--no-retry-after: cannot be combined with --retry-after";
  }
  if (o.header_delay_every && !o.header_delay)
    return "--header-delay-every: needs --header-delay-ms";
  if (any_selector && !o.fail_status) o.fail_status = 503;
  if (o.rate_bytes_per_sec && !o.burst_bytes) o.burst_bytes = o.rate_bytes_per_sec;
  return "";
}

}  // namespace

std::string Usage() { return std::string(kUsage); }

ParseResult ParseOptions(const std::vector<std::string>& args) {
  Options o;
  if (std::string error = ReadFlags(args, o); !error.empty()) return {std::nullopt, error};
  if (o.help || o.version) return {o, ""};
  if (std::string error = CheckCombinations(o); !error.empty()) return {std::nullopt, error};
  return {o, ""};
}

}  // namespace central
