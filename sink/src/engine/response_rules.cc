// SPDX-License-Identifier: Apache-2.0
// Classify(attempt, ResponseRules): the verdict's rules beyond the status table
// (declared in verdict.h), the server's response conventions rather than the send
// engine: the engine profile (ClickHouse's exception codes and their text), the
// statuses retried in place, and the server's own words (ServerMessage). Pure, like
// Classify. @ref LLP 0017#profiles
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "engine/verdict.h"

namespace fwdsink {
namespace {

using CH = ClickHouseClass;

// The codes fwdsink acts on, from ClickHouse's src/Common/ErrorCodes.cpp (the numbers
// are stable across releases; 18.16 answers with the same ones). Sorted by code.
// Anything not here is kUnknown and the HTTP status decides. @ref LLP 0017#clickhouse
constexpr std::array kClickHouseCodes = {
    ClickHouseCode{6, "CANNOT_PARSE_TEXT", CH::kRowData},
    ClickHouseCode{25, "CANNOT_PARSE_ESCAPE_SEQUENCE", CH::kRowData},
    ClickHouseCode{26, "CANNOT_PARSE_QUOTED_STRING", CH::kRowData},
    ClickHouseCode{27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED", CH::kRowData},
    ClickHouseCode{38, "CANNOT_PARSE_DATE", CH::kRowData},
    ClickHouseCode{41, "CANNOT_PARSE_DATETIME", CH::kRowData},
    ClickHouseCode{53, "TYPE_MISMATCH", CH::kRowData},
    ClickHouseCode{60, "UNKNOWN_TABLE", CH::kConfig},
    ClickHouseCode{62, "SYNTAX_ERROR", CH::kConfig},
    ClickHouseCode{69, "ARGUMENT_OUT_OF_BOUND", CH::kRowData},
    ClickHouseCode{70, "CANNOT_CONVERT_TYPE", CH::kRowData},
    ClickHouseCode{72, "CANNOT_PARSE_NUMBER", CH::kRowData},
    ClickHouseCode{73, "UNKNOWN_FORMAT", CH::kConfig},
    ClickHouseCode{81, "UNKNOWN_DATABASE", CH::kConfig},
    ClickHouseCode{89, "UNKNOWN_COMPRESSION_METHOD", CH::kConfig},
    ClickHouseCode{115, "UNKNOWN_SETTING", CH::kConfig},
    ClickHouseCode{117, "INCORRECT_DATA", CH::kRowData},
    ClickHouseCode{130, "CANNOT_READ_ARRAY_FROM_TEXT", CH::kRowData},
    ClickHouseCode{131, "TOO_LARGE_STRING_SIZE", CH::kRowData},
    ClickHouseCode{159, "TIMEOUT_EXCEEDED", CH::kOverload},
    ClickHouseCode{164, "READONLY", CH::kConfig},
    ClickHouseCode{173, "CANNOT_ALLOCATE_MEMORY", CH::kOverload},
    ClickHouseCode{192, "UNKNOWN_USER", CH::kConfig},
    ClickHouseCode{193, "WRONG_PASSWORD", CH::kConfig},
    ClickHouseCode{194, "REQUIRED_PASSWORD", CH::kConfig},
    ClickHouseCode{195, "IP_ADDRESS_NOT_ALLOWED", CH::kConfig},
    ClickHouseCode{201, "QUOTA_EXPIRED", CH::kOverload},
    ClickHouseCode{202, "TOO_MANY_SIMULTANEOUS_QUERIES", CH::kOverload},
    ClickHouseCode{203, "NO_FREE_CONNECTION", CH::kOverload},
    ClickHouseCode{209, "SOCKET_TIMEOUT", CH::kOverload},
    ClickHouseCode{210, "NETWORK_ERROR", CH::kOverload},
    ClickHouseCode{225, "NO_ZOOKEEPER", CH::kOverload},
    ClickHouseCode{236, "ABORTED", CH::kOverload},
    ClickHouseCode{241, "MEMORY_LIMIT_EXCEEDED", CH::kOverload},
    ClickHouseCode{242, "TABLE_IS_READ_ONLY", CH::kOverload},
    ClickHouseCode{252, "TOO_MANY_PARTS", CH::kOverload},
    ClickHouseCode{285, "TOO_FEW_LIVE_REPLICAS", CH::kOverload},
    ClickHouseCode{291, "DATABASE_ACCESS_DENIED", CH::kConfig},
    ClickHouseCode{319, "UNKNOWN_STATUS_OF_INSERT", CH::kOverload},
    ClickHouseCode{321, "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE", CH::kRowData},
    ClickHouseCode{349, "CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN", CH::kRowData},
    ClickHouseCode{364, "RECEIVED_ERROR_TOO_MANY_REQUESTS", CH::kOverload},
    ClickHouseCode{376, "CANNOT_PARSE_UUID", CH::kRowData},
    ClickHouseCode{394, "QUERY_WAS_CANCELLED", CH::kOverload},
    ClickHouseCode{407, "DECIMAL_OVERFLOW", CH::kRowData},
    ClickHouseCode{425, "SYSTEM_ERROR", CH::kOverload},
    ClickHouseCode{441, "CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING", CH::kRowData},
    ClickHouseCode{452, "SETTING_CONSTRAINT_VIOLATION", CH::kConfig},
    ClickHouseCode{467, "CANNOT_PARSE_BOOL", CH::kRowData},
    ClickHouseCode{469, "VIOLATED_CONSTRAINT", CH::kRowData},
    ClickHouseCode{471, "INVALID_SETTING_VALUE", CH::kConfig},
    ClickHouseCode{472, "READONLY_SETTING", CH::kConfig},
    ClickHouseCode{497, "ACCESS_DENIED", CH::kConfig},
    ClickHouseCode{516, "AUTHENTICATION_FAILED", CH::kConfig},
    ClickHouseCode{999, "KEEPER_EXCEPTION", CH::kOverload},
};

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a whole non-negative decimal number of at most 9 digits.
std::optional<int> WholeNumber(std::string_view s) {
  int n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || s.size() > 9 || ec != std::errc{} || end != s.data() + s.size() || n < 0) {
    return std::nullopt;
  }
  return n;
}

std::string Printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(b < 0x20 || b == 0x7f ? ' ' : c);
  }
  return std::string(TrimSpaces(out));
}

