// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/driver.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "cursor_writer.h"
#include "default_random.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/overload.h"
#include "long_row.h"
#include "sender_slots.h"

namespace fwdsink {
namespace {

// Watches one pass for "every request failed the same permanent way": a 4xx we cannot
// act on (404, 405, 415...), a 5xx not retried, or a configuration code, with the same
// status and reason for every partition tried, and nothing acknowledged.
// @ref LLP 0017#permanent-errors
class PermanentErrorWatch {
 public:
  void Note(const ForwardResult& r) {
    if (r.outcome == Outcome::kAborted) return;
    const bool permanent =
        r.chunks_acked == 0 &&
        (r.outcome == Outcome::kConfigError || (r.outcome == Outcome::kRespooled &&
                                                (r.respool_reason == RespoolReason::kClientError ||
                                                 r.respool_reason == RespoolReason::kServerError) &&
                                                r.status != 0));
    if (!permanent) {
      broken_ = true;
      return;
    }
    if (!first_) {
      first_ = PermanentError{.status = r.status,
                              .reason = r.reason,
                              .message = r.server_message.empty() ? r.message : r.server_message,
                              .outcome = r.outcome};
    } else if (first_->status != r.status || first_->reason != r.reason) {
      broken_ = true;
    }
  }
  std::optional<PermanentError> Result() const { return broken_ ? std::nullopt : first_; }

 private:
  std::optional<PermanentError> first_;
  bool broken_ = false;
};

}  // namespace

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
  if (o.dead_caps.max_age && *o.dead_caps.max_age <= std::chrono::milliseconds::zero()) {
    return Status::Config("dead_caps.max_age", "must be positive");
  }
  return OkStatus();
}

// One sender: a ForwardSink and the cursor writer of the partition it holds (a
// CursorWriter has one slot, so each sender has its own; they write different
// partitions' cursors, and the Spool holds nothing but its path). @ref LLP 0018#cursors
struct Lane {
  std::unique_ptr<ForwardSink> sink;
  std::unique_ptr<CursorWriter> cursors;
  // Sender thread only: where the current round trip began, and the sink's refusal
  // and wait counters then (a sample that waited is no latency sample).
  MonotonicTime mark{};
  std::uint64_t pushed_back_at_mark = 0;
  // The slot it holds, and the sleeper of its sink: a long wait lends the slot.
  // @ref LLP 0018#lend
  std::unique_ptr<LaneSlot> slot;
};

// Everything the driver keeps; the public class is its handle. Tick() and what it
// calls run on the driver thread, and a partition's work (ForwardOne and below) on the
// sender thread that holds it.
struct Driver::Impl {
  Impl(SpoolLock l, DriverOptions o, ForwardDeps d, Spool s)
      : lock(std::move(l)),
        options(std::move(o)),
        deps(std::move(d)),
        spool(std::move(s)),
        overload(options.tick_pauses),
        limit(options.concurrency),
        slots([this] { return limit.limit(); }) {
    counters.concurrency_limit.store(limit.limit(), std::memory_order_relaxed);
  }

