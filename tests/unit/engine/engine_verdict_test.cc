// SPDX-License-Identifier: Apache-2.0
// The verdict's rules beyond the status table (issue 10), as tables: ClickHouse's
// exception codes under --profile clickhouse, and the retried statuses. No sockets.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/verdict.h"

using fwdsink::Action;
using fwdsink::Answer;
using fwdsink::Classify;
using fwdsink::ClickHouseClass;
using fwdsink::EngineProfile;
using fwdsink::ResponseRules;
using fwdsink::RetryCause;
using fwdsink::StopCause;

namespace {

// Bodies exactly as ClickHouse 18.16 (Debian 12) wrote them, and one newer shape.
constexpr std::string_view kParse18 =
    "Code: 27, e.displayText() = DB::Exception: Cannot parse input: expected \" before: "
    "x\"}\\n: (while read the value of key v): (at row 2)\n, e.what() = DB::Exception\n";
constexpr std::string_view kUnknownTable18 =
    "Code: 60, e.displayText() = DB::Exception: Table default.nope doesn't exist., e.what() = "
    "DB::Exception\n";
constexpr std::string_view kIdentity18 =
    "Code: 89, e.displayText() = DB::Exception: Unknown Content-Encoding of HTTP request: "
    "identity, e.what() = DB::Exception\n";
constexpr std::string_view kTooManyParts23 =
    "Code: 252. DB::Exception: Too many parts (300). Merges are processing significantly "
    "slower than inserts. (TOO_MANY_PARTS) (version 23.8.2.7 (official build))\n";

const ResponseRules kClickHouse{.profile = EngineProfile::kClickHouse};

Answer Http(int status, std::string_view body = {}, std::uint64_t rows = 1) {
  return {.status = status, .body_prefix = body, .rows = rows};
}

struct Row {
  std::string name;
  Answer attempt;
  Action action;
  std::string reason;
  RetryCause cause = RetryCause::kBackpressure;
  StopCause stop = StopCause::kAborted;
};

}  // namespace

TEST_CASE("ParseClickHouseCode: header first, else the body's Code: N prefix") {
  using fwdsink::ParseClickHouseCode;
  CHECK(ParseClickHouseCode(std::nullopt, kParse18) == 27);
  CHECK(ParseClickHouseCode(std::nullopt, kTooManyParts23) == 252);
  CHECK(ParseClickHouseCode(std::string_view("60"), "") == 60);
  CHECK(ParseClickHouseCode(std::string_view(" 241 "), kParse18) == 241);
  CHECK(ParseClickHouseCode(std::string_view("x"), kParse18) == 27);  // garbage header: body
  CHECK(ParseClickHouseCode(std::nullopt, "\n  Code: 62, e.displayText()") == 62);
  CHECK_FALSE(ParseClickHouseCode(std::nullopt, "Code: 27"));  // truncated: no terminator
  CHECK_FALSE(ParseClickHouseCode(std::nullopt, "Code: , e"));
  CHECK_FALSE(ParseClickHouseCode(std::nullopt, "Code: 99999999999, e"));
  CHECK_FALSE(ParseClickHouseCode(std::nullopt, R"({"error":"Code: 27, x"})"));
  CHECK_FALSE(ParseClickHouseCode(std::nullopt, "Not found"));
}

TEST_CASE("LookUpClickHouseCode: the numbers of ClickHouse's ErrorCodes.cpp") {
  using fwdsink::LookUpClickHouseCode;
  CHECK(LookUpClickHouseCode(27).name == "CANNOT_PARSE_INPUT_ASSERTION_FAILED");
  CHECK(LookUpClickHouseCode(27).what == ClickHouseClass::kRowData);
  CHECK(LookUpClickHouseCode(252).what == ClickHouseClass::kOverload);
  CHECK(LookUpClickHouseCode(202).what == ClickHouseClass::kOverload);
  CHECK(LookUpClickHouseCode(241).what == ClickHouseClass::kOverload);
  CHECK(LookUpClickHouseCode(60).what == ClickHouseClass::kConfig);
  CHECK(LookUpClickHouseCode(115).what == ClickHouseClass::kConfig);
  CHECK(LookUpClickHouseCode(89).what == ClickHouseClass::kConfig);
  CHECK(LookUpClickHouseCode(516).what == ClickHouseClass::kConfig);
  CHECK(LookUpClickHouseCode(49).what == ClickHouseClass::kUnknown);  // LOGICAL_ERROR
  CHECK(LookUpClickHouseCode(49).name.empty());
  CHECK(LookUpClickHouseCode(-1).what == ClickHouseClass::kUnknown);
}

