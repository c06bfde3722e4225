// SPDX-License-Identifier: Apache-2.0
// The verdict, as a table: every status class and header combination, no sockets; and
// a refused single row, poison only when the data is the cause.
// @ref LLP 0023#request-level-refusals
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/verdict.h"

using namespace std::chrono_literals;
using fwdsink::Action;
using fwdsink::Answer;
using fwdsink::Classify;
using fwdsink::RespoolReason;
using fwdsink::RetryCause;
using fwdsink::StopCause;
using fwdsink::TransportError;
using std::chrono::milliseconds;

namespace {

// Thu, 01 Jan 2026 00:00:00 GMT: the system time HTTP-dates are measured against.
const fwdsink::SystemTime kNow =
    std::chrono::sys_days{std::chrono::year{2026} / std::chrono::January / 1};
constexpr std::string_view kReasonBody = R"({"error":"x","details":{"reason":"byte_rate"}})";

// One row: what came back, and the verdict expected for it.
struct Row {
  std::string name;
  Answer attempt;
  Action action;
  int status = 0;
  std::string reason{};
  std::optional<milliseconds> retry_after{};  // kRetryInPlace
  RetryCause cause = RetryCause::kBackpressure;
  bool duplicate = false;
  RespoolReason respool = RespoolReason::kNone;
  StopCause stop = StopCause::kAborted;
  std::string message{};  // checked when not empty
};

Answer Http(int status, std::string_view body = {}, std::uint64_t rows = 1) {
  return {.status = status, .body_prefix = body, .rows = rows, .now = kNow};
}

Answer Throttled(int status, std::optional<std::string_view> retry_after) {
  Answer a = Http(status, kReasonBody, 4);
  a.retry_after = retry_after;
  return a;
}

Answer Unauthorized(bool provider, bool tried, std::string_view body = {}) {
  Answer a = Http(401, body, 4);
  a.has_token_provider = provider;
  a.token_refresh_tried = tried;
  return a;
}

Answer Broken(TransportError e) {
  return {.error = e, .error_message = "it broke", .rows = 4, .now = kNow};
}

std::vector<Row> AcknowledgedRows() {
  return {
      {"200 empty body", Http(200), Action::kAcknowledge, 200},
      {"201 accepted", Http(201, R"({"status":"accepted"})"), Action::kAcknowledge, 201},
      {"200 duplicate body",
       Http(200, R"({"status":"duplicate"})"),
       Action::kAcknowledge,
       200,
       {},
       {},
       {},
       /*duplicate=*/true},
      {"204 truncated duplicate",
       Http(204, R"({"status" : "duplicate", "pad":"xx)"),
       Action::kAcknowledge,
       204,
       {},
       {},
       {},
       /*duplicate=*/true},
  };
}

std::vector<Row> AuthRows() {
  return {
      {"401 with a provider, first time",
       Unauthorized(true, false),
       Action::kRefreshToken,
       401,
       "",
       {},
       {},
       false,
       {},
       {},
       "401: asking for a fresh token"},
      {"401 after a refresh",
       Unauthorized(true, true),
       Action::kStop,
       401,
       "unauthorized",
       {},
       {},
       false,
       {},
       StopCause::kAuth,
       "401 again after a token refresh"},
      {"401 without a provider",
       Unauthorized(false, false),
       Action::kStop,
       401,
       "unauthorized",
       {},
       {},
       false,
       {},
       StopCause::kAuth,
       "401 and no token provider to refresh from"},
      {"401 with a reason",
       Unauthorized(false, false, R"({"reason":"token_expired"})"),
       Action::kStop,
       401,
       "token_expired",
       {},
       {},
       false,
       {},
       StopCause::kAuth},
  };
}

std::vector<Row> MalformedRows() {
  std::vector<Row> rows;
  for (int status : {400, 413, 422}) {
    const std::string code = "http_" + std::to_string(status);
    rows.push_back({code + " one row", Http(status, {}, 1), Action::kPoison, status, code});
    rows.push_back({code + " one row with reason", Http(status, kReasonBody, 1), Action::kPoison,
                    status, "byte_rate"});
    rows.push_back({code + " two rows", Http(status, {}, 2), Action::kSplit, status, ""});
    rows.push_back({code + " many rows", Http(status, kReasonBody, 1000), Action::kSplit, status,
                    "byte_rate"});
  }
  return rows;
}

std::vector<Row> BackpressureRows() {
  std::vector<Row> rows;
  for (int status : {429, 503}) {
    const std::string s = std::to_string(status);
    const auto row = [&](std::string name, std::optional<std::string_view> header,
                         std::optional<milliseconds> parsed) {
      rows.push_back({s + " " + name, Throttled(status, header), Action::kRetryInPlace, status,
                      "byte_rate", parsed, RetryCause::kBackpressure});
    };
    row("without Retry-After", std::nullopt, std::nullopt);
    row("Retry-After 5", "5", 5s);
    row("Retry-After 0", "0", std::nullopt);
    row("Retry-After garbage", "soon", std::nullopt);
    row("Retry-After negative", "-5", std::nullopt);
    row("Retry-After future date", "Thu, 01 Jan 2026 00:00:10 GMT", 10s);
    row("Retry-After past date", "Wed, 31 Dec 2025 23:59:00 GMT", std::nullopt);
    rows.push_back({s + " no body reason", Http(status), Action::kRetryInPlace, status, "http_" + s,
                    std::nullopt, RetryCause::kBackpressure});
  }
  return rows;
}

std::vector<Row> ServerAndClientRows() {
  std::vector<Row> rows;
  for (int status : {500, 502, 504, 599}) {
    rows.push_back({std::to_string(status), Http(status), Action::kRetryInPlace, status,
                    "http_" + std::to_string(status), std::nullopt, RetryCause::kServer});
  }
  // A Retry-After on another 5xx is not ours to honour: the ladder decides.
  Answer with_header = Http(500);
  with_header.retry_after = "5";
  rows.push_back({"500 with Retry-After", with_header, Action::kRetryInPlace, 500, "http_500",
                  std::nullopt, RetryCause::kServer});
  for (int status : {404, 405, 415, 301, 302, 304, 100, 409}) {
    rows.push_back({std::to_string(status),
                    Http(status),
                    Action::kRespool,
                    status,
                    "http_" + std::to_string(status),
                    std::nullopt,
                    {},
                    false,
                    RespoolReason::kClientError,
                    {},
                    "unexpected HTTP " + std::to_string(status)});
  }
  return rows;
}

std::vector<Row> TransportRows() {
  std::vector<Row> rows;
  for (TransportError e : {TransportError::kConnect, TransportError::kTimeout, TransportError::kIo,
                           TransportError::kProtocol}) {
    rows.push_back({"transport " + std::string(to_string(e)),
                    Broken(e),
                    Action::kRetryInPlace,
                    0,
                    "transport_" + std::string(to_string(e)),
                    std::nullopt,
                    RetryCause::kTransport,
                    false,
                    {},
                    {},
                    "it broke"});
  }
  rows.push_back({"tls",
                  Broken(TransportError::kTls),
                  Action::kStop,
                  0,
                  "tls",
                  std::nullopt,
                  {},
                  false,
                  {},
                  StopCause::kTls,
                  "it broke"});
  rows.push_back({"aborted",
                  Broken(TransportError::kAborted),
                  Action::kStop,
                  0,
                  "",
                  std::nullopt,
                  {},
                  false,
                  {},
                  StopCause::kAborted});
  return rows;
}

void CheckRows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const fwdsink::Verdict v = Classify(row.attempt);
    CHECK(v.action == row.action);
    CHECK(v.status == row.status);
    CHECK(v.reason == row.reason);
    CHECK(v.duplicate == row.duplicate);
    if (row.action == Action::kRetryInPlace) {
      CHECK(v.retry_cause == row.cause);
      CHECK(v.retry_after == row.retry_after);
      // The raw header travels with backpressure only (into the event).
      const bool backpressure = row.cause == RetryCause::kBackpressure;
      CHECK(v.retry_after_raw ==
            std::string(backpressure ? row.attempt.retry_after.value_or("") : ""));
    } else {
      CHECK_FALSE(v.retry_after.has_value());
    }
    if (row.action == Action::kRespool) CHECK(v.respool_reason == row.respool);
    if (row.action == Action::kStop) CHECK(v.stop == row.stop);
    if (!row.message.empty()) CHECK(v.message == row.message);
  }
}

}  // namespace

