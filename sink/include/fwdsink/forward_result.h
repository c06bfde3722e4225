// SPDX-License-Identifier: Apache-2.0
// What a forward sink tells: how a ForwardPartition call ended (ForwardResult), the
// records its callbacks are handed while it runs (poisoned chunks, answered requests;
// acknowledged chunks and the journal, with the cursor log that takes them, are in
// cursor_log.h, included here), where a call starts (ForwardStart), and what its sender
// is doing now. Plain data, apart from the sink (forward_sink.h). @ref LLP 0014#layers
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/clock.h"
#include "fwdsink/cursor.h"
#include "fwdsink/cursor_log.h"

namespace fwdsink {

// What ForwardPartition achieved.
enum class Outcome {
  kDelivered,       // every row up to the end of the file was acknowledged
  kRespooled,       // gave up for now; resume at resume_offset on a later tick
  kPoisoned,        // the server refuses [poison_begin, poison_end) as malformed, and
                    // no poison callback took it
  kAborted,         // Close() was called
  kAuthError,       // 401 again after a token refresh (or no token to be had)
  kTlsError,        // TLS verification/handshake failed; nothing was sent
  kPartitionError,  // the file cannot be read or is torn (message names the offset)
  kConfigError,     // the server says our configuration is wrong (unknown table,
                    // unknown setting, unsupported encoding, credentials): retrying
                    // will not help; message names the cause. @ref LLP 0017#config-errors
};
[[nodiscard]] std::string_view to_string(Outcome outcome);

// Why a partition was respooled.
enum class RespoolReason {
  kNone,
  kBudgetExhausted,  // 429/503 backpressure outlasted the inline budget
  kTransportError,   // connection failures/timeouts outlasted the budget
  kServerError,      // other 5xx outlasted the budget
  kClientError,      // a 4xx we cannot act on (404, 405, 415, ...): not retried inline
  kCursorNotSaved,   // the ack callback could not persist the cursor
  kRequestRefused,   // the server refuses the request, not the data (a well-formed row
                     // refused with nothing of its request accepted, or a bisection past
                     // max_split_requests): never dead-lettered. @ref LLP 0023
};
[[nodiscard]] std::string_view to_string(RespoolReason reason);

// ForwardResult::reason of a kPartitionError for a partition that shrank while it was
// sent (the driver quarantines it). @ref LLP 0023#shrunk
inline constexpr std::string_view kShrunkReason = "shrunk";

struct ForwardResult {
  Outcome outcome = Outcome::kDelivered;
  // The cursor: end offset of the last acknowledged chunk (where the next attempt
  // starts). For kPoisoned it is poison_begin.
  std::uint64_t resume_offset = 0;
  RespoolReason respool_reason = RespoolReason::kNone;
  int status = 0;                  // the last HTTP status seen (0: none / transport error)
  std::string reason;              // server's details.reason, or the error text
  std::string message;             // a sentence for an operator
  std::string server_message;      // the server's own words for the last refusal, if any
  std::uint64_t poison_begin = 0;  // kPoisoned: the refused byte range
  std::uint64_t poison_end = 0;
  std::uint64_t poison_rows = 0;
  std::uint64_t chunks_acked = 0;  // during this call
  std::uint64_t rows_acked = 0;
  std::uint64_t bytes_acked = 0;
  bool throttled = false;  // at least one 429/503 was seen during this call
  // The partition file as it was opened: the driver checks them before removing a
  // delivered partition (a file that changed since is not removed). @ref LLP 0023#handover
  std::uint64_t file_size = 0;
  std::int64_t file_mtime_ns = 0;
};

// Told of each acknowledged chunk (AckedChunk, cursor_log.h), after the cursor log if one
// was handed; persists the cursor where its caller keeps it, and returns false if it
// could not (the sink then stops and respools with kCursorNotSaved rather than run ahead
// of what is on disk).
using AckCallback = std::function<bool(const AckedChunk&)>;

// The journal of a partition's call (JournalState, cursor_log.h), handed over before the
// first byte of new ranges (chunks, split pieces) leaves: the callback must make it
// durable before it returns, or return false (the sink then stops with kCursorNotSaved,
// nothing new sent). For a caller of its own; the driver hands a CursorLog instead.
// @ref LLP 0014#journal
using JournalCallback = std::function<bool(const JournalState&)>;

// Where a ForwardPartition call starts: the persisted cursor and its journal (as
// Spool::LoadCursor gives them: the journal's unacknowledged ranges are re-sent first,
// exactly, under their keys; acknowledged ones never), and where the cursor goes while
// it runs. With neither cursor_log nor on_journal, nothing is journaled (a bare sink).
struct ForwardStart {
  std::uint64_t begin = 0;
  std::vector<CursorRange> journal{};
  JournalCallback on_journal{};  // called after the cursor log's Journal(), when set
  // Takes the journal and every acknowledged chunk's cursor (the driver's cursor
  // writer); null: none. Not owned; must outlive the call. @ref LLP 0021#cursor-road
  CursorLog* cursor_log = nullptr;
};

// A chunk the server refuses as malformed (a single row, after bisection), passed to
// the poison callback with its bytes as read from the partition.
struct PoisonedChunk {
  std::string_view partition;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
  int status = 0;           // the refusing HTTP status (400, 413, 422)
  std::string_view reason;  // server's details.reason, or "http_<status>"
  std::string_view body;    // the chunk's raw (unencoded) bytes, [begin, end)
};
// Writes a poisoned chunk durably to dead letters; returns false if it could not.
// On true the sink moves on past the chunk (acking it as dead_lettered, so the cursor
// follows the ack route); on false, or with no poison callback, the call returns
// kPoisoned with the cursor before the chunk. @ref LLP 0014#core
using PoisonCallback = std::function<bool(const PoisonedChunk&)>;

// One answered request, told to ForwardDeps::on_attempt where it is classified, before
// anything is done about it (the concurrency limit and the driver's round-trip samples
// learn from it there, not from counters or event names). @ref LLP 0018#signals
struct AttemptRecord {
  enum class Kind {
    kAccepted,  // a 2xx: the chunk is acknowledged
    kRefused,   // a 429/503, retried in place
    kFailed,    // a transport error, another 5xx or a retried status, retried in place
    kOther,     // anything else (a split, a poison, a respool, a stop, a token refresh)
  };
  std::size_t endpoint = 0;  // the endpoint it went to (0: the primary)
  Kind kind = Kind::kOther;
  int status = 0;  // the HTTP status decided on (0: a transport error)
  // This chunk's attempts so far waited (gate, pacer, backoff) or were refused: a round
  // trip that includes them measures the waits, not the path.
  bool pushed_back = false;
  std::chrono::microseconds round_trip{0};  // Post() to its answer
};
using AttemptObserver = std::function<void(const AttemptRecord&)>;

// What a sink's sender is doing now, for progress lines ("waiting 30 s: byte_rate"):
// ForwardSink::state(), Driver::sender_states().
struct SenderState {
  enum class Phase { kIdle, kSending, kWaiting } phase = Phase::kIdle;
  std::string partition{};
  std::string reason{};  // why it is waiting
  int status = 0;        // the status that caused the wait
  std::chrono::milliseconds wait{0};
  MonotonicTime until{};  // when the wait ends
};

}  // namespace fwdsink
