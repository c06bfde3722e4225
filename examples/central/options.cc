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

}  // namespace

std::string Usage() { return std::string(kUsage); }

ParseResult ParseOptions(const std::vector<std::string>& args) {
  Options o;
  std::string error;
  auto fail = [&](const std::string& flag, const std::string& why) {
    if (error.empty()) error = flag + ": " + why;
  };

  // Each handler receives the flag's value; flags without a value are listed apart.
  using Setter = std::function<void(const std::string& flag, const std::string& value)>;
  auto number = [&](auto apply, std::uint64_t min = 0) -> Setter {
    return [&, apply, min](const std::string& flag, const std::string& value) {
      auto n = ParseU64(value);
      if (!n || *n < min) {
        fail(flag, "expected an integer >= " + std::to_string(min) + ", got '" + value + "'");
        return;
      }
      apply(*n);
    };
  };
  const std::map<std::string, Setter, std::less<>> with_value = {
      {"--listen",
       [&](const std::string& flag, const std::string& value) {
         auto colon = value.rfind(':');
         auto port = colon == std::string::npos
                         ? std::nullopt
                         : ParseU64(std::string_view(value).substr(colon + 1));
         if (!port || *port > 65535 || colon == 0) {
           fail(flag, "expected HOST:PORT, got '" + value + "'");
           return;
         }
         std::string host = value.substr(0, colon);
         if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
           host = host.substr(1, host.size() - 2);  // [::1]:0
         }
         o.host = host;
         o.port = static_cast<int>(*port);
       }},
      {"--out", [&](const std::string&, const std::string& v) { o.out_dir = v; }},
      {"--port-file", [&](const std::string&, const std::string& v) { o.port_file = v; }},
      {"--key-header",
       [&](const std::string& flag, const std::string& v) {
         if (v.empty()) fail(flag, "must not be empty");
         o.key_header = v;
       }},
      {"--rate", number([&](std::uint64_t n) { o.rate_bytes_per_sec = n; }, 1)},
      {"--burst", number([&](std::uint64_t n) { o.burst_bytes = n; }, 1)},
      {"--token",
       [&](const std::string& flag, const std::string& v) {
         if (v.empty()) fail(flag, "must not be empty");
         o.token = v;
       }},
      {"--token-file", [&](const std::string&, const std::string& v) { o.token_file = v; }},
      {"--token-ttl", number([&](std::uint64_t n) { o.token_ttl = std::chrono::seconds(n); }, 1)},
      {"--max-body", number([&](std::uint64_t n) { o.max_body = n; }, 1)},
      {"--threads", number([&](std::uint64_t n) { o.threads = n; }, 1)},
      {"--tls-cert", [&](const std::string&, const std::string& v) { o.tls_cert = v; }},
      {"--tls-key", [&](const std::string&, const std::string& v) { o.tls_key = v; }},
      {"--fail-status",
       [&](const std::string& flag, const std::string& value) {
         auto n = ParseU64(value);
         if (!n || *n < 100 || *n > 599) {
           fail(flag, "expected an HTTP status 100..599, got '" + value + "'");
           return;
         }
         o.fail_status = static_cast<int>(*n);
       }},
      {"--fail-every", number([&](std::uint64_t n) { o.fail_every = n; }, 1)},
      {"--fail-first", number([&](std::uint64_t n) { o.fail_first = n; }, 1)},
      {"--fail-for-ms",
       number([&](std::uint64_t n) { o.fail_for = std::chrono::milliseconds(n); }, 1)},
      {"--fail-reason", [&](const std::string&, const std::string& v) { o.fail_reason = v; }},
      {"--retry-after", [&](const std::string&, const std::string& v) { o.retry_after_raw = v; }},
      {"--error-body-bytes",
       number([&](std::uint64_t n) { o.error_body_bytes = static_cast<std::size_t>(n); })},
      {"--header-delay-ms",
       number([&](std::uint64_t n) { o.header_delay = std::chrono::milliseconds(n); })},
      {"--header-delay-every", number([&](std::uint64_t n) { o.header_delay_every = n; }, 1)},
      {"--request-log", [&](const std::string&, const std::string& v) { o.request_log = v; }},
  };

  for (std::size_t i = 0; i < args.size() && error.empty(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      return {o, ""};
    }
    if (flag == "--version") {
      o.version = true;
      return {o, ""};
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
    if (it == with_value.end()) {
      fail(flag, "unknown option (see --help)");
      break;
    }
    if (i + 1 >= args.size()) {
      fail(flag, "missing value");
      break;
    }
    it->second(flag, args[++i]);
  }

  // Combinations, checked up front so a typo never yields a silently different server.
  if (error.empty()) {
    const bool any_selector = o.fail_every || o.fail_first || o.fail_for;
    if (o.out_dir.empty())
      fail("--out", "is required");
    else if (o.burst_bytes && !o.rate_bytes_per_sec)
      fail("--burst", "needs --rate");
    else if (o.ratelimit_headers && !o.rate_bytes_per_sec)
      fail("--ratelimit-headers", "needs --rate");
    else if (o.token && o.token_file)
      fail("--token-file", "cannot be combined with --token");
    else if (o.token_ttl && !o.token && !o.token_file)
      fail("--token-ttl", "needs --token or --token-file");
    else if (o.tls_cert.has_value() != o.tls_key.has_value())
      fail(o.tls_cert ? "--tls-key" : "--tls-cert", "--tls-cert and --tls-key go together");
    else if (o.fail_status && !any_selector)
      fail("--fail-status", "needs --fail-every, --fail-first or --fail-for-ms");
    else if (o.retry_after_raw && o.no_retry_after)
      fail("--no-retry-after", "cannot be combined with --retry-after");
    else if (o.header_delay_every && !o.header_delay)
      fail("--header-delay-every", "needs --header-delay-ms");
    if (any_selector && !o.fail_status) o.fail_status = 503;
    if (o.rate_bytes_per_sec && !o.burst_bytes) o.burst_bytes = o.rate_bytes_per_sec;
  }

  if (!error.empty()) return {std::nullopt, error};
  return {o, ""};
}

}  // namespace central