TEST_CASE("VerdictTable") {
  SUBCASE("2xx: acknowledged, duplicate or not") { CheckRows(AcknowledgedRows()); }
  SUBCASE("401: refresh once when a provider exists, then an auth stop") { CheckRows(AuthRows()); }
  SUBCASE("400/413/422: split two rows or more, poison a single row") {
    CheckRows(MalformedRows());
  }
  SUBCASE("429/503: retry in place, positive Retry-After only") { CheckRows(BackpressureRows()); }
  SUBCASE("other 5xx retry in place; 3xx/404/405/415/...: respool") {
    CheckRows(ServerAndClientRows());
  }
  SUBCASE("transport errors retry, TLS and abort stop") { CheckRows(TransportRows()); }
}

TEST_CASE("VerdictIsPureTheSameAttemptGetsTheSameVerdict") {
  const Answer a = Throttled(429, "Thu, 01 Jan 2026 00:00:10 GMT");
  const auto first = Classify(a);
  const auto second = Classify(a);
  CHECK(first.retry_after == second.retry_after);
  CHECK(first.reason == second.reason);
  SUBCASE("twin: a later `now` shortens an HTTP-date, and only through `now`") {
    Answer later = a;
    later.now = kNow + 4s;
    CHECK(Classify(later).retry_after == 6s);
  }
}

