// SPDX-License-Identifier: Apache-2.0
// What a forward sink is told to do: its endpoints, keys, headers and credentials,
// response rules, encoding, chunking, backoff, pacing, transport and window, and their
// validation. Plain data, apart from the sink (forward_sink.h). @ref LLP 0014#layers
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/backoff.h"
#include "fwdsink/chunker.h"
#include "fwdsink/codec.h"
#include "fwdsink/endpoint_health.h"
#include "fwdsink/pacer.h"
#include "fwdsink/status.h"
#include "fwdsink/transport.h"

namespace fwdsink {

// Which server's response conventions apply beyond HTTP statuses. @ref LLP 0017#profiles
enum class EngineProfile {
  kGeneric,     // statuses and a JSON details.reason only (fwdsink-central, most APIs)
  kClickHouse,  // also X-ClickHouse-Exception-Code or a "Code: N" body prefix
};
[[nodiscard]] std::string_view to_string(EngineProfile profile);
// Parses "generic" or "clickhouse"; nullopt for anything else.
[[nodiscard]] std::optional<EngineProfile> ParseEngineProfile(std::string_view text);

// How responses beyond 2xx, 401, 429 and 503 are treated. @ref LLP 0017#statuses
struct ResponseRules {
  EngineProfile profile = EngineProfile::kGeneric;
  // Statuses retried in place (same bytes, same key, on the ladder) like a 5xx. 408
  // (the server timed the request out) and 425 (too early) are worth a retry.
  std::vector<int> retry_statuses = {408, 425};
  // Also retry every 5xx not listed; when false, a 5xx not in retry_statuses is not
  // retried inline (the partition is respooled, as a 404 is).
  bool retry_all_5xx = true;
};

// Which requests carry "Expect: 100-continue" (bodies of transport.expect_continue_bytes
// or more; 0 there: none). @ref LLP 0017#expect-when
enum class ExpectContinue {
  // Only while the endpoint is likely to refuse (ExpectAdvisor): refused within the last
  // minute, its gate closed, its pacer at a learned or advertised limit; never while it
  // ignores the header. Otherwise the body goes at once, without the round trip.
  kWhenLikely,
  // Every such body waits for 100 Continue (--expect-continue-bytes always; the
  // behaviour before issue 39).
  kAlways,
};

// User name and password for HTTP Basic auth (RFC 7617). Never logged.
struct BasicAuth {
  std::string user;
  std::string password;
};

struct ForwardOptions {
  // Endpoint URL, http:// or https://, e.g. "https://ingest.example:8443/v1/ndjson".
  // With fallback_urls, the primary.
  std::string url;
  // Fallback endpoints, tried in order when the one in use fails (the daemon's second
  // and later --url). Each has its own gate, pacer, connection and counters; a chunk
  // keeps its bytes and key on every endpoint. @ref LLP 0019
  std::vector<std::string> fallback_urls{};
  // When to leave an endpoint and when to take the primary back (several URLs only).
  FailoverPolicy failover{};
  // Header that carries the chunk's stable key "<partition>:<begin>-<end>".
  std::string idempotency_header = "Idempotency-Key";
  // Send that header (false: the key goes only in the URL query, below).
  bool send_idempotency_header = true;
  // When set, the key is also put in the URL query as NAME=KEY, e.g.
  // "insert_deduplication_token" for ClickHouse. @ref LLP 0017#key-param
  std::string idempotency_query_param{};
  // Extra request headers ("X-Scope-OrgID", an API key). Validated by Validate(); never
  // logged. Content-Type, Content-Encoding, Content-Length, Transfer-Encoding, Host,
  // Connection and the idempotency header are the sink's and may not be set here.
  HeaderList headers{};
  // HTTP Basic auth; also taken from the URL's userinfo. A bearer token from the token
  // provider wins when both exist.
  std::optional<BasicAuth> basic_auth{};
  // Response rules beyond the status (engine profile, statuses retried in place).
  ResponseRules responses{};
  Compression compression = Compression::kZstd;
  int zstd_level = kDefaultZstdLevel;
  ChunkerOptions chunker{};
  BackpressurePolicy backpressure{};
  // Proactive pacing of the private pacer made when ForwardDeps has none (its max_wait
  // is then backpressure.max_wait). @ref LLP 0016#pacer
  PacingPolicy pacing{};
  TransportOptions transport{};
  // When a body of transport.expect_continue_bytes or more waits for 100 Continue.
  ExpectContinue expect_continue = ExpectContinue::kWhenLikely;
  // Prefix/label that tells two sinks in one daemon apart in events and logs.
  std::string label = "fwdsink";
  // Requests one partition's bisection (splitting refused chunks to isolate a row) may
  // spend in one ForwardPartition call; past it the refusal is blamed on the request
  // and the partition is respooled. @ref LLP 0023#request-level-refusals
  std::uint64_t max_split_requests = 256;
  // Chunks of one partition in flight at once, 1-64: each has its own fixed range and
  // key; acknowledgements may come in any order, the cursor is the end of the contiguous
  // acknowledged prefix. How many are in flight is decided by the request slots
  // (ForwardDeps::requests, the driver's adaptive limit). 1 sends one chunk at a time
  // and keeps a partition's rows in order at the server. @ref LLP 0014#window
  std::size_t window = 16;
  static constexpr std::size_t kMaxWindow = 64;
  // The bytes of the bodies in flight together (raw and encoded), when ForwardDeps has
  // no shared budget: a new request waits for room; a partition's first always goes.
  // @ref LLP 0014#window-memory
  std::uint64_t max_inflight_bytes = std::uint64_t{32} << 20;
};

// Checks every field; returns OK, or a kInvalidConfig status naming the first bad one
// in field() ("url", "chunker.chunk_bytes", "backpressure.ladder[1]", "zstd_level", ...).
[[nodiscard]] Status Validate(const ForwardOptions& options);
// Returns every endpoint URL in order: url, then fallback_urls.
[[nodiscard]] std::vector<std::string> EndpointUrls(const ForwardOptions& options);

}  // namespace fwdsink
