// SPDX-License-Identifier: Apache-2.0
// The driver: validation, its senders, ticks, and one partition's sending. @ref LLP 0021
#include "fwdsink/driver.h"

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

Status Validate(const DriverOptions& o) {
  if (o.spool_dir.empty()) return Status::Config("spool_dir", "must name a directory");
  if (Status e = Validate(o.forward); !e.ok()) return e.WithFieldPrefix("forward");
  if (o.horizon <= std::chrono::milliseconds::zero()) {
    return Status::Config("horizon", "must be positive");
  }
  if (Status e = Validate(o.concurrency); !e.ok()) return e.WithFieldPrefix("concurrency");
  if (o.tick_pauses.empty()) return Status::Config("tick_pauses", "needs at least one step");
  for (std::size_t i = 0; i < o.tick_pauses.size(); ++i) {
    if (o.tick_pauses[i] <= std::chrono::milliseconds::zero()) {
      return Status::Config("tick_pauses[" + std::to_string(i) + "]", "must be positive");
    }
  }
  if (o.pack_linger < std::chrono::milliseconds::zero()) {
    return Status::Config("pack_linger", "must not be negative");
  }
  if (o.dead_caps.max_age && *o.dead_caps.max_age <= std::chrono::milliseconds::zero()) {
    return Status::Config("dead_caps.max_age", "must be positive");
  }
  return OkStatus();
}

Result<std::unique_ptr<Driver>> Driver::Create(DriverOptions options, ForwardDeps deps) {
  if (Status e = Validate(options); !e.ok()) return e;
  auto spool = Spool::Open(options.spool_dir);
  if (!spool) return spool.status().WithFieldPrefix("spool_dir");
  auto lock = SpoolLock::Acquire(options.spool_dir);
  if (!lock) return Status(lock.status().code(), lock.status().message(), "spool_dir");
  // Resolved here, before any sink, so that every sender shares one gate, pacer and
  // endpoints. @ref LLP 0019#shared @ref LLP 0014#deps
  Result<ForwardDeps> resolved = ResolveDeps(options.forward, std::move(deps));
  if (!resolved.ok()) return resolved.status().WithFieldPrefix("forward");
  auto impl = std::make_unique<Impl>(std::move(*lock), std::move(options),
                                     std::move(resolved).value(), std::move(*spool));
  if (Status e = impl->MakeSenders(); !e.ok()) return e;
  return std::unique_ptr<Driver>(new Driver(std::move(impl)));
}

// The senders, all made from copies of one ForwardDeps: they share the gate and the
// pacer (shared_ptrs), and tell the limit about each answer through their observer.
// Each has its own part of the slot pool: its sink's sleeper and request slots.
// @ref LLP 0018#senders @ref LLP 0021#cursor-road
Status Driver::Impl::MakeSenders() {
  ForwardDeps sender_deps = deps;
  senders.reserve(options.concurrency.max);
  for (std::size_t i = 0; i < options.concurrency.max; ++i) {
    sender_deps.on_attempt = [this](const AttemptRecord& r) { OnAttempt(r); };
    sender_deps.inflight = inflight;
    // Not while the endpoint in use is held by a Retry-After. @ref LLP 0018#lend
    const auto unheld = [this] {
      const EndpointEntry& e = deps.endpoints->at(deps.endpoints->active());
      return e.gate->Remaining(deps.time->MonotonicNow()).remaining <=
             std::chrono::milliseconds::zero();
    };
    auto slot =
        std::make_shared<SenderSlot>(pool, *deps.sleeper, stop.get_token(), unheld, counters);
    sender_deps.sleeper = slot.get();
    sender_deps.requests = slot;
    auto sink = ForwardSink::Create(options.forward, sender_deps);
    if (!sink.ok()) return sink.status().WithFieldPrefix("forward");
    senders.push_back(Sender{.sink = std::move(*sink),
                             .cursors = std::make_unique<CursorWriter>(spool),
                             .slot = std::move(slot)});
  }
  return OkStatus();
}

Driver::Driver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Driver::~Driver() = default;

TickReport Driver::Tick() { return impl_->Tick(); }
void Driver::Run() { impl_->Run(); }

void Driver::Close() {
  impl_->stop.request_stop();
  for (Sender& sender : impl_->senders) sender.sink->Close();
}

bool Driver::closed() const { return impl_->stop.stop_requested(); }
const DriverCounters& Driver::counters() const { return impl_->counters; }
const ForwardSink& Driver::sink() const { return *impl_->senders.front().sink; }

