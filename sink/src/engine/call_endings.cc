// SPDX-License-Identifier: Apache-2.0
// What each ending of a chunk's attempts does to the call: the conclusion table's row,
// the cursor route, a split, a poison, a respool. @ref LLP 0014#conclusion
#include <utility>

#include "base/counter_add.h"
#include "engine/call.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

}  // namespace

ForwardResult ForwardSink::Call::Finish() {
  sink_.SetState({});
  return std::move(result_);
}

void ForwardSink::Call::End(Ending ending, const Facts& facts) {
  fwdsink::Conclude(ending, facts, result_, counters_, core_.emit);
}

// A sealed partition never changes: one smaller now than at open was cut under us (a
// contract violation, not a delivery and not a torn row). The driver quarantines it;
// the message has the true counts. @ref LLP 0023#shrunk
bool ForwardSink::Call::Shrunk() {
  std::error_code ec;
  const std::uint64_t now = std::filesystem::file_size(path_, ec);
  if (ec || now >= file_size_) return false;
  End(Ending::kShrunk,
      {.reason = std::string(kShrunkReason),
       .message = "partition shrank while being sent: " + std::to_string(file_size_) +
                  " bytes at hand-over, " + std::to_string(result_.resume_offset) +
                  " sent and acknowledged, " + std::to_string(now) + " now",
       .begin = result_.resume_offset,
       .end = now});
  return true;
}

void ForwardSink::Call::SourceFailed(ChunkSource& source, SourceStatus status) {
  if (status == SourceStatus::kEncodeError) {
    const Chunk& c = source.chunk();
    const std::string key = ChunkKey(partition_, c.begin, c.end);
    End(Ending::kEncodeFailed,
        {.key = key,
         .reason = "encode_failed",
         .message = "compressing chunk " + key + " failed: " + source.encode_error()});
    return;
  }
  const Chunker& chunker = source.chunker();
  End(Ending::kUnreadable, {.reason = std::string(to_string(chunker.error())),
                            .message = chunker.error_message(),
                            .begin = chunker.error_offset()});
}

void ForwardSink::Call::Emit(Event e) {
  if (!sink_.deps.on_event) return;
  e.label = options_.label;
  if (e.partition.empty()) e.partition = partition_;  // a pack's member events name theirs
  if (pack_ && e.key.empty()) e.key = pack_->key;
  if (sink_.deps.endpoints->size() > 1) e.endpoint = sink_.deps.endpoints->at(route_.ep).name;
  sink_.deps.on_event(e);
}

// Carries out how a flight's attempts ended.
ForwardSink::Call::ChunkEnd ForwardSink::Call::Finished(Flight& f) {
  const Attempt& attempt = *f.attempt;
  if (attempt.status_seen()) result_.status = *attempt.status_seen();
  if (attempt.throttled()) result_.throttled = true;
  const Attempt::End& end = attempt.end();
  const Request& request = attempt.request();
  switch (end.kind) {
    case Attempt::End::Kind::kAborted: End(Ending::kAborted, {}); return ChunkEnd::kStop;
    case Attempt::End::Kind::kBadToken:
      End(Ending::kAuthFailed,
          {.key = request.key, .reason = "bad_token_value", .message = end.message});
      return ChunkEnd::kStop;
    case Attempt::End::Kind::kGiveUp: GiveUp(attempt); return ChunkEnd::kStop;
    case Attempt::End::Kind::kVerdict: break;
  }
  const Verdict& v = end.verdict;
  if (v.action == Action::kAcknowledge) {
    if (end.shrink_to && source_) source_->LimitChunkBytes(*end.shrink_to);
    return Acked(attempt, v.duplicate) ? ChunkEnd::kNext : ChunkEnd::kStop;
  }
  return Verdicted(f);
}

