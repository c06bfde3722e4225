// SPDX-License-Identifier: Apache-2.0
// The verdict: what one attempt to send a chunk means, decided apart from what is done
// about it. Internal to the sink (not installed).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fwdsink/clock.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/forward_result.h"
#include "fwdsink/ratelimit.h"
#include "fwdsink/transport.h"

namespace fwdsink {

// What came back for one attempt, plus the facts the rules need. Plain data: views
// into the caller's response, valid for the Classify() call only.
struct Answer {
  TransportError error = TransportError::kNone;
  std::string_view error_message{};               // the transport's sentence, for kTls
  int status = 0;                                 // HTTP status when error == kNone
  std::optional<std::string_view> retry_after{};  // raw Retry-After header, if any
  std::string_view body_prefix{};                 // the bounded prefix of the response body
  std::uint64_t rows = 0;                         // rows in the chunk sent
  bool token_refresh_tried = false;               // a 401 already made us refresh, this chunk
  bool has_token_provider = false;
  std::optional<std::string_view> clickhouse_exception_code{};  // the header, if any
  SystemTime now{};                        // system time, to turn an HTTP-date into a delay
  const HeaderList* rate_limit = nullptr;  // RateLimit-* / X-RateLimit-* headers, if any
  // For a refused single row (@ref LLP 0023#request-level-refusals):
  bool row_is_json = false;       // the row parses as JSON: nothing visibly wrong with it
  bool split_tree_acked = false;  // the server accepted part of the request it came from
};

// What to do next with the chunk.
enum class Action {
  kAcknowledge,   // the server has the chunk (maybe already had it: duplicate)
  kRetryInPlace,  // re-send the same bytes under the same key after a wait
  kRefreshToken,  // ask the token provider for a fresh token, re-send at once
  kSplit,         // halve the chunk at a line boundary, send both halves
  kPoison,        // the single row is refused as malformed: dead-letter it
  kRespool,       // give the partition back for a later tick (respool_reason says why)
  kStop,          // stop the partition (stop says why)
};

// Why a chunk is retried in place; picks the counter and, past the budget, the
// respool reason.
enum class RetryCause { kBackpressure, kTransport, kServer };

// Why the partition stops.
enum class StopCause { kAborted, kTls, kAuth, kConfig };

struct Verdict {
  Action action = Action::kAcknowledge;
  int status = 0;          // the HTTP status decided on (0 for transport errors)
  std::string reason{};    // server's details.reason, else our code ("http_503", ...)
  std::string message{};   // a sentence for an operator, when the verdict ends the chunk
  bool duplicate = false;  // kAcknowledge: the server said it had this key already
  RetryCause retry_cause = RetryCause::kBackpressure;      // kRetryInPlace
  std::optional<std::chrono::milliseconds> retry_after{};  // kRetryInPlace: positive only
  std::string retry_after_raw{};                           // kRetryInPlace: as received
  RespoolReason respool_reason = RespoolReason::kNone;     // kRespool
  StopCause stop = StopCause::kAborted;                    // kStop
  std::string server_message{};  // the server's own words (first line), when it refused
  // kAcknowledge and backpressure kRetryInPlace: the quota the response advertised,
  // for the pacer. @ref LLP 0016#advertised
  std::optional<AdvertisedQuota> quota{};
};

// Maps an attempt to its verdict. Pure: no clock, no counters, no I/O; the same
// attempt always gets the same verdict. @ref LLP 0014#core
[[nodiscard]] Verdict Classify(const Answer& attempt);

// ---- Rules beyond the status (@ref LLP 0017#profiles): engine profiles and the
// statuses retried in place. Kept apart from the status table above, in
// response_rules.cc.

// Maps an attempt to its verdict under `rules`: the engine's own rule first (a
// ClickHouse exception code), then the retry-status list, then Classify(attempt).
// Pure, like Classify.
[[nodiscard]] Verdict Classify(const Answer& attempt, const ResponseRules& rules);

// What a ClickHouse exception code means to fwdsink.
enum class ClickHouseClass {
  kUnknown,   // not in our tables: the HTTP status decides
  kRowData,   // the rows are bad (parse/type errors): split down to the row, poison it
  kOverload,  // the server is busy or a network hiccup: retry in place as backpressure
  kConfig,    // our configuration is wrong (table, setting, encoding, credentials): stop
};
// A ClickHouse error code and its name, as in ClickHouse's src/Common/ErrorCodes.cpp.
struct ClickHouseCode {
  int code = 0;
  std::string_view name;
  ClickHouseClass what = ClickHouseClass::kUnknown;
};
// Returns the class and name of `code`; kUnknown (name empty) for codes not listed.
[[nodiscard]] ClickHouseCode LookUpClickHouseCode(int code);
// Returns the exception code of a ClickHouse response: the X-ClickHouse-Exception-Code
// header when present and numeric, else a "Code: N" prefix of the body; nullopt if none.
[[nodiscard]] std::optional<int> ParseClickHouseCode(std::optional<std::string_view> header,
                                                     std::string_view body_prefix);
// Returns the server's own words from a possibly truncated error body, for an
// operator: a ClickHouse exception's text, a JSON "error"/"message" (with its reason),
// or the first line of text; at most 300 bytes, control characters replaced by spaces.
[[nodiscard]] std::string ServerMessage(std::string_view body_prefix);
// Parses the advertised quota out of a response's rate-limit headers (names compared
// case-insensitively); nullopt when there is none or it is unusable.
[[nodiscard]] std::optional<AdvertisedQuota> QuotaFrom(const HeaderList* headers, SystemTime now);

// Returns the respool reason for a chunk whose retries outlast the inline budget.
[[nodiscard]] RespoolReason RespoolReasonFor(RetryCause cause);

// Extracts details.reason (or data.reason, or a top-level reason string) from a
// possibly truncated JSON error body; empty when there is none.
[[nodiscard]] std::string ExtractReason(std::string_view body_prefix);

// Scans a possibly truncated JSON text for "<key>":"<value>" and returns the value
// (at most 256 characters); empty when there is none.
[[nodiscard]] std::string ScanStringField(std::string_view body, std::string_view key);

}  // namespace fwdsink
