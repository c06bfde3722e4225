// The verdict: what one attempt to send a chunk means, decided apart from what is done
// about it. Internal to the sink (not installed).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fwdsink/clock.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/transport.h"

namespace fwdsink {

// What came back for one attempt, plus the facts the rules need. Plain data: views
// into the caller's response, valid for the Classify() call only.
struct Attempt {
  TransportError error = TransportError::kNone;
  std::string_view error_message{};               // the transport's sentence, for kTls
  int status = 0;                                 // HTTP status when error == kNone
  std::optional<std::string_view> retry_after{};  // raw Retry-After header, if any
  std::string_view body_prefix{};                 // the bounded prefix of the response body
  std::uint64_t rows = 0;                         // rows in the chunk sent
  bool token_refresh_tried = false;               // a 401 already made us refresh, this chunk
  bool has_token_provider = false;
  SystemTime now{};  // system time, to turn an HTTP-date into a delay
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
enum class StopCause { kAborted, kTls, kAuth };

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
};

// Maps an attempt to its verdict. Pure: no clock, no counters, no I/O; the same
// attempt always gets the same verdict. @ref LLP 0014#core
[[nodiscard]] Verdict Classify(const Attempt& attempt);

// Returns the respool reason for a chunk whose retries outlast the inline budget.
[[nodiscard]] RespoolReason RespoolReasonFor(RetryCause cause);

// Extracts details.reason (or data.reason, or a top-level reason string) from a
// possibly truncated JSON error body; empty when there is none.
[[nodiscard]] std::string ExtractReason(std::string_view body_prefix);

// Scans a possibly truncated JSON text for "<key>":"<value>" and returns the value
// (at most 256 characters); empty when there is none.
[[nodiscard]] std::string ScanStringField(std::string_view body, std::string_view key);

}  // namespace fwdsink