// A verdict that is no acknowledgement: split, poison, or stop the partition.
ForwardSink::Call::ChunkEnd ForwardSink::Call::Verdicted(Flight& f) {
  const Verdict& v = f.attempt->end().verdict;
  const Request& request = f.request;
  if (pack_) return PackRefused(v, request);
  const std::optional<Ending> ending = EndingFor(v);
  FWDSINK_CHECK(ending.has_value());
  switch (*ending) {
    case Ending::kSplit: return Split(v, f);
    case Ending::kPoisoned: return Poisoned(v, request);
    case Ending::kRequestRefused: return RequestRefused(v, request, v.message);
    case Ending::kClientError: {
      // 404, 405, 415, 3xx...: not retried inline; the driver classifies.
      std::string message = v.message + " for " + request.key;
      if (!v.server_message.empty()) message += ": " + v.server_message;
      End(Ending::kClientError, {.key = request.key,
                                 .status = v.status,
                                 .reason = v.reason,
                                 .message = std::move(message),
                                 .server_message = v.server_message,
                                 .respool = v.respool_reason});
      return ChunkEnd::kStop;
    }
    case Ending::kConfigError:
      // The server says our configuration is wrong: stop at once, name the cause, no
      // retry loop. @ref LLP 0017#config-errors
      End(Ending::kConfigError,
          {.key = request.key,
           .status = v.status,
           .reason = v.reason,
           .message = v.message + (v.server_message.empty() ? "" : ": " + v.server_message),
           .server_message = v.server_message});
      return ChunkEnd::kStop;
    default:  // aborted, TLS, auth
      End(*ending,
          {.key = request.key, .status = v.status, .reason = v.reason, .message = v.message});
      return ChunkEnd::kStop;
  }
}

// The inline budget would be passed by the next wait: respool, cursor kept.
void ForwardSink::Call::GiveUp(const Attempt& attempt) {
  const Attempt::End& end = attempt.end();
  const Request& request = attempt.request();
  End(Ending::kGiveUp,
      {.key = request.key,
       .status = end.verdict.status,
       .reason = end.verdict.reason,
       .message = "inline budget of " +
                  std::to_string(options_.backpressure.inline_budget.count()) +
                  " ms would be passed by a further " + std::to_string(end.would_wait.count()) +
                  " ms wait after " + std::to_string(attempt.attempts()) + " attempt(s); " +
                  (pack_ ? "pack " + pack_->key + " kept"
                         : "resume at " + std::to_string(result_.resume_offset)),
       .attempt = attempt.attempts(),
       .wait = end.would_wait,
       .begin = request.range.begin,
       .end = request.range.end,
       .respool = RespoolReasonFor(end.verdict.retry_cause)});
}

// A refused chunk is halved at a line boundary; both halves go next, under their own
// keys. Past the bisection's request bound the refusal is the request's.
ForwardSink::Call::ChunkEnd ForwardSink::Call::Split(const Verdict& v, Flight& f) {
  const Request& request = f.request;
  if (bisection_.requests >= options_.max_split_requests) {
    return RequestRefused(v, request,
                          "bisection spent its " + std::to_string(options_.max_split_requests) +
                              " requests without isolating a row");
  }
  bisection_.NoteSplit(request.range.end);
  End(Ending::kSplit, ChunkFacts(v, request, v.message));
  const std::uint64_t mid = source_->Split(f.prepared.chunk);
  window_.Split(request.range.begin, mid, request.range.end);
  // The source has more now, even when it had said kEnd (or failed after this chunk):
  // the halves come before anything else. @ref LLP 0014#window
  source_end_.reset();
  return ChunkEnd::kNext;
}

Facts ForwardSink::Call::ChunkFacts(const Verdict& v, const Request& request, std::string message) {
  return {.key = request.key,
          .status = v.status,
          .reason = v.reason,
          .message = std::move(message),
          .begin = request.range.begin,
          .end = request.range.end,
          .rows = request.range.rows};
}

// Counts an acknowledged chunk and hands its cursor to the ack callback.
bool ForwardSink::Call::Acked(const Attempt& attempt, bool duplicate) {
  const Request& request = attempt.request();
  const ChunkRange& c = request.range;
  bisection_.NoteAcked(c.end);
  Add(counters_.chunks_acked);
  counters_.last_ack_time_ms.store(
      static_cast<std::uint64_t>(
          std::chrono::duration_cast<milliseconds>(sink_.deps.time->SystemNow().time_since_epoch())
              .count()),
      std::memory_order_relaxed);
  Add(counters_.rows_acked, c.rows);
  Add(counters_.bytes_acked, request.body.size());
  EndpointEntry& entry = sink_.deps.endpoints->at(attempt.endpoint());
  Add(entry.counters.chunks_acked);
  Add(entry.counters.bytes_acked, request.body.size());
  result_.chunks_acked += 1;
  result_.rows_acked += c.rows;
  result_.bytes_acked += request.body.size();
  return Advance(c, /*duplicate=*/duplicate, /*dead_lettered=*/false);
}