TEST_CASE("--profile clickhouse: the verdict table") {
  Answer header_only = Http(500, "", 4);
  header_only.clickhouse_exception_code = "252";
  Answer basic_401 = Http(401, "Code: 193, e.displayText() = DB::Exception: Wrong password");
  Answer bearer_401 = basic_401;
  bearer_401.has_token_provider = true;
  const std::vector<Row> rows = {
      {"18.16 parse error, many rows: split", Http(500, kParse18, 8), Action::kSplit,
       "CANNOT_PARSE_INPUT_ASSERTION_FAILED"},
      {"18.16 parse error, one row: poison", Http(500, kParse18, 1), Action::kPoison,
       "CANNOT_PARSE_INPUT_ASSERTION_FAILED"},
      {"newer parse error as 400", Http(400, "Code: 117. DB::Exception: Unknown field", 1),
       Action::kPoison, "INCORRECT_DATA"},
      {"too many parts: backpressure in place", Http(500, kTooManyParts23, 4),
       Action::kRetryInPlace, "TOO_MANY_PARTS"},
      {"code in the header only", header_only, Action::kRetryInPlace, "TOO_MANY_PARTS"},
      {"unknown table (18.16 says 404): stop, config", Http(404, kUnknownTable18, 4), Action::kStop,
       "UNKNOWN_TABLE", RetryCause::kBackpressure, StopCause::kConfig},
      {"Content-Encoding identity: stop, config", Http(500, kIdentity18, 4), Action::kStop,
       "UNKNOWN_COMPRESSION_METHOD", RetryCause::kBackpressure, StopCause::kConfig},
      {"wrong password with Basic auth: stop, config", basic_401, Action::kStop, "WRONG_PASSWORD",
       RetryCause::kBackpressure, StopCause::kConfig},
      {"401 with a token provider: refresh first", bearer_401, Action::kRefreshToken, ""},
      {"an unlisted code: the status decides (500 retries)",
       Http(500, "Code: 49, e.displayText() = DB::Exception: Logical error", 4),
       Action::kRetryInPlace, "http_500", RetryCause::kServer},
      {"no code: the status decides (404 respools)", Http(404, "Not found", 4), Action::kRespool,
       "http_404"},
      {"2xx is never read for a code", Http(200, "Code: 60, x"), Action::kAcknowledge, ""},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const fwdsink::Verdict v = Classify(row.attempt, kClickHouse);
    CHECK(v.action == row.action);
    CHECK(v.reason == row.reason);
    if (v.action == Action::kRetryInPlace) CHECK(v.retry_cause == row.cause);
    if (v.action == Action::kStop) CHECK(v.stop == row.stop);
  }
  SUBCASE("the twin: the generic profile ignores ClickHouse's codes") {
    const ResponseRules generic;
    CHECK(Classify(Http(500, kParse18, 8), generic).action == Action::kRetryInPlace);
    CHECK(Classify(Http(404, kUnknownTable18, 4), generic).action == Action::kRespool);
    CHECK(Classify(Http(500, kTooManyParts23, 4), generic).retry_cause == RetryCause::kServer);
  }
  SUBCASE("the server's own words travel with the verdict") {
    const fwdsink::Verdict v = Classify(Http(404, kUnknownTable18, 4), kClickHouse);
    CHECK(v.server_message == "Table default.nope doesn't exist.");
    CHECK(v.message.find("UNKNOWN_TABLE") != std::string::npos);
  }
}

TEST_CASE("retried statuses: 408 and 425 retry in place by default, the list is the user's") {
  const ResponseRules defaults;
  for (int status : {408, 425}) {
    CAPTURE(status);
    const fwdsink::Verdict v = Classify(Http(status), defaults);
    CHECK(v.action == Action::kRetryInPlace);
    CHECK(v.retry_cause == RetryCause::kServer);
    CHECK(v.reason == "http_" + std::to_string(status));
  }
  // The twins: other 4xx keep their rules; every 5xx still retries by default.
  CHECK(Classify(Http(404), defaults).action == Action::kRespool);
  CHECK(Classify(Http(400, "", 4), defaults).action == Action::kSplit);
  CHECK(Classify(Http(507), defaults).action == Action::kRetryInPlace);

  const ResponseRules listed{.retry_statuses = {500, 502, 504}, .retry_all_5xx = false};
  CHECK(Classify(Http(502), listed).action == Action::kRetryInPlace);
  const fwdsink::Verdict not_listed = Classify(Http(501), listed);
  CHECK(not_listed.action == Action::kRespool);
  CHECK(not_listed.respool_reason == fwdsink::RespoolReason::kServerError);
  CHECK(Classify(Http(408), listed).action == Action::kRespool);  // no longer listed
  // 429 and 503 are backpressure whatever the list says.
  CHECK(Classify(Http(503), listed).retry_cause == RetryCause::kBackpressure);
  CHECK(Classify(Http(429), listed).retry_cause == RetryCause::kBackpressure);
}

TEST_CASE("ServerMessage: the server's words, bounded and printable") {
  using fwdsink::ServerMessage;
  CHECK(ServerMessage(kIdentity18) == "Unknown Content-Encoding of HTTP request: identity");
  CHECK(ServerMessage(kTooManyParts23).starts_with("Too many parts (300)."));
  CHECK(ServerMessage(R"({"error":"no such route","details":{"reason":"not_found"}})") ==
        "no such route (not_found)");
  CHECK(ServerMessage("<html>404 Not Found</html>\nmore") == "<html>404 Not Found</html>");
  CHECK(ServerMessage(std::string(1000, 'x')).size() == 300);
  CHECK(ServerMessage("a\x01\x02z") == "a  z");
}