CountersSnapshot Driver::sink_counters() const {
  CountersSnapshot sum;
  for (const Sender& sender : impl_->senders) {
    const CountersSnapshot s = Snapshot(sender.sink->counters());
#define FWDSINK_INTERNAL_SUM(name, help) sum.name += s.name;
#define FWDSINK_INTERNAL_MAX(name, help) sum.name = std::max(sum.name, s.name);
    FWDSINK_SINK_COUNTERS(FWDSINK_INTERNAL_SUM, FWDSINK_INTERNAL_MAX)
#undef FWDSINK_INTERNAL_SUM
#undef FWDSINK_INTERNAL_MAX
  }
  return sum;
}

std::vector<ForwardSink::State> Driver::sender_states() const {
  std::vector<ForwardSink::State> out;
  for (const Sender& sender : impl_->senders) out.push_back(sender.sink->state());
  return out;
}
const Spool& Driver::spool() const {
  FWDSINK_DCHECK(!impl_->ticking.load());
  return impl_->spool;
}

void Driver::Impl::Emit(Event e) const {
  if (!deps.on_event) return;
  e.label = options.forward.label;
  deps.on_event(e);
}

void Driver::Impl::SpoolError(std::string_view partition, std::string_view reason,
                              std::string message, TickReport* report) {
  counters.spool_errors.fetch_add(1, std::memory_order_relaxed);
  if (report) report->errors += 1;
  Emit({.name = events::kDriverSpoolError,
        .partition = std::string(partition),
        .reason = std::string(reason),
        .message = std::move(message)});
}

void Driver::Impl::Run() {
  while (!stop.stop_requested()) {
    const TickReport r = Tick();
    // Only Close() ends the loop: a tick that says "aborted" without our stop request
    // is a broken connection taken for one, and the next tick goes on. @ref LLP
    // 0014#only-close-aborts
    if (r.aborted && stop.stop_requested()) break;
    // Every failure path backs off, not only 429/503: a cursor that cannot be saved, a
    // spool error, an auth failure. @ref LLP 0023#backoff-everywhere
    overload.Record(r.throttled || r.respooled > 0 || r.errors > 0, r.chunks_acked > 0);
    counters.overload_level.store(overload.level(), std::memory_order_relaxed);
    // A tick that delivered everything and found more work goes again at once; a
    // throttled or idle one pauses per the overload level.
    if (r.partitions > 0 && r.all_delivered()) continue;
    // Respooled partitions of a fleet that failed together resume apart.
    // @ref LLP 0016#jitter
    const auto pause =
        JitterSpread(overload.Pause(), options.forward.backpressure.jitter, deps.random);
    (void)deps.sleeper->SleepFor(pause, stop.get_token());
  }
}

TickReport Driver::Impl::Tick() {
  ticking.store(true);
  struct Done {
    std::atomic<bool>& ticking;
    ~Done() { ticking.store(false); }
  } done{ticking};
  TickReport report;
  counters.ticks.fetch_add(1, std::memory_order_relaxed);
  RepairFolders(report);
  PurgeDeadOverCaps();
  auto scan = spool.ScanReady();
  if (!scan) {
    SpoolError({}, "list_ready", scan.status().message(), &report);
    return report;
  }
  pass_errors = {};
  stop_tick.store(false);  // an endpoint-wide stop of the last tick is not this one's
  QuarantineRefused(scan->refused, report);
  // Manifests left unacknowledged first, then packs, then the rest. @ref LLP 0027#resume
  // A manifest that stays unsettled ends the pass, which is still named when every
  // request of it failed the same way (a resumed pack refused with 404).
  if (ResumePacks(report)) SendAll(SendPacks(scan->ready, report), report);
  if (!report.aborted) ReportPermanentError(report);
  return report;
}

// Names a permanent error once per pass, rather than letting it look like a day of
// ordinary retries. @ref LLP 0017#permanent-errors
void Driver::Impl::ReportPermanentError(TickReport& report) {
  if (report.partitions == 0 || report.chunks_acked > 0) return;
  report.permanent_error = pass_errors.Result();
  if (!report.permanent_error) return;
  const PermanentError& e = *report.permanent_error;
  counters.permanent_errors.fetch_add(1, std::memory_order_relaxed);
  Emit({.name = events::kDriverPermanentError,
        .status = e.status,
        .reason = e.reason,
        .message = "every request of this pass failed with HTTP " + std::to_string(e.status) +
                   " (" + e.reason + "): " + e.message});
}

