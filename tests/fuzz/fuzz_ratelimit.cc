// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the rate-limit header parsers (LLP 0016#advertised) never crash and never
// return a quota that could make a sender spin: every policy has a positive quota and
// window, every window or reset is at most a day, an advertised rate is positive and
// finite, an advertised burst positive.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fwdsink/ratelimit.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'780'000'000));
  for (const fwdsink::QuotaPolicy& p : fwdsink::ParseRateLimitPolicy(text)) {
    Check(p.quota > 0 && p.quota <= fwdsink::kQuotaSaturation);
    Check(p.window.count() > 0 && p.window <= fwdsink::kQuotaMaxWindow);
  }
  for (const fwdsink::QuotaState& s : fwdsink::ParseRateLimitField(text)) {
    Check(!s.reset || (s.reset->count() >= 0 && *s.reset <= fwdsink::kQuotaMaxWindow));
  }
  if (const auto n = fwdsink::ParseQuotaInteger(text)) Check(*n <= fwdsink::kQuotaSaturation);
  if (const auto r = fwdsink::ParseQuotaReset(text, now)) {
    Check(r->count() >= 0 && *r <= fwdsink::kQuotaMaxWindow);
  }
  // The same text in every field at once, then split in two at its first newline.
  const std::size_t cut = text.find('\n');
  const std::string_view a = text.substr(0, cut);
  const std::string_view b = cut == std::string_view::npos ? text : text.substr(cut + 1);
  const fwdsink::RateLimitFields fields{.policy = a,
                                        .ratelimit = b,
                                        .limit = a,
                                        .remaining = b,
                                        .reset = b,
                                        .x_limit = a,
                                        .x_remaining = b,
                                        .x_reset = b};
  if (const auto q = fwdsink::ParseAdvertisedQuota(fields, now)) {
    if (q->rate_per_s) Check(std::isfinite(*q->rate_per_s) && *q->rate_per_s > 0);
    if (q->burst) Check(*q->burst > 0);
  }
  return 0;
}
