// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/ratelimit.h"

#include <algorithm>

namespace fwdsink {
namespace {

using std::chrono::seconds;

bool IsOws(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLcAlpha(char c) { return c >= 'a' && c <= 'z'; }
bool IsAlpha(char c) { return IsLcAlpha(c) || (c >= 'A' && c <= 'Z'); }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// 1*DIGIT, saturating at kQuotaSaturation. Consumes the digits.
std::optional<std::uint64_t> TakeInteger(std::string_view& s) {
  if (s.empty() || !IsDigit(s.front())) return std::nullopt;
  std::uint64_t v = 0;
  while (!s.empty() && IsDigit(s.front())) {
    if (v < kQuotaSaturation) v = v * 10 + static_cast<std::uint64_t>(s.front() - '0');
    s.remove_prefix(1);
  }
  return std::min(v, kQuotaSaturation);
}

// A structured-field member's bare item or parameter value: an integer, a string or a
// token. Only what the RateLimit fields use; anything else fails the member.
struct Value {
  std::optional<std::uint64_t> integer;
  std::string_view text;  // string contents (no escapes allowed) or token
};

bool TakeValue(std::string_view& s, Value& out) {
  if (s.empty()) return false;
  if (IsDigit(s.front())) {
    out.integer = TakeInteger(s);
    // A decimal or a sign is not an integer: the member is refused, not truncated.
    return s.empty() || (s.front() != '.' && !IsAlpha(s.front()));
  }
  if (s.front() == '"') {
    const auto close = s.find('"', 1);
    if (close == std::string_view::npos) return false;
    out.text = s.substr(1, close - 1);
    if (out.text.find('\\') != std::string_view::npos) return false;
    s.remove_prefix(close + 1);
    return true;
  }
  if (IsAlpha(s.front()) || s.front() == '*') {
    std::size_t n = 0;
    while (n < s.size() &&
           (IsAlpha(s[n]) || IsDigit(s[n]) ||
            std::string_view("!#$%&'*+-.^_`|~:/").find(s[n]) != std::string_view::npos)) {
      ++n;
    }
    out.text = s.substr(0, n);
    s.remove_prefix(n);
    return true;
  }
  return false;  // "-1", "?0", byte sequences...
}

// One member: bare item and its parameters, e.g. `"default";q=100;w=10`.
struct Member {
  Value item;
  std::vector<std::pair<std::string_view, Value>> params;
  const Value* Param(std::string_view key) const {
    for (const auto& [k, v] : params) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

bool ParseMember(std::string_view s, Member& m) {
  s = TrimOws(s);
  if (!TakeValue(s, m.item)) return false;
  while (!s.empty()) {
    s = TrimOws(s);
    if (s.empty() || s.front() != ';') return false;
    s.remove_prefix(1);
    s = TrimOws(s);
    std::size_t n = 0;
    while (n < s.size() && (IsLcAlpha(s[n]) || IsDigit(s[n]) || s[n] == '_' || s[n] == '-')) ++n;
    if (n == 0 || !IsLcAlpha(s.front())) return false;
    const std::string_view key = s.substr(0, n);
    s.remove_prefix(n);
    Value v;
    if (!s.empty() && s.front() == '=') {
      s.remove_prefix(1);
      if (!TakeValue(s, v)) return false;
    }
    m.params.emplace_back(key, v);
  }
  return true;
}

// Splits a list on commas outside strings and parses each member; bad members are
// dropped, good ones kept.
std::vector<Member> ParseList(std::string_view value) {
  std::vector<Member> out;
  bool in_string = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i < value.size() && value[i] == '"') in_string = !in_string;
    if (i == value.size() || (value[i] == ',' && !in_string)) {
      Member m;
      if (ParseMember(value.substr(start, i - start), m)) out.push_back(std::move(m));
      start = i + 1;
      if (out.size() >= 16) break;  // a bounded amount of work for any header
    }
  }
  return out;
}

std::optional<seconds> CappedSeconds(const Value* v) {
  if (!v || !v->integer) return std::nullopt;
  return std::min(seconds{static_cast<seconds::rep>(*v->integer)}, kQuotaMaxWindow);
}

std::optional<AdvertisedQuota> FromPolicies(const std::vector<QuotaPolicy>& policies,
                                            const std::vector<QuotaState>& states) {
  const QuotaPolicy* best = nullptr;
  double best_rate = 0;
  for (const QuotaPolicy& p : policies) {
    const double rate = static_cast<double>(p.quota) / static_cast<double>(p.window.count());
    if (!best || rate < best_rate) {
      best = &p;
      best_rate = rate;
    }
  }
  if (!best) return std::nullopt;
  AdvertisedQuota q{.unit = best->unit,
                    .rate_per_s = best_rate,
                    .burst = best->burst.value_or(best->quota),
                    .bucket = best->burst.has_value()};
  for (const QuotaState& s : states) {
    if (s.name == best->name || states.size() == 1) {
      q.remaining = s.remaining;
      q.reset = s.reset;
      break;
    }
  }
  return q;
}

// Limit + Remaining + Reset (older IETF syntax, or X-RateLimit-*): requests only.
std::optional<AdvertisedQuota> FromTriple(std::optional<std::string_view> limit,
                                          std::optional<std::string_view> remaining,
                                          std::optional<std::string_view> reset,
                                          std::chrono::system_clock::time_point now) {
  AdvertisedQuota q;
  const auto l = limit ? ParseQuotaInteger(*limit) : std::nullopt;
  if (remaining) q.remaining = ParseQuotaInteger(*remaining);
  if (reset) q.reset = ParseQuotaReset(*reset, now);
  if (l && *l > 0) q.burst = l;
  // A count above the limit is no count a server can mean: the limit caps it (issue 38:
  // Remaining 1000 against a limit of 10 per second paced nothing). @ref LLP
  // 0023#rate-limit-remaining
  if (q.remaining && q.burst) q.remaining = std::min(*q.remaining, *q.burst);
  if (!q.remaining || !q.reset) return q.burst ? std::optional(q) : std::nullopt;
  // What is left, spread over the time to the reset, never faster than the whole
  // limit per window would allow and never zero: a window is at least one second.
  const double secs = static_cast<double>(std::max<seconds::rep>(q.reset->count(), 1));
  q.rate_per_s = std::max(1.0, static_cast<double>(*q.remaining)) / secs;
  return q;
}

}  // namespace

std::optional<std::uint64_t> ParseQuotaInteger(std::string_view value) {
  std::string_view s = TrimOws(value);
  const auto v = TakeInteger(s);
  if (!v || !s.empty()) return std::nullopt;
  return v;
}

std::optional<seconds> ParseQuotaReset(std::string_view value,
                                       std::chrono::system_clock::time_point now) {
  const auto v = ParseQuotaInteger(value);
  if (!v) return std::nullopt;
  constexpr std::uint64_t kEpochThreshold = 1'000'000'000;  // 2001-09-09: not a delta
  if (*v < kEpochThreshold) {
    return std::min(seconds{static_cast<seconds::rep>(*v)}, kQuotaMaxWindow);
  }
  const auto now_s = std::chrono::floor<seconds>(now).time_since_epoch().count();
  const auto at = static_cast<std::int64_t>(std::min<std::uint64_t>(*v, kQuotaSaturation));
  if (at <= now_s) return seconds{0};
  return std::min(seconds{at - now_s}, kQuotaMaxWindow);
}

std::vector<QuotaPolicy> ParseRateLimitPolicy(std::string_view value) {
  std::vector<QuotaPolicy> out;
  for (const Member& m : ParseList(value)) {
    QuotaPolicy p;
    const Value* q = m.Param("q");
    if (m.item.integer) {
      p.quota = *m.item.integer;  // older syntax: `100;w=10`
    } else if (q && q->integer) {
      p.name = m.item.text;
      p.quota = *q->integer;
    }
    const auto w = CappedSeconds(m.Param("w"));
    if (p.quota == 0 || !w || *w <= seconds::zero()) continue;
    p.window = *w;
    if (const Value* qu = m.Param("qu")) {
      if (qu->text == "content-bytes") {
        p.unit = QuotaUnit::kContentBytes;
      } else if (qu->text != "requests") {
        continue;  // concurrent-requests or unknown: not a rate we can pace by
      }
    }
    if (const Value* b = m.Param("burst"); b && b->integer && *b->integer > 0) p.burst = b->integer;
    out.push_back(p);
  }
  return out;
}

std::vector<QuotaState> ParseRateLimitField(std::string_view value) {
  std::vector<QuotaState> out;
  for (const Member& m : ParseList(value)) {
    const Value* r = m.Param("r");
    const auto t = CappedSeconds(m.Param("t"));
    if (!r || !r->integer || !t) continue;
    out.push_back({.name = m.item.text, .remaining = r->integer, .reset = t});
  }
  return out;
}

std::optional<AdvertisedQuota> ParseAdvertisedQuota(const RateLimitFields& f,
                                                    std::chrono::system_clock::time_point now) {
  auto clamped = [](std::optional<AdvertisedQuota> q) {
    // Never more left than the quota's burst. @ref LLP 0023#rate-limit-remaining
    if (q && q->remaining && q->burst) q->remaining = std::min(*q->remaining, *q->burst);
    return q;
  };
  if (f.policy) {
    const auto states = f.ratelimit ? ParseRateLimitField(*f.ratelimit) : std::vector<QuotaState>{};
    auto q = FromPolicies(ParseRateLimitPolicy(*f.policy), states);
    if (q && !q->remaining && f.remaining) {
      // Older syntax: RateLimit-Policy with RateLimit-Remaining/-Reset beside it.
      q->remaining = ParseQuotaInteger(*f.remaining);
      if (f.reset) q->reset = ParseQuotaReset(*f.reset, now);
    }
    if (q) return clamped(q);
  }
  if (f.limit || f.remaining) {
    if (auto q = FromTriple(f.limit, f.remaining, f.reset, now)) return q;
  }
  if (f.x_limit || f.x_remaining) return FromTriple(f.x_limit, f.x_remaining, f.x_reset, now);
  return std::nullopt;
}

}  // namespace fwdsink
