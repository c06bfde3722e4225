// SPDX-License-Identifier: Apache-2.0
#include "engine/verdict.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "fwdsink/retry_after.h"
#include "io/http_rules.h"

namespace fwdsink {
namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n'; }

using http_rules::ToLower;

std::string OrHttpStatus(std::string reason, int status) {
  return reason.empty() ? "http_" + std::to_string(status) : std::move(reason);
}

Verdict TransportVerdict(const Answer& a) {
  Verdict v;
  if (a.error == TransportError::kAborted) {
    v.action = Action::kStop;
    v.stop = StopCause::kAborted;
    v.message = "closed";
    return v;
  }
  if (a.error == TransportError::kTls) {
    v.action = Action::kStop;
    v.stop = StopCause::kTls;
    v.reason = "tls";
    v.message = std::string(a.error_message);
    return v;
  }
  v.action = Action::kRetryInPlace;
  v.retry_cause = RetryCause::kTransport;
  v.reason = "transport_" + std::string(to_string(a.error));
  v.message = std::string(a.error_message);
  return v;
}

// 401: one refresh per chunk when a provider exists; then it is an auth error.
Verdict UnauthorizedVerdict(const Answer& a, std::string reason) {
  Verdict v{.status = 401};
  if (!a.token_refresh_tried && a.has_token_provider) {
    v.action = Action::kRefreshToken;
    v.reason = std::move(reason);
    v.message = "401: asking for a fresh token";
    return v;
  }
  v.action = Action::kStop;
  v.stop = StopCause::kAuth;
  v.reason = reason.empty() ? "unauthorized" : std::move(reason);
  v.message = a.token_refresh_tried ? "401 again after a token refresh"
                                    : "401 and no token provider to refresh from";
  return v;
}

// 429/503: backpressure; a Retry-After is parsed here, positive values only.
Verdict BackpressureVerdict(const Answer& a, std::string reason) {
  Verdict v{.action = Action::kRetryInPlace, .status = a.status};
  v.reason = OrHttpStatus(std::move(reason), a.status);
  v.retry_cause = RetryCause::kBackpressure;
  if (a.retry_after) {
    v.retry_after_raw = std::string(*a.retry_after);
    // Zero and past dates are no usable answer: the ladder decides, as if absent.
    const auto parsed = ParseRetryAfter(v.retry_after_raw, a.now);
    if (parsed && *parsed > std::chrono::milliseconds::zero()) v.retry_after = parsed;
  }
  return v;
}

Verdict ClassifyStatus(const Answer& a);
// 400/422 on a single row: poison only when the data is the cause — the row is not
// JSON, or the server took other rows of the same request. A well-formed row refused
// with nothing of its request accepted says the request is wrong (a header, the
// endpoint, the credentials' scope), and dead-lettering would throw good data away.
// @ref LLP 0023#request-level-refusals
Verdict RefusedRowVerdict(const Answer& a, std::string reason) {
  if (a.status != 413 && a.row_is_json && !a.split_tree_acked) {
    Verdict v{.action = Action::kRespool, .status = a.status};
    v.reason = OrHttpStatus(std::move(reason), a.status);
    v.respool_reason = RespoolReason::kRequestRefused;
    v.message = "the server refuses a well-formed row with " + std::to_string(a.status) + " (" +
                v.reason +
                ") and accepted nothing of its request: blaming the request, not the data";
    return v;
  }
  return {.action = Action::kPoison,
          .status = a.status,
          .reason = OrHttpStatus(std::move(reason), a.status)};
}

}  // namespace

Verdict Classify(const Answer& a) {
  Verdict v = ClassifyStatus(a);
  if (v.action == Action::kAcknowledge ||
      (v.action == Action::kRetryInPlace && v.retry_cause == RetryCause::kBackpressure)) {
    v.quota = QuotaFrom(a.rate_limit, a.now);
  }
  return v;
}