TEST_CASE("RespoolReasonForEachRetryCause") {
  CHECK(fwdsink::RespoolReasonFor(RetryCause::kBackpressure) == RespoolReason::kBudgetExhausted);
  CHECK(fwdsink::RespoolReasonFor(RetryCause::kTransport) == RespoolReason::kTransportError);
  CHECK(fwdsink::RespoolReasonFor(RetryCause::kServer) == RespoolReason::kServerError);
}

TEST_CASE("ExtractReasonFindsTheLimiterEvenInATruncatedBody") {
  CHECK(fwdsink::ExtractReason(R"({"error":"x","details":{"reason":"byte_rate"}})") == "byte_rate");
  CHECK(fwdsink::ExtractReason(R"({"data":{"reason":"concurrency"}})") == "concurrency");
  CHECK(fwdsink::ExtractReason(R"({"details":{"reason":"req_rate"},"pad":"xxxxxxxx)") ==
        "req_rate");
  CHECK(fwdsink::ExtractReason("<html>busy</html>").empty());
  CHECK(fwdsink::ExtractReason("").empty());
}

TEST_CASE("A refused single row is poison only when the data is the cause") {
  const auto single = [](int status, bool json, bool acked) {
    return Classify(
        Answer{.status = status, .rows = 1, .row_is_json = json, .split_tree_acked = acked});
  };
  SUBCASE("well-formed, nothing of its request accepted: the request is refused") {
    for (int status : {400, 422}) {
      const auto v = single(status, true, false);
      CHECK(v.action == Action::kRespool);
      CHECK(v.respool_reason == RespoolReason::kRequestRefused);
      CHECK(v.status == status);
    }
  }
  SUBCASE("twin: not JSON is poison") {
    CHECK(single(400, false, false).action == Action::kPoison);
    CHECK(single(422, false, true).action == Action::kPoison);
  }
  SUBCASE("twin: well-formed but its siblings were accepted: poison (a schema refusal)") {
    CHECK(single(400, true, true).action == Action::kPoison);
    CHECK(single(422, true, true).action == Action::kPoison);
  }
  SUBCASE("413 on one row is the row's size: poison whatever it holds") {
    CHECK(single(413, true, false).action == Action::kPoison);
  }
  SUBCASE("two rows or more still split") {
    CHECK(Classify(Answer{.status = 400, .rows = 2, .row_is_json = true}).action == Action::kSplit);
  }
}