  Status MakeLanes();
  TickReport Tick();
  void Run();
  // Sends the ready partitions, oldest first, on up to limit senders at once.
  void SendAll(const std::vector<ReadyPartition>& ready, TickReport& report);
  void LaneLoop(Lane& lane, const std::vector<ReadyPartition>& ready, TickReport& report);
  // After each acknowledged chunk: the round trip it took, for the limit.
  void Sample(Lane& lane, const AckedChunk& a);
  // Between two chunks: gives the slot up and waits for it while over the limit.
  void YieldSlot(Lane& lane);
  void Observe(std::chrono::microseconds rtt, RequestSignal signal);
  void OnSenderEvent(const Event& e);
  void LimitMoved(const LimitChange& c);
  // Where partition `p` resumes, or nullopt when its cursor cannot be read.
  std::optional<std::uint64_t> StartOffset(const ReadyPartition& p, TickReport& report);
  void ForwardOne(Lane& lane, const ReadyPartition& p, TickReport& report);
  // Sends `p` from its cursor once; true when it stopped at a row set aside and goes on.
  bool ForwardFrom(Lane& lane, const ReadyPartition& p, TickReport& report);
  bool LongRowAside(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  void Conclude(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  void ReportPermanentError(TickReport& report);
  bool DeadLetter(Lane& lane, const ReadyPartition& p, const PoisonedChunk& chunk,
                  TickReport& report);
  void Delivered(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  void Torn(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  // Records a failure and gives the partition up whole past the horizon.
  void Failed(const ReadyPartition& p, std::uint64_t resume, const ForwardResult& r,
              TickReport& report);
  void SpoolError(std::string_view partition, std::string_view reason, std::string message,
                  TickReport* report);
  void Emit(Event e) const;
  // Hardening (@ref LLP 0023): folders back, refused entries aside, changed files kept.
  void RepairFolders(TickReport& report);
  void QuarantineRefused(const std::vector<RefusedEntry>& refused, TickReport& report);
  bool HandOverChanged(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  [[nodiscard]] bool KeepPoisonCursor(const ReadyPartition& p, const ForwardResult& r,
                                      TickReport& report);
  void NotDurable(const ReadyPartition& p, std::string message, TickReport& report);
  // Enforces options.dead_caps. @ref LLP 0025#caps
  void PurgeDeadOverCaps();

  SpoolLock lock;  // first: held for the driver's whole life
  const DriverOptions options;
  ForwardDeps deps;
  // The driver thread between ticks; during SendAll, each sender for its own partition
  // (and its cursor writer's worker), the driver thread not at all.
  Spool spool;
  std::vector<Lane> lanes;  // fixed after MakeLanes(); lanes[0] is sink()
  OverloadLevel overload;   // driver thread only
  AdaptiveLimit limit;      // thread-safe; shared by the senders
  SenderSlots slots;        // thread-safe
  std::stop_source stop;
  DriverCounters counters;
  std::atomic<bool> ticking{false};    // inside Tick(): spool() is off limits
  std::atomic<bool> stop_tick{false};  // a sender saw an endpoint-wide stop
  std::atomic<std::size_t> next{0};    // the next ready partition to hand out
  std::mutex report_mu;
  PermanentErrorWatch pass_errors;  // guarded by report_mu; reset per tick
  std::set<std::string> unmovable;  // refused entries reported already (driver thread)
};

Result<std::unique_ptr<Driver>> Driver::Create(DriverOptions options, ForwardDeps deps) {
  if (Status e = Validate(options); !e.ok()) return e;
  auto spool = Spool::Open(options.spool_dir);
  if (!spool) return spool.status().WithFieldPrefix("spool_dir");
  auto lock = SpoolLock::Acquire(options.spool_dir);
  if (!lock) return Status(lock.status().code(), lock.status().message(), "spool_dir");
  if (!deps.time) deps.time = &RealTimeSource();
  if (!deps.sleeper) deps.sleeper = &RealSleeper();
  if (!deps.gate) deps.gate = std::make_shared<EndpointGate>();
  if (!deps.random) deps.random = MakeDefaultRandom();
  // One pacer for every sender (a sink makes a private one only when given none).
  if (!deps.pacer) {
    PacingPolicy pacing = options.forward.pacing;
    pacing.max_wait = options.forward.backpressure.max_wait;
    deps.pacer = std::make_shared<EndpointPacer>(pacing);
  }
  // Made here, before any sink, so that every sender shares it. @ref LLP 0019#shared
  if (!deps.endpoints) deps.endpoints = Endpoints::Make(options.forward, deps);
  auto impl = std::make_unique<Impl>(std::move(*lock), std::move(options), std::move(deps),
                                     std::move(*spool));
  if (Status e = impl->MakeLanes(); !e.ok()) return e;
  return std::unique_ptr<Driver>(new Driver(std::move(impl)));
}

// The senders, all made from copies of one ForwardDeps: they share the gate and the
// pacer (shared_ptrs), and tell the limit about refusals through their events.
// @ref LLP 0018#senders
Status Driver::Impl::MakeLanes() {
  ForwardDeps sender_deps = deps;
  sender_deps.on_event = [this](const Event& e) { OnSenderEvent(e); };
  for (std::size_t i = 0; i < options.concurrency.max; ++i) {
    // Not while the endpoint in use is held by a Retry-After. @ref LLP 0018#lend
    const auto unheld = [this] {
      const EndpointEntry& e = deps.endpoints->at(deps.endpoints->active());
      return e.gate->Remaining(deps.time->MonotonicNow()).remaining <=
             std::chrono::milliseconds::zero();
    };
    auto slot = std::make_unique<LaneSlot>(slots, *deps.sleeper, stop.get_token(), unheld);
    sender_deps.sleeper = slot.get();
    auto sink = ForwardSink::Create(options.forward, sender_deps);
    if (!sink.ok()) return sink.status().WithFieldPrefix("forward");
    lanes.push_back(Lane{.sink = std::move(*sink),
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
  for (Lane& lane : impl_->lanes) lane.sink->Close();
}

bool Driver::closed() const { return impl_->stop.stop_requested(); }
const DriverCounters& Driver::counters() const { return impl_->counters; }
const ForwardSink& Driver::sink() const { return *impl_->lanes.front().sink; }

CountersSnapshot Driver::sink_counters() const {
  CountersSnapshot sum;
  for (const Lane& lane : impl_->lanes) {
    const CountersSnapshot s = Snapshot(lane.sink->counters());
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
  for (const Lane& lane : impl_->lanes) out.push_back(lane.sink->state());
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
    if (r.aborted) break;
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
  QuarantineRefused(scan->refused, report);
  SendAll(scan->ready, report);
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

std::optional<std::uint64_t> Driver::Impl::StartOffset(const ReadyPartition& p,
                                                       TickReport& report) {
  const CursorState cursor = spool.LoadCursor(p.name);
  if (cursor.status == CursorStatus::kError) {
    SpoolError(p.name, "cursor_unreadable", cursor.message, &report);
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
    return 0;
  }
  return cursor.offset;
}

void Driver::Impl::ForwardOne(Lane& lane, const ReadyPartition& p, TickReport& report) {
  report.partitions += 1;
  // A row too long to send goes to dead/ alone, and the rows after it are sent in the
  // same pass. @ref LLP 0023#row-too-long
  while (ForwardFrom(lane, p, report)) {
  }
}

bool Driver::Impl::ForwardFrom(Lane& lane, const ReadyPartition& p, TickReport& report) {
  const std::optional<std::uint64_t> offset = StartOffset(p, report);
  if (!offset) return false;
  // Cursors are saved on the writer's thread while the next chunk is in flight, and
  // only from the ack callback; every path below flushes before touching the spool
  // again. @ref LLP 0021#async-cursor
  const auto on_ack = [this, &lane](const AckedChunk& a) {
    Sample(lane, a);
    // The final chunk's cursor would be deleted by MarkDelivered a moment later; a crash
    // in between re-sends that one chunk under the same key. @ref LLP 0021#async-cursor
    if (a.final) return true;
    // Inside a split chunk the cursor waits for the chunk's end: a restart then re-sends
    // the whole chunk, which the server refuses and the sink splits again at the same
    // lines, under the same keys. @ref LLP 0023#split-window
    if (!a.inside_split && !lane.cursors->Submit(std::string(a.partition), a.end)) return false;
    YieldSlot(lane);
    return true;  // a stop that cut the yield short aborts the sink's next request
  };
  const auto on_poison = [this, &lane, &p, &report](const PoisonedChunk& c) {
    return DeadLetter(lane, p, c, report);
  };
  const ForwardResult r = lane.sink->ForwardPartition(p.name, p.path, *offset, on_ack, on_poison);
  if (const Status saved = lane.cursors->Flush(); !saved.ok()) {
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
  report.chunks_acked += r.chunks_acked;
  report.rows_acked += r.rows_acked;
  report.bytes_acked += r.bytes_acked;
  report.throttled = report.throttled || r.throttled;
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
bool Driver::Impl::DeadLetter(Lane& lane, const ReadyPartition& p, const PoisonedChunk& c,
                              TickReport& report) {
  lane.cursors->WaitIdle();  // one user of the spool at a time; a save error stays for Flush()
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
    auto dead = spool.DeadLetterPartition(p.name, resume, r.reason.empty() ? "horizon" : r.reason,
                                          r.status, now);
    if (dead) {
      report.horizon_dead += 1;
      counters.horizon_give_ups.fetch_add(1, std::memory_order_relaxed);
      Emit({.name = events::kDriverHorizonGiveUp,
            .partition = p.name,
            .status = r.status,
            .reason = r.reason,
            .begin = resume,
            .message = "failing for longer than the horizon; moved to dead letters whole"});
    }
  }
}

}  // namespace fwdsink

namespace fwdsink {

void Driver::Impl::RepairFolders(TickReport& report) {
  auto made = spool.EnsureFolders();
  if (!made) return SpoolError({}, "repair", made.status().message(), &report);
  for (const auto& folder : *made) {
    counters.spool_repairs.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = events::kDriverSpoolRepaired,
          .reason = "folder_missing",
          .message = "spool folder " + folder.string() + " had vanished; recreated"});
  }
}

// Symlinks, hard links, FIFOs, devices and bad names are never sent: each is moved
// to quarantine/ and reported once. @ref LLP 0023#spool
void Driver::Impl::QuarantineRefused(const std::vector<RefusedEntry>& refused, TickReport& report) {
  for (const RefusedEntry& e : refused) {
    // The name is not ours to trust: shown through the JSON writer (invalid UTF-8
    // replaced), never used as a partition name.
    auto moved = spool.Quarantine(e);
    if (!moved) {
      report.errors += 1;  // it is still there: the pass is not clean
      if (!unmovable.insert(e.file).second) continue;
      SpoolError({}, "quarantine",
                 "ready/" + e.file + ": " + e.detail + "; " + moved.status().message(), nullptr);
      continue;
    }
    report.quarantined += 1;
    counters.quarantined.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = events::kDriverQuarantine,
          .reason = e.reason,
          .message = "ready/" + e.file + ": " + e.detail + "; moved to " + moved->string()});
  }
}

// Before a delivered partition is removed: is it still the file that was sent? A file
// that grew keeps its new rows (the cursor goes to what was sent, the next tick sends
// the rest); one rewritten in place goes to quarantine/. Never unlinks unsent rows.
// @ref LLP 0023#handover
bool Driver::Impl::HandOverChanged(const ReadyPartition& p, const ForwardResult& r,
                                   TickReport& report) {
  auto now = spool.PartitionState(p.name);
  if (!now) return false;  // gone or unreadable: MarkDelivered reports it
  if (now->size == r.file_size && now->mtime_ns == r.file_mtime_ns) return false;
  counters.handover_changed.fetch_add(1, std::memory_order_relaxed);
  const bool grew = now->size > r.file_size;
  std::string message = "partition changed after hand-over (" + std::to_string(r.file_size) +
                        " bytes sent, " + std::to_string(now->size) + " now)";
  if (grew) {
    if (Status s = spool.SaveCursor(p.name, r.resume_offset); !s.ok()) {
      SpoolError(p.name, "cursor_save", s.message(), &report);
      return true;
    }
    message += "; kept, the rest is sent next";
    report.respooled += 1;
  } else {
    auto moved = spool.Quarantine({p.name + ".ndjson", "changed", message});
    message += moved ? "; moved to " + moved->string() : "; kept: " + moved.status().message();
    report.quarantined += 1;
  }
  Emit({.name = events::kDriverHandoverChanged,
        .partition = p.name,
        .reason = grew ? "grew" : "changed",
        .begin = r.file_size,
        .end = now->size,
        .message = std::move(message)});
  return true;
}

// A poison that could not be dead-lettered stops the call at a definite point: every
// row before it acknowledged, nothing after it sent. Inside a split chunk the ack route
// held the cursor back (LLP 0023#split-window); here it can move to the poison's start.
// Returns false when the cursor could not be saved (NotDurable() has said so).
bool Driver::Impl::KeepPoisonCursor(const ReadyPartition& p, const ForwardResult& r,
                                    TickReport& report) {
  const CursorState saved = spool.LoadCursor(p.name);
  if (saved.status == CursorStatus::kOk && saved.offset >= r.resume_offset) return true;
  if (r.resume_offset == 0) return true;
  if (Status s = spool.SaveCursor(p.name, r.resume_offset); !s.ok()) {
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

void Driver::Impl::PurgeDeadOverCaps() {
  if (!options.dead_caps.any()) return;
  auto purged = EnforceDeadCaps(spool, options.dead_caps, deps.time->SystemNow());
  if (!purged) return SpoolError({}, "dead_purge", purged.status().message(), nullptr);
  for (const PurgedDeadLetter& p : *purged) {
    counters.dead_purged.fetch_add(1, std::memory_order_relaxed);
    counters.dead_purged_bytes.fetch_add(p.bytes, std::memory_order_relaxed);
    const auto age =
        std::chrono::duration_cast<std::chrono::seconds>(deps.time->SystemNow() - p.entry.dead_at);
    Emit({.name = events::kDriverDeadPurged,
          .partition = p.entry.partition,
          .reason = std::string(p.cap),
          .begin = p.entry.begin,
          .end = p.entry.end,
          .message = "deleted dead letter " + p.entry.name + " (" + std::to_string(p.bytes) +
                     " bytes, dead " + std::to_string(age.count()) + " s ago) under " +
                     std::string(p.cap)});
  }
}

}  // namespace fwdsink

// ---- Several partitions in flight. @ref LLP 0018

namespace fwdsink {
namespace {

// Everything a sink counts that means a round trip included a wait or a refusal.
std::uint64_t PushedBack(const ForwardSink& sink) {
  const Counters& c = sink.counters();
  const auto get = [](const std::atomic<std::uint64_t>& v) {
    return v.load(std::memory_order_relaxed);
  };
  return get(c.waits) + get(c.gate_waits) + get(c.pacer_waits) + get(c.transport_errors) +
         get(c.status_429) + get(c.status_503) + get(c.other_5xx) + get(c.retried_4xx);
}

void Merge(TickReport& into, const TickReport& r) {
  into.partitions += r.partitions;
  into.delivered += r.delivered;
  into.respooled += r.respooled;
  into.poisoned_chunks += r.poisoned_chunks;
  into.horizon_dead += r.horizon_dead;
  into.torn += r.torn;
  into.errors += r.errors;
  into.quarantined += r.quarantined;
  into.chunks_acked += r.chunks_acked;
  into.rows_acked += r.rows_acked;
  into.bytes_acked += r.bytes_acked;
  into.throttled = into.throttled || r.throttled;
  into.aborted = into.aborted || r.aborted;
  if (r.last_error != Outcome::kDelivered) into.last_error = r.last_error;
}

}  // namespace

// Hands the ready partitions out oldest first to up to `limit` senders. The driver
// thread is the first sender; the others are threads of this tick, joined before it
// returns, so nothing runs between ticks. @ref LLP 0018#senders
void Driver::Impl::SendAll(const std::vector<ReadyPartition>& ready, TickReport& report) {
  next.store(0);
  stop_tick.store(false);
  const std::size_t n = std::min(lanes.size(), ready.size());
  if (n == 0) return;
  {
    std::vector<std::jthread> senders;
    for (std::size_t i = 1; i < n; ++i) {
      senders.emplace_back([this, i, &ready, &report] { LaneLoop(lanes[i], ready, report); });
    }
    LaneLoop(lanes[0], ready, report);
  }  // joined here
  counters.senders_busy.store(0, std::memory_order_relaxed);
}

void Driver::Impl::LaneLoop(Lane& lane, const std::vector<ReadyPartition>& ready,
                            TickReport& report) {
  TickReport mine;
  while (!stop_tick.load()) {
    if (stop.stop_requested() || !lane.slot->Acquire(stop.get_token())) {
      mine.aborted = true;
      break;
    }
    const std::size_t i = next.fetch_add(1);
    if (i < ready.size() && !stop_tick.load()) {
      counters.senders_busy.store(slots.busy(), std::memory_order_relaxed);
      lane.mark = deps.time->MonotonicNow();
      lane.pushed_back_at_mark = PushedBack(*lane.sink);
      ForwardOne(lane, ready[i], mine);
    }
    lane.slot->Release();
    if (i >= ready.size()) break;
  }
  std::lock_guard guard(report_mu);
  Merge(report, mine);
}

void Driver::Impl::Sample(Lane& lane, const AckedChunk& a) {
  const MonotonicTime now = deps.time->MonotonicNow();
  const std::uint64_t pushed = PushedBack(*lane.sink);
  if (!a.dead_lettered) {
    // A round trip that waited (pacer, gate, ladder, Retry-After) measures the wait, not
    // the path: it is no latency sample, and the limit does not grow on it.
    const auto rtt = std::chrono::duration_cast<std::chrono::microseconds>(now - lane.mark);
    Observe(rtt,
            pushed != lane.pushed_back_at_mark ? RequestSignal::kPaced : RequestSignal::kAccepted);
  }
  lane.mark = now;
  lane.pushed_back_at_mark = pushed;
}

void Driver::Impl::YieldSlot(Lane& lane) {
  if (!lane.slot->held()) return;
  if (!lane.slot->Yield(stop.get_token())) return;  // stopped: the sink aborts next
  lane.mark = deps.time->MonotonicNow();            // the wait for a slot is no round trip
  counters.senders_busy.store(slots.busy(), std::memory_order_relaxed);
}

void Driver::Impl::Observe(std::chrono::microseconds rtt, RequestSignal signal) {
  const auto change = limit.Observe(deps.time->MonotonicNow(), rtt, signal, slots.busy());
  if (change) LimitMoved(*change);
}

// Refusals reach the limit as they happen, through the senders' events, not only when
// their chunk is finally acknowledged. @ref LLP 0018#signals
void Driver::Impl::OnSenderEvent(const Event& e) {
  if (e.name == events::kForwardBackpressure) {
    const bool refused = e.status == 429 || e.status == 503;
    Observe(std::chrono::microseconds{0},
            refused ? RequestSignal::kBackpressure : RequestSignal::kError);
  }
  if (deps.on_event) deps.on_event(e);
}

void Driver::Impl::LimitMoved(const LimitChange& c) {
  counters.concurrency_limit.store(c.to, std::memory_order_relaxed);
  if (c.to > c.from) {
    counters.concurrency_increases.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters.concurrency_decreases.fetch_add(1, std::memory_order_relaxed);
  }
  slots.LimitChanged();
  // Every fall is said; a rise only when it reaches the ceiling (the ramp is counted).
  if (c.to < c.from || c.to == options.concurrency.max) {
    Emit({.name = events::kDriverConcurrency,
          .reason = std::string(c.why),
          .begin = c.from,
          .end = c.to,
          .message = "concurrency " + std::to_string(c.from) + " -> " + std::to_string(c.to) +
                     " (" + std::string(c.why) + ")"});
  }
}

}  // namespace fwdsink
