// SPDX-License-Identifier: Apache-2.0
#include "engine/conclusion.h"

#include <array>
#include <optional>
#include <string_view>

#include "fwdsink/check.h"

namespace fwdsink {
namespace {

// The fields an event of a row carries.
enum Field : unsigned {
  kKey = 1u << 0,
  kStatus = 1u << 1,
  kReason = 1u << 2,         // facts.reason
  kRespoolReason = 1u << 3,  // to_string(result.respool_reason), as `reason`
  kAttempt = 1u << 4,
  kWait = 1u << 5,
  kRange = 1u << 6,    // begin, end = the facts'
  kCursor = 1u << 7,   // end = result.resume_offset
  kMessage = 1u << 8,  // facts.message, unless the row has its own
};

struct EventSpec {
  std::string_view name{};  // empty: none
  unsigned fields = 0;
  std::string_view message{};  // the event's own sentence; empty: facts.message
};

using Counter = std::atomic<std::uint64_t> Counters::*;

// What the result takes from the facts.
enum Take : unsigned {
  kTakeStatus = 1u << 0,
  kTakeReason = 1u << 1,
  kTakeServerMessage = 1u << 2,
  kTakeMessage = 1u << 3,
  kTakePoison = 1u << 4,   // poison_begin/end/rows = the facts' range and rows
  kTakeRespool = 1u << 5,  // respool_reason = facts.respool
};

struct Row {
  Ending ending;
  std::optional<Outcome> outcome;  // nullopt: the call goes on (a split)
  RespoolReason respool;           // written when outcome is kRespooled, unless kTakeRespool
  unsigned take;
  std::string_view result_message;  // a fixed message instead of facts.message
  std::array<Counter, 2> counters;
  std::array<EventSpec, 2> events;
};

constexpr unsigned kChunk = kKey | kStatus | kReason | kRange | kMessage;
constexpr unsigned kRespooled = kKey | kStatus | kRespoolReason | kCursor | kMessage;

// @ref LLP 0014#conclusion
constexpr Row kRows[] = {
    {Ending::kDelivered,
     Outcome::kDelivered,
     RespoolReason::kNone,
     0,
     {},
     {&Counters::partitions_delivered, nullptr},
     {{{events::kForwardDelivered, kCursor | kMessage, "partition delivered"}, {}}}},
    {Ending::kShrunk,
     Outcome::kPartitionError,
     RespoolReason::kNone,
     kTakeReason | kTakeMessage,
     {},
     {nullptr, nullptr},
     {{{events::kForwardError, kReason | kRange | kMessage, {}}, {}}}},
    {Ending::kUnreadable,
     Outcome::kPartitionError,
     RespoolReason::kNone,
     kTakeReason | kTakeMessage,
     {},
     {nullptr, nullptr},
     {{{events::kForwardError, kReason | kRange | kMessage, {}}, {}}}},
    {Ending::kEncodeFailed,
     Outcome::kPartitionError,
     RespoolReason::kNone,
     kTakeReason | kTakeMessage,
     {},
     {nullptr, nullptr},
     {{{events::kForwardError, kKey | kReason | kMessage, {}}, {}}}},
    {Ending::kAborted,
     Outcome::kAborted,
     RespoolReason::kNone,
     0,
     "closed",
     {&Counters::aborts, nullptr},
     {{{events::kForwardAborted, kCursor | kMessage, "close() aborted the partition; cursor kept"},
       {}}}},
    {Ending::kGiveUp,
     Outcome::kRespooled,
     RespoolReason::kNone,
     kTakeStatus | kTakeReason | kTakeMessage | kTakeRespool,
     {},
     {&Counters::budget_exhausted, &Counters::respools},
     {{{events::kForwardGiveUp, kChunk | kAttempt | kWait, {}},
       {events::kForwardRespool, kRespooled, {}}}}},
    {Ending::kCursorNotSaved,
     Outcome::kRespooled,
     RespoolReason::kCursorNotSaved,
     kTakeMessage,
     {},
     {&Counters::respools, nullptr},
     {{{events::kForwardRespool, kRespoolReason | kCursor | kMessage, {}}, {}}}},
    {Ending::kPoisoned,
     Outcome::kPoisoned,
     RespoolReason::kNone,
     kTakeStatus | kTakeReason | kTakeMessage | kTakePoison,
     {},
     {&Counters::poisoned_chunks, nullptr},
     {{{events::kForwardPoison, kChunk, {}}, {}}}},
    {Ending::kSplit,
     std::nullopt,
     RespoolReason::kNone,
     0,
     {},
     {&Counters::splits, nullptr},
     {{{events::kForwardSplit, kChunk, {}}, {}}}},
    {Ending::kClientError,
     Outcome::kRespooled,
     RespoolReason::kNone,
     kTakeReason | kTakeServerMessage | kTakeMessage | kTakeRespool,
     {},
     {&Counters::respools, nullptr},
     {{{events::kForwardRespool, kKey | kStatus | kReason | kCursor | kMessage, {}}, {}}}},
    {Ending::kRequestRefused,
     Outcome::kRespooled,
     RespoolReason::kRequestRefused,
     kTakeStatus | kTakeReason | kTakeMessage,
     {},
     {&Counters::request_refusals, &Counters::respools},
     {{{events::kForwardRequestRefused, kChunk, {}}, {events::kForwardRespool, kRespooled, {}}}}},
    {Ending::kTlsError,
     Outcome::kTlsError,
     RespoolReason::kNone,
     kTakeReason | kTakeMessage,
     {},
     {nullptr, nullptr},
     {{{events::kForwardTlsError, kKey | kReason | kMessage, {}}, {}}}},
    {Ending::kAuthFailed,
     Outcome::kAuthError,
     RespoolReason::kNone,
     kTakeReason | kTakeMessage,
     {},
     {nullptr, nullptr},
     {{{events::kForwardAuthFailed, kKey | kStatus | kReason | kMessage, {}}, {}}}},
    {Ending::kConfigError,
     Outcome::kConfigError,
     RespoolReason::kNone,
     kTakeReason | kTakeServerMessage | kTakeMessage,
     {},
     {nullptr, nullptr},
     {{{events::kForwardConfigError, kKey | kStatus | kReason | kMessage, {}}, {}}}},
};

const Row& RowOf(Ending ending) {
  for (const Row& row : kRows) {
    if (row.ending == ending) return row;
  }
  FWDSINK_CHECK(false);
  return kRows[0];
}

void Write(const Row& row, const Facts& f, ForwardResult& r) {
  if (!row.outcome) return;
  r.outcome = *row.outcome;
  if (r.outcome == Outcome::kRespooled) {
    r.respool_reason = (row.take & kTakeRespool) ? f.respool : row.respool;
  }
  if (row.take & kTakeStatus) r.status = f.status;
  if (row.take & kTakeReason) r.reason = f.reason;
  if (row.take & kTakeServerMessage) r.server_message = f.server_message;
  if (!row.result_message.empty()) r.message = std::string(row.result_message);
  if (row.take & kTakeMessage) r.message = f.message;
  if (row.take & kTakePoison) {
    r.poison_begin = f.begin;
    r.poison_end = f.end;
    r.poison_rows = f.rows;
  }
}

Event Render(const EventSpec& spec, const Facts& f, const ForwardResult& r) {
  Event e{.name = spec.name};
  if (spec.fields & kKey) e.key = f.key;
  if (spec.fields & kStatus) e.status = f.status;
  if (spec.fields & kReason) e.reason = f.reason;
  if (spec.fields & kRespoolReason) e.reason = std::string(to_string(r.respool_reason));
  if (spec.fields & kAttempt) e.attempt = f.attempt;
  if (spec.fields & kWait) e.wait = f.wait;
  if (spec.fields & kRange) {
    e.begin = f.begin;
    e.end = f.end;
  }
  if (spec.fields & kCursor) e.end = r.resume_offset;
  if (spec.fields & kMessage)
    e.message = spec.message.empty() ? f.message : std::string(spec.message);
  return e;
}

}  // namespace

void Conclude(Ending ending, const Facts& facts, ForwardResult& result, Counters& counters,
              const std::function<void(Event)>& emit) {
  const Row& row = RowOf(ending);
  Write(row, facts, result);
  for (Counter c : row.counters) {
    if (c) (counters.*c).fetch_add(1, std::memory_order_relaxed);
  }
  for (const EventSpec& spec : row.events) {
    if (!spec.name.empty() && emit) emit(Render(spec, facts, result));
  }
}

std::optional<Ending> EndingFor(const Verdict& v) {
  switch (v.action) {
    case Action::kAcknowledge:
    case Action::kRetryInPlace:
    case Action::kRefreshToken: return std::nullopt;
    case Action::kSplit: return Ending::kSplit;
    case Action::kPoison: return Ending::kPoisoned;
    case Action::kRespool:
      return v.respool_reason == RespoolReason::kRequestRefused ? Ending::kRequestRefused
                                                                : Ending::kClientError;
    case Action::kStop:
      switch (v.stop) {
        case StopCause::kAborted: return Ending::kAborted;
        case StopCause::kTls: return Ending::kTlsError;
        case StopCause::kAuth: return Ending::kAuthFailed;
        case StopCause::kConfig: return Ending::kConfigError;
      }
  }
  return std::nullopt;
}

}  // namespace fwdsink