// Moves the cursor by the one route: the cursor log (and the ack callback), told where
// the cursor may be persisted (the contiguous prefix of whole chunks: never past a gap,
// never inside a split chunk, so a restart cuts the same chunks under the same keys).
// @ref LLP 0023#split-window @ref LLP 0014#window @ref LLP 0021#cursor-road
bool ForwardSink::Call::Advance(const ChunkRange& c, bool duplicate, bool dead_lettered) {
  window_.Ack(c.begin, c.end);
  result_.resume_offset = window_.acked_end();
  const std::vector<CursorRange> journal = window_.Journal();
  const AckedChunk a{.partition = partition_,
                     .begin = c.begin,
                     .end = c.end,
                     .rows = c.rows,
                     .duplicate = duplicate,
                     .final = window_.acked_end() >= file_size_,
                     .dead_lettered = dead_lettered,
                     .inside_split = window_.Inside(c.end),
                     .cursor = window_.durable_end(),
                     .in_flight = flights_.size() - 1,
                     .journal = journal};
  if (!TellAcked(a)) {
    End(Ending::kCursorNotSaved, {.message = "the cursor could not be persisted after offset " +
                                             std::to_string(window_.durable_end())});
    return false;
  }
  // Between two chunks, with nothing of the partition in flight: the request slots may
  // take the sender's own slot back (a limit that fell). @ref LLP 0018#slots
  if (a.in_flight == 0 && !a.final && sink_.deps.requests) sink_.deps.requests->Yield();
  return true;
}

// The cursor log first (the driver's cursor writer), then the caller's ack callback;
// false when either could not take the cursor.
bool ForwardSink::Call::TellAcked(const AckedChunk& a) {
  return (!cursor_log_ || cursor_log_->Acked(a)) && (!on_ack_ || on_ack_(a));
}

// A single row the server refuses: hand its bytes to the poison callback; once they
// are durably in dead letters, move on past them. @ref LLP 0014#core
ForwardSink::Call::ChunkEnd ForwardSink::Call::Poisoned(const Verdict& v, const Request& request) {
  const ChunkRange& c = request.range;
  End(Ending::kPoisoned,
      ChunkFacts(v, request,
                 "the server refuses row(s) at [" + std::to_string(c.begin) + ", " +
                     std::to_string(c.end) + ") with " + std::to_string(v.status)));
  if (!on_poison_) return ChunkEnd::kStop;
  if (!on_poison_(
          PoisonedChunk{partition_, c.begin, c.end, c.rows, v.status, v.reason, request.body})) {
    return ChunkEnd::kStop;
  }
  // Taken: this call goes on as if the chunk had not been refused.
  result_.outcome = Outcome::kDelivered;
  result_.reason.clear();
  result_.message.clear();
  result_.poison_begin = result_.poison_end = result_.poison_rows = 0;
  return Advance(c, /*duplicate=*/false, /*dead_lettered=*/true) ? ChunkEnd::kNext
                                                                 : ChunkEnd::kStop;
}

// The server refuses the request, not the data: respool (the driver backs off), an
// error event naming the status and the server's reason, nothing dead-lettered.
ForwardSink::Call::ChunkEnd ForwardSink::Call::RequestRefused(const Verdict& v,
                                                              const Request& request,
                                                              const std::string& why) {
  const std::string reason = v.reason.empty() ? "http_" + std::to_string(v.status) : v.reason;
  Facts f = ChunkFacts(v, request,
                       "HTTP " + std::to_string(v.status) + " (" + reason + ") for " + request.key +
                           ": " + why + "; partition kept, resume at " +
                           std::to_string(result_.resume_offset));
  f.reason = reason;
  End(Ending::kRequestRefused, f);
  return ChunkEnd::kStop;
}

}  // namespace fwdsink
