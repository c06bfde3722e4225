// SPDX-License-Identifier: Apache-2.0
// Advertised quotas: one test per class of input, named for the case (as
// retry_after_test.cc), over RateLimit-Policy / RateLimit (structured fields and the
// older syntax), RateLimit-Limit/-Remaining/-Reset and X-RateLimit-*.
#include <doctest/doctest.h>

#include <chrono>

#include "fwdsink/ratelimit.h"

using namespace std::chrono_literals;
using fwdsink::AdvertisedQuota;
using fwdsink::ParseAdvertisedQuota;
using fwdsink::ParseRateLimitField;
using fwdsink::ParseRateLimitPolicy;
using fwdsink::QuotaUnit;
using fwdsink::RateLimitFields;

namespace {
const std::chrono::system_clock::time_point kNow{std::chrono::seconds{1'700'000'000}};
}  // namespace

TEST_CASE("StructuredPolicyWithNameQuotaAndWindow") {
  const auto p = ParseRateLimitPolicy(R"("default";q=100;w=10)");
  REQUIRE(p.size() == 1);
  CHECK(p[0].name == "default");
  CHECK(p[0].quota == 100);
  CHECK(p[0].window == 10s);
  CHECK(p[0].unit == QuotaUnit::kRequests);
  CHECK_FALSE(p[0].burst.has_value());
}

TEST_CASE("StructuredPolicyContentBytesUnitAndBurstExtension") {
  const auto p = ParseRateLimitPolicy(R"("bytes";q=8000000;w=1;qu="content-bytes";burst=2000000)");
  REQUIRE(p.size() == 1);
  CHECK(p[0].unit == QuotaUnit::kContentBytes);
  CHECK(p[0].quota == 8'000'000);
  CHECK(p[0].burst == 2'000'000u);
}

TEST_CASE("StructuredPolicyUnknownUnitIsSkippedNotMisread") {
  CHECK(ParseRateLimitPolicy(R"("c";q=10;w=1;qu="concurrent-requests")").empty());
  CHECK(ParseRateLimitPolicy(R"("c";q=10;w=1;qu="furlongs")").empty());
  SUBCASE("twin: qu=requests is the default unit, spelled out") {
    const auto p = ParseRateLimitPolicy(R"("c";q=10;w=1;qu="requests")");
    REQUIRE(p.size() == 1);
    CHECK(p[0].unit == QuotaUnit::kRequests);
  }
}

TEST_CASE("OlderSyntaxPolicyIntegerItem") {
  const auto p = ParseRateLimitPolicy("100;w=10, 1000;w=3600");
  REQUIRE(p.size() == 2);
  CHECK(p[0].quota == 100);
  CHECK(p[0].window == 10s);
  CHECK(p[1].quota == 1000);
  CHECK(p[1].window == 3600s);
}

TEST_CASE("PolicyZeroOrMissingWindowOrQuotaIsSkipped") {
  CHECK(ParseRateLimitPolicy(R"("a";q=100;w=0)").empty());  // would divide by zero
  CHECK(ParseRateLimitPolicy(R"("a";q=0;w=10)").empty());   // zero rate: a spin or a hang
  CHECK(ParseRateLimitPolicy(R"("a";q=100)").empty());
  CHECK(ParseRateLimitPolicy("100").empty());
}

TEST_CASE("PolicyNegativeFractionalAndGarbageAreSkipped") {
  CHECK(ParseRateLimitPolicy(R"("a";q=-5;w=10)").empty());
  CHECK(ParseRateLimitPolicy(R"("a";q=1.5;w=10)").empty());
  CHECK(ParseRateLimitPolicy(R"("a";q=10;w=1e3)").empty());
  CHECK(ParseRateLimitPolicy("garbage").empty());
  CHECK(ParseRateLimitPolicy("").empty());
  CHECK(ParseRateLimitPolicy(R"("unterminated;q=1;w=1)").empty());
  CHECK(ParseRateLimitPolicy(R"("a";q=10;w=1 trailing)").empty());
  SUBCASE("twin: the good member of a list survives a bad one") {
    const auto p = ParseRateLimitPolicy(R"("bad";q=-1;w=1, "good";q=5;w=1)");
    REQUIRE(p.size() == 1);
    CHECK(p[0].name == "good");
  }
}

TEST_CASE("PolicyHugeValuesSaturateOrCap") {
  const auto p = ParseRateLimitPolicy(R"("a";q=99999999999999999999999999;w=99999999999)");
  REQUIRE(p.size() == 1);
  CHECK(p[0].quota == fwdsink::kQuotaSaturation);
  CHECK(p[0].window == fwdsink::kQuotaMaxWindow);
}

TEST_CASE("RateLimitFieldRemainingAndReset") {
  const auto s = ParseRateLimitField(R"("default";r=50;t=30)");
  REQUIRE(s.size() == 1);
  CHECK(s[0].name == "default");
  CHECK(s[0].remaining == 50u);
  CHECK(s[0].reset == 30s);
  CHECK(ParseRateLimitField(R"("default";r=50)").empty());
  CHECK(ParseRateLimitField(R"("default";r=-1;t=3)").empty());
}

TEST_CASE("AdvertisedFromStructuredFieldsPicksTheMostRestrictivePolicy") {
  RateLimitFields f{.policy = R"("burst";q=100;w=1, "day";q=1000;w=86400)",
                    .ratelimit = R"("burst";r=7;t=1, "day";r=900;t=5000)"};
  const auto q = ParseAdvertisedQuota(f, kNow);
  REQUIRE(q.has_value());
  CHECK(q->unit == QuotaUnit::kRequests);
  CHECK(q->rate_per_s == doctest::Approx(1000.0 / 86400));
  CHECK(q->remaining == 900u);  // the member named like the chosen policy
  CHECK(q->reset == 5000s);
}

TEST_CASE("APolicyThatNamesItsBurstIsABucketOthersCanBeSeenIn") {
  // LLP 0016#shared-quota: only a bucket that refills at its rate lets successive counts
  // tell what other clients took.
  RateLimitFields f{.policy = R"("bytes";q=8000000;w=1;qu="content-bytes";burst=2000000)",
                    .ratelimit = R"("bytes";r=1749306;t=1)"};
  const auto q = ParseAdvertisedQuota(f, kNow);
  REQUIRE(q.has_value());
  CHECK(q->bucket);
  CHECK(q->remaining == 1'749'306u);
  SUBCASE("twin: a window that resets is no bucket") {
    f.policy = R"("default";q=100;w=10)";
    f.ratelimit = R"("default";r=40;t=3)";
    const auto w = ParseAdvertisedQuota(f, kNow);
    REQUIRE(w.has_value());
    CHECK_FALSE(w->bucket);
    const auto x = ParseAdvertisedQuota(
        RateLimitFields{.x_limit = "5000", .x_remaining = "4990", .x_reset = "100"}, kNow);
    REQUIRE(x.has_value());
    CHECK_FALSE(x->bucket);
  }
}

TEST_CASE("AdvertisedFromOlderPolicyWithRemainingAndReset") {
  RateLimitFields f{.policy = "100;w=10", .remaining = "40", .reset = "3"};
  const auto q = ParseAdvertisedQuota(f, kNow);
  REQUIRE(q.has_value());
  CHECK(q->rate_per_s == doctest::Approx(10.0));
  CHECK(q->burst == 100u);
  CHECK(q->remaining == 40u);
  CHECK(q->reset == 3s);
}

TEST_CASE("AdvertisedFromLimitRemainingResetSpreadsWhatIsLeft") {
  RateLimitFields f{.limit = "100", .remaining = "20", .reset = "10"};
  const auto q = ParseAdvertisedQuota(f, kNow);
  REQUIRE(q.has_value());
  CHECK(q->rate_per_s == doctest::Approx(2.0));  // 20 left over 10 s
  SUBCASE("nothing left: one request per reset, never a zero-wait spin nor a zero rate") {
    f.remaining = "0";
    const auto z = ParseAdvertisedQuota(f, kNow);
    REQUIRE(z.has_value());
    CHECK(z->rate_per_s == doctest::Approx(0.1));
  }
}

TEST_CASE("AdvertisedFromXRateLimitWithEpochReset") {
  RateLimitFields f{.x_limit = "5000", .x_remaining = "4990", .x_reset = "1700000100"};
  const auto q = ParseAdvertisedQuota(f, kNow);
  REQUIRE(q.has_value());
  CHECK(q->reset == 100s);  // an epoch instant, 100 s from now
  CHECK(q->rate_per_s == doctest::Approx(49.9));
  SUBCASE("an epoch in the past resets now: one second, not a division by zero") {
    f.x_reset = "1600000000";
    const auto p = ParseAdvertisedQuota(f, kNow);
    REQUIRE(p.has_value());
    CHECK(p->reset == 0s);
    CHECK(p->rate_per_s == doctest::Approx(4990.0));
  }
}

TEST_CASE("AdvertisedGarbageEverywhereIsNothing") {
  RateLimitFields f{.policy = "x;y;z",
                    .ratelimit = "??",
                    .limit = "-1",
                    .remaining = "1.5",
                    .reset = "soon",
                    .x_limit = "",
                    .x_remaining = "abc",
                    .x_reset = "-3"};
  CHECK_FALSE(ParseAdvertisedQuota(f, kNow).has_value());
  CHECK_FALSE(ParseAdvertisedQuota(RateLimitFields{}, kNow).has_value());
  SUBCASE("twin: one usable field is enough") {
    f.x_limit = "10";
    f.x_remaining = "5";
    f.x_reset = "5";
    CHECK(ParseAdvertisedQuota(f, kNow).has_value());
  }
}

TEST_CASE("QuotaIntegerIsStrict") {
  CHECK(fwdsink::ParseQuotaInteger(" 42 ") == 42u);
  CHECK_FALSE(fwdsink::ParseQuotaInteger("+42").has_value());
  CHECK_FALSE(fwdsink::ParseQuotaInteger("42x").has_value());
  CHECK_FALSE(fwdsink::ParseQuotaInteger("").has_value());
  CHECK(fwdsink::ParseQuotaInteger("123456789012345678901234567890") == fwdsink::kQuotaSaturation);
}

// A remaining count above the limit is clamped to it: 1,000 left of 10 a second is 10
// a second, not 1,000 (issue 38 item 6). The twin: a count within the limit is kept.
// @ref LLP 0023#rate-limit-remaining
TEST_CASE("ARemainingCountAboveTheLimitIsClampedToIt") {
  const auto q = ParseAdvertisedQuota(
      RateLimitFields{.x_limit = "10", .x_remaining = "1000", .x_reset = "1"}, kNow);
  REQUIRE(q.has_value());
  CHECK(q->remaining == 10u);
  REQUIRE(q->rate_per_s.has_value());
  CHECK(*q->rate_per_s == doctest::Approx(10.0));
  const auto policy = ParseAdvertisedQuota(
      RateLimitFields{.policy = "\"q\";q=10;w=1", .ratelimit = "\"q\";r=1000;t=1"}, kNow);
  REQUIRE(policy.has_value());
  CHECK(policy->remaining == 10u);
  SUBCASE("twin: a count within the limit is the count") {
    const auto within = ParseAdvertisedQuota(
        RateLimitFields{.x_limit = "10", .x_remaining = "4", .x_reset = "1"}, kNow);
    REQUIRE(within.has_value());
    CHECK(within->remaining == 4u);
    CHECK(*within->rate_per_s == doctest::Approx(4.0));
  }
}
