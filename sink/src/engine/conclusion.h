// SPDX-License-Identifier: Apache-2.0
// Private to the engine: how a partition's call ends, or a chunk's attempts end without
// ending it (a split), as one table: for each ending, the outcome and respool reason it
// writes into the ForwardResult, the counters it adds and the events it emits with
// which fields. The facts come from the caller; the table decides nothing else.
// @ref LLP 0014#conclusion
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/verdict.h"
#include "fwdsink/forward_result.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

enum class Ending {
  kDelivered,       // the file's end was reached, every chunk acknowledged
  kShrunk,          // the file is smaller than when it was opened
  kUnreadable,      // the chunker failed (torn row, read error)
  kEncodeFailed,    // compressing a chunk failed
  kAborted,         // Close()
  kGiveUp,          // the next wait would pass the inline budget: respool
  kCursorNotSaved,  // the ack callback could not persist the cursor: respool
  kPoisoned,        // a single row refused as malformed
  kSplit,           // a refused chunk is halved (the call goes on)
  kClientError,     // a 4xx we cannot act on: respool
  kRequestRefused,  // the server refuses the request, not the data: respool
  kTlsError,
  kAuthFailed,   // a second 401, no token to be had, or an unsafe token
  kConfigError,  // the server names our configuration
};

// What the caller knows of the ending; each row takes the fields it names.
struct Facts {
  std::string key{};
  int status = 0;
  std::string reason{};
  std::string message{};
  std::string server_message{};
  std::size_t attempt = 0;
  std::chrono::milliseconds wait{0};
  std::uint64_t begin = 0;  // the chunk's range, or the offsets the event names
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
  RespoolReason respool = RespoolReason::kNone;  // kGiveUp, kClientError
};

// Writes `ending` into `result` (outcome, reasons, message), adds its counters and
// emits its events (their label, partition and endpoint are the emitter's to add).
void Conclude(Ending ending, const Facts& facts, ForwardResult& result, Counters& counters,
              const std::function<void(Event)>& emit);

// The ending a verdict that ends a chunk's attempts leads to (kAcknowledge, the retry
// and the token refresh are not endings: nullopt).
[[nodiscard]] std::optional<Ending> EndingFor(const Verdict& v);

}  // namespace fwdsink
