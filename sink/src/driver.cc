#include "fwdsink/driver.h"

#include <atomic>
#include <set>

#include "cursor_writer.h"
#include "default_random.h"
#include "fwdsink/check.h"
#include "fwdsink/overload.h"

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

// Everything the driver keeps; the public class is its handle. Tick() and what it
// calls run on the driver thread.
struct Driver::Impl {
  Impl(SpoolLock l, DriverOptions o, ForwardDeps d, Spool s, std::unique_ptr<ForwardSink> f)
      : lock(std::move(l)),
        options(std::move(o)),
        deps(std::move(d)),
        spool(std::move(s)),
        sink(std::move(f)),
        overload(options.tick_pauses) {}

  TickReport Tick();
  void Run();
  // Where partition `p` resumes, or nullopt when its cursor cannot be read.
  std::optional<std::uint64_t> StartOffset(const ReadyPartition& p, TickReport& report);
  void ForwardOne(const ReadyPartition& p, TickReport& report, bool& stop_tick);
  void Conclude(const ReadyPartition& p, const ForwardResult& r, TickReport& report,
                bool& stop_tick);
  void ReportPermanentError(TickReport& report);
  bool DeadLetter(const ReadyPartition& p, const PoisonedChunk& chunk, TickReport& report);
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
  void KeepPoisonCursor(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  // Enforces options.dead_caps. @ref LLP 0025#caps
  void PurgeDeadOverCaps();

  SpoolLock lock;  // first: held for the driver's whole life
  const DriverOptions options;
  ForwardDeps deps;
  Spool spool;  // driver thread, and cursors' worker between a Submit and the next wait
  std::unique_ptr<ForwardSink> sink;
  CursorWriter cursors{spool};  // the one route a cursor moves forward by while forwarding
  OverloadLevel overload;       // driver thread only
  std::stop_source stop;
  DriverCounters counters;
  std::atomic<bool> ticking{false};  // inside Tick(): spool() is off limits
  PermanentErrorWatch pass_errors;   // driver thread only; reset per tick
  std::set<std::string> unmovable;   // refused entries reported already (driver thread)
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
  auto sink = ForwardSink::Create(options.forward, deps);
  if (!sink.ok()) return sink.status().WithFieldPrefix("forward");
  return std::unique_ptr<Driver>(new Driver(std::make_unique<Impl>(
      std::move(*lock), std::move(options), std::move(deps), std::move(*spool), std::move(*sink))));
}

Driver::Driver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Driver::~Driver() = default;

TickReport Driver::Tick() { return impl_->Tick(); }
void Driver::Run() { impl_->Run(); }

void Driver::Close() {
  impl_->stop.request_stop();
  impl_->sink->Close();
}

bool Driver::closed() const { return impl_->stop.stop_requested(); }
const DriverCounters& Driver::counters() const { return impl_->counters; }
const ForwardSink& Driver::sink() const { return *impl_->sink; }
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
  for (const ReadyPartition& p : scan->ready) {
    if (stop.stop_requested()) {
      report.aborted = true;
      break;
    }
    bool stop_tick = false;
    ForwardOne(p, report, stop_tick);
    if (stop_tick) break;
  }
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

void Driver::Impl::ForwardOne(const ReadyPartition& p, TickReport& report, bool& stop_tick) {
  report.partitions += 1;
  const std::optional<std::uint64_t> offset = StartOffset(p, report);
  if (!offset) return;
  // Cursors are saved on the writer's thread while the next chunk is in flight, and
  // only from the ack callback; every path below flushes before touching the spool
  // again. @ref LLP 0021#async-cursor
  const auto on_ack = [this](const AckedChunk& a) {
    // The final chunk's cursor would be deleted by MarkDelivered a moment later; a crash
    // in between re-sends that one chunk under the same key. @ref LLP 0021#async-cursor
    if (a.final) return true;
    // Inside a split chunk the cursor waits for the chunk's end: a restart then re-sends
    // the whole chunk, which the server refuses and the sink splits again at the same
    // lines, under the same keys. @ref LLP 0023#split-window
    if (a.inside_split) return true;
    return cursors.Submit(std::string(a.partition), a.end);
  };
  const auto on_poison = [this, &p, &report](const PoisonedChunk& c) {
    return DeadLetter(p, c, report);
  };
  const ForwardResult r = sink->ForwardPartition(p.name, p.path, *offset, on_ack, on_poison);
  if (const Status saved = cursors.Flush(); !saved.ok()) {
    // The sink already stopped (Submit refused the next ack); the partition stays
    // where its last saved cursor says, and is re-sent from there next tick — after
    // the overload pause the error raises. The tick stops: the disk is the same for
    // every partition. @ref LLP 0023#backoff-everywhere
    counters.cursor_save_failures.fetch_add(1, std::memory_order_relaxed);
    SpoolError(p.name, "cursor_save", saved.message(), &report);
    stop_tick = true;
    return;
  }
  pass_errors.Note(r);
  report.chunks_acked += r.chunks_acked;
  report.rows_acked += r.rows_acked;
  report.bytes_acked += r.bytes_acked;
  report.throttled = report.throttled || r.throttled;
  Conclude(p, r, report, stop_tick);
}

// Carries out what the sink's outcome means for the partition and the tick.
void Driver::Impl::Conclude(const ReadyPartition& p, const ForwardResult& r, TickReport& report,
                            bool& stop_tick) {
  switch (r.outcome) {
    case Outcome::kDelivered: return Delivered(p, r, report);
    case Outcome::kPoisoned:  // DeadLetter() could not write it, and said so
      return KeepPoisonCursor(p, r, report);
    case Outcome::kAborted:
      report.aborted = true;
      stop_tick = true;
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
      counters.auth_failures.fetch_add(1, std::memory_order_relaxed);
      stop_tick = true;
      return;
  }
}

// The poisoned rows go to dead letters, durably, before the sink acks them past and
// the cursor writer moves the cursor: a crash in between re-sends the poison and
// rewrites the same dead-letter name; no row is lost. @ref LLP 0021#poison
bool Driver::Impl::DeadLetter(const ReadyPartition& p, const PoisonedChunk& c, TickReport& report) {
  cursors.WaitIdle();  // one user of the spool at a time; a save error stays for Flush()
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
void Driver::Impl::KeepPoisonCursor(const ReadyPartition& p, const ForwardResult& r,
                                    TickReport& report) {
  const CursorState saved = spool.LoadCursor(p.name);
  if (saved.status == CursorStatus::kOk && saved.offset >= r.resume_offset) return;
  if (r.resume_offset == 0) return;
  if (Status s = spool.SaveCursor(p.name, r.resume_offset); !s.ok()) {
    SpoolError(p.name, "cursor_save", s.message(), &report);
  }
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
