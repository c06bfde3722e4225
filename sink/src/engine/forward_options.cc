// SPDX-License-Identifier: Apache-2.0
// ForwardOptions: their names (to_string) and their validation, apart from the send
// core. @ref LLP 0014#core
#include <algorithm>
#include <string>

#include "engine/request.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/forward_result.h"
#include "fwdsink/transport.h"
#include "io/http_rules.h"

namespace fwdsink {

using std::chrono::milliseconds;

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::kDelivered: return "delivered";
    case Outcome::kRespooled: return "respooled";
    case Outcome::kPoisoned: return "poisoned";
    case Outcome::kAborted: return "aborted";
    case Outcome::kAuthError: return "auth_error";
    case Outcome::kTlsError: return "tls_error";
    case Outcome::kPartitionError: return "partition_error";
    case Outcome::kConfigError: return "config_error";
  }
  return "unknown";
}

std::string_view to_string(RespoolReason r) {
  switch (r) {
    case RespoolReason::kNone: return "none";
    case RespoolReason::kBudgetExhausted: return "budget_exhausted";
    case RespoolReason::kTransportError: return "transport_error";
    case RespoolReason::kServerError: return "server_error";
    case RespoolReason::kClientError: return "client_error";
    case RespoolReason::kCursorNotSaved: return "cursor_not_saved";
    case RespoolReason::kRequestRefused: return "request_refused";
  }
  return "unknown";
}

std::string_view to_string(EngineProfile p) {
  switch (p) {
    case EngineProfile::kGeneric: return "generic";
    case EngineProfile::kClickHouse: return "clickhouse";
  }
  return "unknown";
}

std::optional<EngineProfile> ParseEngineProfile(std::string_view text) {
  if (text == "generic") return EngineProfile::kGeneric;
  if (text == "clickhouse") return EngineProfile::kClickHouse;
  return std::nullopt;
}

namespace {

using http_rules::IEquals;

// The request options of issue 10: extra headers, Basic auth, the key in the query,
// the response rules. @ref LLP 0017#request-options
Status ValidateRequestOptions(const ForwardOptions& o) {
  static constexpr std::string_view kOwned[] = {"Content-Type", "Content-Encoding",
                                                "Content-Length", "Transfer-Encoding", "Host",
                                                "Connection",
                                                // A pack's member keys, and the sink's own
                                                // 100-continue (LLP 0017#expect-continue).
                                                kMembersHeader, "Expect"};
  for (std::size_t i = 0; i < o.headers.size(); ++i) {
    const auto& [name, value] = o.headers[i];
    const std::string field = "headers[" + std::to_string(i) + "]";
    if (Status e = ValidateHeaderField(name, value, field); !e.ok()) return e;
    for (std::string_view owned : kOwned) {
      if (IEquals(name, owned)) return Status::Config(field, name + " is set by the sink itself");
    }
    if (IEquals(name, o.idempotency_header)) {
      return Status::Config(field, name + " is the idempotency header, set per chunk");
    }
    if (IEquals(name, "Authorization") && o.basic_auth) {
      return Status::Config(field, "Authorization is also set by basic_auth; choose one");
    }
  }
  if (o.basic_auth &&
      (o.basic_auth->user.empty() || o.basic_auth->user.find(':') != std::string::npos)) {
    return Status::Config("basic_auth", "the user name must be non-empty and without ':'");
  }
  if (o.basic_auth) {
    if (Status e = ValidateHeaderField("Authorization", o.basic_auth->user + o.basic_auth->password,
                                       "basic_auth");
        !e.ok()) {
      return e;
    }
  }
  if (!o.idempotency_query_param.empty() && !http_rules::IsToken(o.idempotency_query_param)) {
    return Status::Config("idempotency_query_param", "must be a plain query parameter name");
  }
  if (!o.send_idempotency_header && o.idempotency_query_param.empty()) {
    return Status::Config(
        "send_idempotency_header",
        "the key must go somewhere: keep the header or set idempotency_query_param");
  }
  for (int s : o.responses.retry_statuses) {
    if (s < 300 || s > 599 || s == 401 || s == 429 || s == 503) {
      return Status::Config("responses.retry_statuses",
                            std::to_string(s) + " cannot be listed (3xx-5xx, not 401/429/503)");
    }
  }
  return OkStatus();
}

}  // namespace

std::vector<std::string> EndpointUrls(const ForwardOptions& o) {
  std::vector<std::string> urls{o.url};
  urls.insert(urls.end(), o.fallback_urls.begin(), o.fallback_urls.end());
  return urls;
}

namespace {

// The fallback URLs and the failover policy. @ref LLP 0019
Status ValidateEndpoints(const ForwardOptions& o) {
  for (std::size_t i = 0; i < o.fallback_urls.size(); ++i) {
    const std::string field = "fallback_urls[" + std::to_string(i) + "]";
    if (Result<Endpoint> ep = ParseEndpoint(o.fallback_urls[i]); !ep.ok()) {
      return Status::Config(field, ep.status().message());
    }
    const std::vector<std::string> urls = EndpointUrls(o);
    if (std::find(urls.begin(), urls.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  o.fallback_urls[i]) != urls.begin() + static_cast<std::ptrdiff_t>(i) + 1) {
      return Status::Config(field, "repeats an earlier URL");
    }
  }
  if (Status e = Validate(o.failover); !e.ok()) return e.WithFieldPrefix("failover");
  return OkStatus();
}

}  // namespace

Status Validate(const ForwardOptions& o) {
  if (Result<Endpoint> ep = ParseEndpoint(o.url); !ep.ok()) return ep.status();
  if (Status e = ValidateEndpoints(o); !e.ok()) return e;
  if (Status e = ValidateRequestOptions(o); !e.ok()) return e;
  if (!http_rules::IsToken(o.idempotency_header)) {
    return Status::Config("idempotency_header", "must be a non-empty HTTP header name");
  }
  if (o.compression == Compression::kZstd) {
    if (Status e = ValidateZstdLevel(o.zstd_level); !e.ok()) return e;
  }
  if (Status e = Validate(o.chunker); !e.ok()) return e.WithFieldPrefix("chunker");
  if (Status e = Validate(o.backpressure); !e.ok()) return e.WithFieldPrefix("backpressure");
  if (o.transport.connect_timeout <= milliseconds::zero()) {
    return Status::Config("transport.connect_timeout", "must be positive");
  }
  if (o.transport.read_timeout <= milliseconds::zero()) {
    return Status::Config("transport.read_timeout", "must be positive");
  }
  if (o.transport.write_timeout <= milliseconds::zero()) {
    return Status::Config("transport.write_timeout", "must be positive");
  }
  if (o.transport.min_throughput_bytes_per_s == 0) {
    return Status::Config("transport.min_throughput_bytes_per_s", "must be positive");
  }
  if (o.transport.response_timeout <= milliseconds::zero()) {
    return Status::Config("transport.response_timeout", "must be positive");
  }
  if (o.transport.body_prefix_bytes < 256) {
    return Status::Config("transport.body_prefix_bytes", "must be at least 256");
  }
  if (o.label.empty()) return Status::Config("label", "must not be empty");
  if (o.max_split_requests == 0) return Status::Config("max_split_requests", "must be positive");
  if (o.window < 1 || o.window > ForwardOptions::kMaxWindow) {
    return Status::Config("window", "must be 1 to " + std::to_string(ForwardOptions::kMaxWindow));
  }
  if (o.max_inflight_bytes == 0) return Status::Config("max_inflight_bytes", "must be positive");
  return OkStatus();
}

}  // namespace fwdsink
