// SPDX-License-Identifier: Apache-2.0
// The driver: what each partition outcome does to the spool (delivered, respooled,
// poisoned, torn, past the horizon), and the cursor kept at a poison. @ref LLP 0021
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "driver/driver_impl.h"
#include "driver/long_row.h"
#include "engine/resolve_deps.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"

namespace fwdsink {

// Carries out what the sink's outcome means for the partition and the tick.
void Driver::Impl::Conclude(const ReadyPartition& p, const ForwardResult& r, TickReport& report) {
  switch (r.outcome) {
    case Outcome::kDelivered: return Delivered(p, r, report);
    case Outcome::kPoisoned:  // DeadLetter() could not write it, and said so; the
      return;                 // cursor was kept before (ForwardOne)
    case Outcome::kAborted:
      report.aborted = true;
      stop_tick.store(true);
      return;
    case Outcome::kRespooled:
      report.respooled += 1;
      counters.respools.fetch_add(1, std::memory_order_relaxed);
      if (r.chunks_acked > 0) (void)spool.ClearFailures(p.name);
      // A request the server refuses is not the data's fault: no horizon. @ref LLP 0023
      if (r.respool_reason == RespoolReason::kRequestRefused) return;
      return Failed(p, r.resume_offset, r, report);
    case Outcome::kPartitionError: return Torn(p, r, report);
    case Outcome::kAuthError:
    case Outcome::kTlsError:
    case Outcome::kConfigError:
      // Endpoint-wide: every other partition would fail the same way. Stop the tick.
      // A credential or configuration outage is not the data's fault: no failure is
      // recorded, so the horizon never moves good rows to dead/; the error raises the
      // overload level instead. @ref LLP 0023#backoff-everywhere
      report.errors += 1;
      report.last_error = r.outcome;
      (r.outcome == Outcome::kConfigError ? counters.config_stops : counters.auth_failures)
          .fetch_add(1, std::memory_order_relaxed);
      stop_tick.store(true);
      return;
  }
}

// The poisoned rows go to dead letters, durably, before the sink acks them past and
// the cursor writer moves the cursor: a crash in between re-sends the poison and
// rewrites the same dead-letter name; no row is lost. @ref LLP 0021#poison
bool Driver::Impl::DeadLetter(Sender& sender, const ReadyPartition& p, const PoisonedChunk& c,
                              TickReport& report) {
  sender.cursors->WaitIdle();  // one user of the spool at a time; a save error stays for Flush()
  auto dead = spool.DeadLetterChunk(p.name, c.begin, c.end, c.body, c.status, c.reason,
                                    deps.time->SystemNow());
  if (!dead) {
    // The cursor stays before the poison: nothing is lost.
    SpoolError(p.name, "dead_letter", dead.status().message(), &report);
    return false;
  }
  report.poisoned_chunks += 1;
  counters.poisoned_chunks.fetch_add(1, std::memory_order_relaxed);
  Emit({.name = events::kDriverDeadLetter,
        .partition = p.name,
        .status = c.status,
        .reason = std::string(c.reason),
        .begin = c.begin,
        .end = c.end,
        .message = "poisoned rows moved to " + dead->rows_path.string()});
  return true;
}

void Driver::Impl::Delivered(const ReadyPartition& p, const ForwardResult& r, TickReport& report) {
  if (HandOverChanged(p, r, report)) return;
  if (const Status s = spool.MarkDelivered(p.name); !s.ok()) {
    SpoolError(p.name, "mark_delivered", s.message(), nullptr);
  }
  report.delivered += 1;
  counters.partitions_delivered.fetch_add(1, std::memory_order_relaxed);
}

// A torn or unreadable sealed partition: what could be sent was sent; the tail goes
// to dead letters whole, where an operator can fix and requeue it.
void Driver::Impl::Torn(const ReadyPartition& p, const ForwardResult& r, TickReport& report) {
  const std::uint64_t offset = r.resume_offset;
  if (r.reason == kShrunkReason) {
    // Cut under us while sent: aside, with the sink's true counts. @ref LLP 0023#shrunk
    auto moved = spool.Quarantine({p.name + ".ndjson", "shrunk", r.message});
    counters.handover_changed.fetch_add(1, std::memory_order_relaxed);
    report.quarantined += 1;
    Emit({.name = events::kDriverHandoverChanged,
          .partition = p.name,
          .reason = std::string(kShrunkReason),
          .begin = offset,
          .message = r.message + (moved ? "; moved to " + moved->string()
                                        : "; kept: " + moved.status().message())});
    return;
  }
  auto dead = spool.DeadLetterPartition(p.name, offset, r.reason, 0, deps.time->SystemNow());
  report.torn += 1;
  counters.torn_partitions.fetch_add(1, std::memory_order_relaxed);
  Emit({.name = events::kDriverDeadLetter,
        .partition = p.name,
        .reason = r.reason,
        .begin = offset,
        .message = r.message + (dead ? "" : "; " + dead.status().message())});
}

void Driver::Impl::Failed(const ReadyPartition& p, std::uint64_t resume, const ForwardResult& r,
                          TickReport& report) {
  const auto now = deps.time->SystemNow();
  if (!spool.RecordFailure(p.name, now).ok()) {
    counters.spool_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const CursorState c = spool.LoadCursor(p.name);
  // @ref LLP 0021#horizon
  if (c.first_failure && now - *c.first_failure > options.horizon) {
    (void)GiveUp(p.name, resume, c.ranges, r, report);
  }
}

bool Driver::Impl::GiveUp(const std::string& name, std::uint64_t resume,
                          const std::vector<CursorRange>& journal, const ForwardResult& r,
                          TickReport& report) {
  // Chunks acknowledged past a gap are the server's already: they stay out of dead/, so
  // a requeue never sends them again under other keys. @ref LLP 0014#horizon-gaps
  auto dead =
      spool.DeadLetterUnacked(name, resume, journal, r.reason.empty() ? "horizon" : r.reason,
                              r.status, deps.time->SystemNow());
  if (!dead) {
    SpoolError(name, "dead_letter", dead.status().message(), &report);
    return false;
  }
  report.horizon_dead += 1;
  counters.horizon_give_ups.fetch_add(1, std::memory_order_relaxed);
  Emit({.name = events::kDriverHorizonGiveUp,
        .partition = name,
        .status = r.status,
        .reason = r.reason,
        .begin = resume,
        .message = "failing for longer than the horizon; moved to dead letters whole"});
  return true;
}

// A poison that could not be dead-lettered stops the call at a definite point: every
// row before it acknowledged; after it, only what the journal names (the window's
// chunks, acknowledged or owed). Inside a split chunk the ack route
// held the cursor back (LLP 0023#split-window); here it can move to the poison's start.
// Returns false when the cursor could not be saved (NotDurable() has said so).
bool Driver::Impl::KeepPoisonCursor(const ReadyPartition& p, const ForwardResult& r,
                                    TickReport& report) {
  const CursorState saved = spool.LoadCursor(p.name);
  if (saved.status == CursorStatus::kOk && saved.offset >= r.resume_offset) return true;
  if (r.resume_offset == 0) return true;
  // The journal past the poison stays: with a window, chunks after the split may be
  // acknowledged already (never re-sent) or owed (re-sent under their keys). Without it
  // the next pass cut new chunks from the poison over acknowledged rows, and stored
  // them a second time under other keys. @ref LLP 0014#window-refusal
  std::vector<CursorRange> rest;
  if (saved.status == CursorStatus::kOk) {
    for (const CursorRange& range : saved.ranges) {
      if (range.end <= r.resume_offset) continue;
      // A range across the poison: the saved record is not behind the acks (they are
      // in its journal); it stands as it is.
      if (range.begin < r.resume_offset) return true;
      rest.push_back(range);
    }
  }
  if (Status s = spool.SaveCursor(p.name, r.resume_offset, rest); !s.ok()) {
    NotDurable(p, s.message(), report);
    return false;
  }
  return true;
}

// Acknowledgements that could not be made durable (the cursor could not be saved): the
// partition is re-sent from its last saved cursor, and the pass counts none of them as
// progress, so the overload level rises and the next tick waits; the tick stops (the
// disk is the same for every partition). @ref LLP 0023#durable-progress
void Driver::Impl::NotDurable(const ReadyPartition& p, std::string message, TickReport& report) {
  counters.cursor_save_failures.fetch_add(1, std::memory_order_relaxed);
  SpoolError(p.name, "cursor_save", std::move(message), &report);
  stop_tick.store(true);
}

}  // namespace fwdsink