// The text of "Code: 60, e.displayText() = DB::Exception: Table default.t doesn't
// exist., e.what() = DB::Exception" (18.16) or "Code: 60. DB::Exception: Table ...
// (UNKNOWN_TABLE) (version 23.8...)" (newer): what follows "DB::Exception: ".
std::optional<std::string> ClickHouseText(std::string_view body) {
  constexpr std::string_view kMarker = "DB::Exception: ";
  const auto at = body.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view text = body.substr(at + kMarker.size());
  for (std::string_view stop : {std::string_view(", e.what()"), std::string_view(" (version "),
                                std::string_view("\n, e.what()")}) {
    if (const auto cut = text.find(stop); cut != std::string_view::npos) text = text.substr(0, cut);
  }
  return Printable(text, 300);
}

std::string ClickHouseReason(const ClickHouseCode& c, int code) {
  return c.name.empty() ? "clickhouse_" + std::to_string(code) : std::string(c.name);
}

// The ClickHouse profile's rule; nullopt when the code is unknown (or absent) and the
// status decides. @ref LLP 0017#clickhouse
std::optional<Verdict> ClickHouseVerdict(const Answer& a) {
  const std::optional<int> code = ParseClickHouseCode(a.clickhouse_exception_code, a.body_prefix);
  if (!code) return std::nullopt;
  const ClickHouseCode c = LookUpClickHouseCode(*code);
  Verdict v{.status = a.status, .reason = ClickHouseReason(c, *code)};
  const std::string what = "ClickHouse code " + std::to_string(*code) +
                           (c.name.empty() ? "" : " " + std::string(c.name));
  switch (c.what) {
    case CH::kUnknown: return std::nullopt;
    case CH::kRowData:
      v.action = a.rows >= 2 ? Action::kSplit : Action::kPoison;
      v.message = a.rows >= 2 ? what + ": splitting the chunk to find the bad row" : what;
      return v;
    case CH::kOverload:
      v.action = Action::kRetryInPlace;
      v.retry_cause = RetryCause::kBackpressure;
      v.message = what + ": the server is overloaded; retrying the same chunk";
      return v;
    case CH::kConfig:
      v.action = Action::kStop;
      v.stop = StopCause::kConfig;
      v.message = what + ": the server refuses our configuration, retrying will not help";
      return v;
  }
  return std::nullopt;
}

