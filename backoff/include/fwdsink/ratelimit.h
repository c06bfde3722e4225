// SPDX-License-Identifier: Apache-2.0
// Parsing of advertised rate-limit quotas: the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers, both the structured-field syntax and the older
// one) and the common X-RateLimit-* fields. Pure: no clock but the one passed in.
// @ref LLP 0016#advertised
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace fwdsink {

// What a quota counts. The structured-field draft names it in the `qu` parameter
// ("requests" is the default, "content-bytes" counts request content bytes); the older
// syntaxes and X-RateLimit-* always count requests. @ref LLP 0016#quota-units
enum class QuotaUnit { kRequests, kContentBytes };

// The largest number any field may carry; larger values saturate here (2^53, exact in
// a double). The largest window or reset: one day; longer ones are capped to it.
inline constexpr std::uint64_t kQuotaSaturation = std::uint64_t{1} << 53;
inline constexpr std::chrono::seconds kQuotaMaxWindow = std::chrono::hours{24};

// One quota policy: `quota` units per `window`, optionally with the bucket's burst
// (our documented extension parameter `burst`, see LLP 0016#quota-units).
struct QuotaPolicy {
  std::string_view name{};  // the policy's name ("" in the older syntax); views the input
  QuotaUnit unit = QuotaUnit::kRequests;
  std::uint64_t quota = 0;         // > 0
  std::chrono::seconds window{0};  // > 0, at most kQuotaMaxWindow
  std::optional<std::uint64_t> burst{};
};

// The service limit now: `remaining` units until `reset` from now.
struct QuotaState {
  std::string_view name{};
  std::optional<std::uint64_t> remaining{};
  std::optional<std::chrono::seconds> reset{};  // at most kQuotaMaxWindow
};

// Parses a RateLimit-Policy value: a comma-separated list of policies, each either
// `"name";q=100;w=10[;qu="content-bytes"][;burst=N]` (structured fields; the name may
// also be a token) or `100;w=10` (older syntax). Members that do not parse are skipped;
// a member without a positive q or w is skipped. Never throws; total for all input.
[[nodiscard]] std::vector<QuotaPolicy> ParseRateLimitPolicy(std::string_view value);

// Parses a RateLimit value: `"name";r=50;t=30` members (structured fields). Members
// without r or t, or that do not parse, are skipped.
[[nodiscard]] std::vector<QuotaState> ParseRateLimitField(std::string_view value);

// Parses a non-negative decimal integer field value (RateLimit-Limit, -Remaining,
// X-RateLimit-*), with optional surrounding whitespace; saturates at kQuotaSaturation.
// nullopt for signs, fractions, garbage, empty.
[[nodiscard]] std::optional<std::uint64_t> ParseQuotaInteger(std::string_view value);

// Parses a reset value: delta-seconds, or (X-RateLimit-Reset as GitHub sends it) Unix
// epoch seconds when the number is at least 1,000,000,000, turned into a delay from
// `now` (a past instant gives zero). Capped at kQuotaMaxWindow.
[[nodiscard]] std::optional<std::chrono::seconds> ParseQuotaReset(
    std::string_view value, std::chrono::system_clock::time_point now);

// The raw rate-limit fields of one response (absent = nullopt). Views, valid for the
// ParseAdvertisedQuota call only.
struct RateLimitFields {
  std::optional<std::string_view> policy{};       // RateLimit-Policy
  std::optional<std::string_view> ratelimit{};    // RateLimit
  std::optional<std::string_view> limit{};        // RateLimit-Limit
  std::optional<std::string_view> remaining{};    // RateLimit-Remaining
  std::optional<std::string_view> reset{};        // RateLimit-Reset
  std::optional<std::string_view> x_limit{};      // X-RateLimit-Limit
  std::optional<std::string_view> x_remaining{};  // X-RateLimit-Remaining
  std::optional<std::string_view> x_reset{};      // X-RateLimit-Reset
  [[nodiscard]] bool empty() const {
    return !policy && !ratelimit && !limit && !remaining && !reset && !x_limit && !x_remaining &&
           !x_reset;
  }
};

// The one quota a pacer follows, in one unit.
struct AdvertisedQuota {
  QuotaUnit unit = QuotaUnit::kRequests;
  // Long-run rate in units per second (quota / window), when a policy or a limit with
  // a reset says it. Always > 0 when set.
  std::optional<double> rate_per_s{};
  // Most units the server takes at once (burst parameter, else the quota); > 0.
  std::optional<std::uint64_t> burst{};
  std::optional<std::uint64_t> remaining{};     // units left now
  std::optional<std::chrono::seconds> reset{};  // until the remaining count resets
  // The policy names its burst (`burst=`, fwdsink-central's extension): a token bucket
  // that refills at the rate, so that successive counts tell what others took
  // (LLP 0016#shared-quota). False for windows that reset.
  bool bucket = false;
};

// Picks the quota to follow from one response's fields: the IETF fields first, then
// X-RateLimit-*. With several policies, the most restrictive rate wins and the
// RateLimit member of the same name gives remaining/reset. Returns nullopt when
// nothing usable was advertised (garbage, zero windows, nothing at all).
[[nodiscard]] std::optional<AdvertisedQuota> ParseAdvertisedQuota(
    const RateLimitFields& fields, std::chrono::system_clock::time_point now);

}  // namespace fwdsink