std::optional<AdvertisedQuota> QuotaFrom(const HeaderList* headers, SystemTime now) {
  if (!headers || headers->empty()) return std::nullopt;
  RateLimitFields f;
  for (const auto& [name, value] : *headers) {
    const std::string n = ToLower(name);
    std::optional<std::string_view>* slot = n == "ratelimit-policy"        ? &f.policy
                                            : n == "ratelimit"             ? &f.ratelimit
                                            : n == "ratelimit-limit"       ? &f.limit
                                            : n == "ratelimit-remaining"   ? &f.remaining
                                            : n == "ratelimit-reset"       ? &f.reset
                                            : n == "x-ratelimit-limit"     ? &f.x_limit
                                            : n == "x-ratelimit-remaining" ? &f.x_remaining
                                            : n == "x-ratelimit-reset"     ? &f.x_reset
                                                                           : nullptr;
    if (slot && !*slot) *slot = value;  // the first of repeated fields
  }
  return ParseAdvertisedQuota(f, now);
}

namespace {

Verdict ClassifyStatus(const Answer& a) {
  if (a.error != TransportError::kNone) return TransportVerdict(a);
  const int status = a.status;
  std::string reason = ExtractReason(a.body_prefix);
  if (status >= 200 && status < 300) {
    return {.action = Action::kAcknowledge,
            .status = status,
            .reason = std::move(reason),
            .duplicate = ScanStringField(a.body_prefix, "status") == "duplicate"};
  }
  if (status == 401) return UnauthorizedVerdict(a, std::move(reason));
  if (status == 413 || status == 400 || status == 422) {
    // @ref LLP 0014#split-and-poison — bisect down to the refused row.
    if (a.rows >= 2) {
      return {.action = Action::kSplit,
              .status = status,
              .reason = std::move(reason),
              .message = "splitting the chunk in two at a line boundary"};
    }
    return RefusedRowVerdict(a, std::move(reason));
  }
  if (status == 429 || status == 503) return BackpressureVerdict(a, std::move(reason));
  if (status >= 500) {
    return {.action = Action::kRetryInPlace,
            .status = status,
            .reason = OrHttpStatus(std::move(reason), status),
            .retry_cause = RetryCause::kServer};
  }
  // 404, 405, 415, 3xx...: retrying inline will not help; the driver's horizon decides.
  return {.action = Action::kRespool,
          .status = status,
          .reason = OrHttpStatus(std::move(reason), status),
          .message = "unexpected HTTP " + std::to_string(status),
          .respool_reason = RespoolReason::kClientError};
}

}  // namespace

RespoolReason RespoolReasonFor(RetryCause cause) {
  switch (cause) {
    case RetryCause::kBackpressure: return RespoolReason::kBudgetExhausted;
    case RetryCause::kTransport: return RespoolReason::kTransportError;
    case RetryCause::kServer: return RespoolReason::kServerError;
  }
  return RespoolReason::kBudgetExhausted;
}

std::string ScanStringField(std::string_view body, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\"";
  for (std::size_t pos = body.find(needle); pos != std::string_view::npos;
       pos = body.find(needle, pos + 1)) {
    std::size_t i = pos + needle.size();
    while (i < body.size() && IsJsonSpace(body[i])) ++i;
    if (i >= body.size() || body[i] != ':') continue;
    ++i;
    while (i < body.size() && IsJsonSpace(body[i])) ++i;
    if (i >= body.size() || body[i] != '"') continue;
    std::string out;
    for (++i; i < body.size() && body[i] != '"' && out.size() < 256; ++i) {
      if (body[i] == '\\' && i + 1 < body.size()) ++i;
      out.push_back(body[i]);
    }
    return out;
  }
  return {};
}

std::string ExtractReason(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    for (const char* outer : {"details", "data"}) {
      const auto it = j.find(outer);
      if (it != j.end() && it->is_object()) {
        const auto r = it->find("reason");
        if (r != it->end() && r->is_string()) return r->get<std::string>();
      }
    }
    const auto r = j.find("reason");
    if (r != j.end() && r->is_string()) return r->get<std::string>();
    return {};
  }
  // Truncated or not JSON at all: a bounded textual scan still finds the reason code,
  // which is the key fact in an incident.
  return ScanStringField(body, "reason");
}

}  // namespace fwdsink