std::optional<CursorState> Driver::Impl::StartCursor(const ReadyPartition& p, TickReport& report) {
  const CursorState cursor = spool.LoadCursor(p.name);
  if (cursor.status == CursorStatus::kError) {
    SpoolError(p.name, "cursor_unreadable", cursor.message, &report);
    return std::nullopt;
  }
  if (cursor.status == CursorStatus::kChanged) {
    // Another file under the partition's name since its cursor was written: aside, as a
    // pack member rewritten after its manifest is. @ref LLP 0020#file-identity
    auto moved = spool.Quarantine({p.name + ".ndjson", "changed", cursor.message});
    counters.handover_changed.fetch_add(1, std::memory_order_relaxed);
    report.quarantined += 1;
    Emit(
        {.name = events::kDriverHandoverChanged,
         .partition = p.name,
         .reason = "changed_while_stopped",
         .begin = cursor.offset,
         .message = cursor.message + "; neither resumed nor restarted; " +
                    (moved ? "moved to " + moved->string() : "kept: " + moved.status().message())});
    return std::nullopt;
  }
  if (cursor.status == CursorStatus::kCorrupt) {
    // @ref LLP 0020#corrupt-cursor — resume from 0 with the same keys: a
    // deduplicating receiver stores nothing twice.
    counters.cursor_corrupt.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = events::kDriverCursorCorrupt,
          .partition = p.name,
          .reason = "cursor_corrupt",
          .message = cursor.message + "; resuming from offset 0"});
    return CursorState{};
  }
  return cursor;
}

void Driver::Impl::ForwardOne(Sender& sender, const ReadyPartition& p, TickReport& report) {
  report.partitions += 1;
  // A row too long to send goes to dead/ alone, and the rows after it are sent in the
  // same pass. @ref LLP 0023#row-too-long
  while (ForwardFrom(sender, p, report)) {
  }
}

bool Driver::Impl::ForwardFrom(Sender& sender, const ReadyPartition& p, TickReport& report) {
  const std::optional<CursorState> cursor = StartCursor(p, report);
  if (!cursor) return false;
  // The sink writes the cursor itself, on the sender's cursor writer (its CursorLog): the
  // journal durable before new ranges leave, each ack's cursor queued, the final one
  // left to MarkDelivered. Saves run on the writer's thread while the next chunk is in
  // flight; every path below flushes before touching the spool again. The driver keeps
  // the dead letters, and its slot through the sink's deps. @ref LLP 0021#cursor-road
  // @ref LLP 0021#async-cursor
  const auto on_poison = [this, &sender, &p, &report](const PoisonedChunk& c) {
    return DeadLetter(sender, p, c, report);
  };
  const ForwardResult r = sender.sink->ForwardPartition(
      p.name, p.path,
      ForwardStart{
          .begin = cursor->offset, .journal = cursor->ranges, .cursor_log = sender.cursors.get()},
      /*on_ack=*/{}, on_poison);
  if (const Status saved = sender.cursors->Flush(); !saved.ok()) {
    // The sink already stopped (Submit refused the next ack); the partition stays
    // where its last saved cursor says, and is re-sent from there next tick — after
    // the overload pause the error raises. The tick stops: the disk is the same for
    // every partition. @ref LLP 0023#backoff-everywhere
    NotDurable(p, saved.message(), report);
    return false;
  }
  // A poison that could not be dead-lettered, inside a split chunk whose acks held the
  // cursor back: unless the cursor now reaches the poison, none of this pass's acks is
  // durable, and the pass is no progress either. @ref LLP 0023#durable-progress
  if (r.outcome == Outcome::kPoisoned && !KeepPoisonCursor(p, r, report)) return false;
  {
    std::lock_guard guard(report_mu);
    pass_errors.Note(r);
  }
  AddAcked(report, r);
  if (internal::StoppedAtLongRow(r) && LongRowAside(p, r, report)) return true;
  Conclude(p, r, report);
  return false;
}

bool Driver::Impl::LongRowAside(const ReadyPartition& p, const ForwardResult& r,
                                TickReport& report) {
  auto dead = internal::SetLongRowAside(spool, p.name, r, options.forward.chunker.max_line_bytes,
                                        deps.time->SystemNow());
  if (!dead) return false;  // handled as torn, with the whole tail
  report.poisoned_chunks += 1;
  counters.poisoned_chunks.fetch_add(1, std::memory_order_relaxed);
  Emit({.name = events::kDriverDeadLetter,
        .partition = p.name,
        .reason = std::string(internal::kRowTooLong),
        .begin = dead->begin,
        .end = dead->end,
        .message = "a row of " + std::to_string(dead->end - dead->begin) +
                   " bytes is over max_line_bytes; moved alone to " + dead->rows_path.string() +
                   ", the rows after it go on"});
  return true;
}

}  // namespace fwdsink