bool Listed(const std::vector<int>& statuses, int status) {
  return std::find(statuses.begin(), statuses.end(), status) != statuses.end();
}

// The retry-status rule: listed statuses retry in place; 5xx not listed (when not all
// 5xx retry) respool. 2xx, 401, 429 and 503 keep their own rules. @ref LLP 0017#statuses
std::optional<Verdict> RetryStatusVerdict(const Answer& a, const ResponseRules& rules) {
  const int s = a.status;
  if ((s >= 200 && s < 300) || s == 401 || s == 429 || s == 503) return std::nullopt;
  const std::string reason = "http_" + std::to_string(s);
  if (Listed(rules.retry_statuses, s)) {
    return Verdict{.action = Action::kRetryInPlace,
                   .status = s,
                   .reason = reason,
                   .retry_cause = RetryCause::kServer};
  }
  if (s >= 500 && !rules.retry_all_5xx) {
    return Verdict{.action = Action::kRespool,
                   .status = s,
                   .reason = reason,
                   .message = "HTTP " + std::to_string(s) + " is not in the retried statuses",
                   .respool_reason = RespoolReason::kServerError};
  }
  return std::nullopt;
}

}  // namespace

ClickHouseCode LookUpClickHouseCode(int code) {
  const auto it = std::lower_bound(kClickHouseCodes.begin(), kClickHouseCodes.end(), code,
                                   [](const ClickHouseCode& c, int n) { return c.code < n; });
  if (it != kClickHouseCodes.end() && it->code == code) return *it;
  return ClickHouseCode{.code = code, .name = {}, .what = ClickHouseClass::kUnknown};
}

std::optional<int> ParseClickHouseCode(std::optional<std::string_view> header,
                                       std::string_view body_prefix) {
  if (header) {
    if (auto n = WholeNumber(TrimSpaces(*header))) return n;
  }
  std::string_view body = body_prefix;
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front()))) {
    body.remove_prefix(1);
  }
  constexpr std::string_view kPrefix = "Code: ";
  if (!body.starts_with(kPrefix)) return std::nullopt;
  body.remove_prefix(kPrefix.size());
  std::size_t digits = 0;
  while (digits < body.size() && std::isdigit(static_cast<unsigned char>(body[digits]))) ++digits;
  // A number ends at ',' (18.16: "Code: 27, e.displayText()") or '.' (newer: "Code: 27.").
  if (digits == body.size() || (body[digits] != ',' && body[digits] != '.')) return std::nullopt;
  return WholeNumber(body.substr(0, digits));
}

std::string ServerMessage(std::string_view body) {
  if (auto text = ClickHouseText(body)) return *text;
  const std::string error = ScanStringField(body, "error");
  const std::string message = error.empty() ? ScanStringField(body, "message") : error;
  if (!message.empty()) {
    const std::string reason = ExtractReason(body);
    return Printable(reason.empty() ? message : message + " (" + reason + ")", 300);
  }
  return Printable(body.substr(0, body.find('\n')), 300);
}

Verdict Classify(const Answer& a, const ResponseRules& rules) {
  if (a.error != TransportError::kNone) return Classify(a);
  std::optional<Verdict> v;
  // A 401 goes to the token provider first when there is one to ask; after that (or
  // with Basic auth) ClickHouse's code says what it is. @ref LLP 0017#clickhouse
  const bool refresh_first = a.status == 401 && a.has_token_provider && !a.token_refresh_tried;
  const bool refused = a.status >= 300 && !refresh_first;
  if (rules.profile == EngineProfile::kClickHouse && refused) v = ClickHouseVerdict(a);
  if (!v) v = RetryStatusVerdict(a, rules);
  if (!v) v = Classify(a);
  if (a.status >= 300) v->server_message = ServerMessage(a.body_prefix);
  return *std::move(v);
}

}  // namespace fwdsink
