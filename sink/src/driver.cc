#include "fwdsink/driver.h"

#include <fcntl.h>
#include <unistd.h>

namespace fwdsink {
namespace {

// Reads [begin, end) of `path` (a poisoned chunk: small, bounded by max_line_bytes).
bool ReadRange(const std::filesystem::path& path, std::uint64_t begin, std::uint64_t end,
               std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.resize(end - begin);
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got,
                              static_cast<off_t>(begin + got));
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return got == out.size();
}

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
  return OkStatus();
}

Result<std::unique_ptr<Driver>> Driver::Create(DriverOptions options, ForwardDeps deps) {
  if (Status e = Validate(options); !e.ok()) return e;
  auto spool = Spool::Open(options.spool_dir);
  if (!spool) return spool.status().WithFieldPrefix("spool_dir");
  if (!deps.time) deps.time = &RealTimeSource();
  if (!deps.sleeper) deps.sleeper = &RealSleeper();
  if (!deps.gate) deps.gate = std::make_shared<EndpointGate>();
  auto sink = ForwardSink::Create(options.forward, deps);
  if (!sink.ok()) return sink.status().WithFieldPrefix("forward");
  return std::unique_ptr<Driver>(new Driver(std::move(options), std::move(deps),
                                            std::move(*spool), std::move(*sink)));
}

Driver::Driver(DriverOptions options, ForwardDeps deps, Spool spool,
               std::unique_ptr<ForwardSink> sink)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      spool_(std::move(spool)),
      sink_(std::move(sink)),
      cursors_(std::make_unique<CursorWriter>(spool_)),
      overload_(options_.tick_pauses) {}

Driver::~Driver() = default;

void Driver::Emit(Event e) const {
  if (!deps_.on_event) return;
  e.label = options_.forward.label;
  deps_.on_event(e);
}

void Driver::Close() {
  stop_.request_stop();
  sink_->Close();
}

void Driver::Run() {
  while (!stop_.stop_requested()) {
    const TickReport r = Tick();
    if (r.aborted) break;
    overload_.Record(r.throttled || r.respooled > 0, r.chunks_acked > 0);
    counters_.overload_level.store(overload_.level(), std::memory_order_relaxed);
    // A tick that delivered everything and found more work goes again at once; a
    // throttled or idle one pauses per the overload level.
    if (r.partitions > 0 && r.all_delivered()) continue;
    (void)deps_.sleeper->SleepFor(overload_.Pause(), stop_.get_token());
  }
}

TickReport Driver::Tick() {
  TickReport report;
  counters_.ticks.fetch_add(1, std::memory_order_relaxed);
  auto ready = spool_.ListReady();
  if (!ready) {
    counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
    report.errors += 1;
    Emit({.name = "driver.spool_error", .reason = "list_ready",
          .message = ready.status().message()});
    return report;
  }
  for (const ReadyPartition& p : *ready) {
    if (stop_.stop_requested()) {
      report.aborted = true;
      break;
    }
    bool stop_tick = false;
    ForwardOne(p, report, stop_tick);
    if (stop_tick) break;
  }
  return report;
}

void Driver::ForwardOne(const ReadyPartition& p, TickReport& report, bool& stop_tick) {
  report.partitions += 1;
  const CursorState cursor = spool_.LoadCursor(p.name);
  if (cursor.status == CursorStatus::kError) {
    counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
    report.errors += 1;
    Emit({.name = "driver.spool_error", .partition = p.name, .reason = "cursor_unreadable",
          .message = cursor.message});
    return;
  }
  std::uint64_t offset = cursor.offset;
  if (cursor.status == CursorStatus::kCorrupt) {
    // @ref LLP 0020#corrupt-cursor — resume from 0 with the same keys: a
    // deduplicating receiver stores nothing twice.
    counters_.cursor_corrupt.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = "driver.cursor_corrupt", .partition = p.name, .reason = "cursor_corrupt",
          .message = cursor.message + "; resuming from offset 0"});
    offset = 0;
  }

  // Cursors are saved on the writer thread while the next chunk is in flight; every
  // path below flushes before touching the spool again. @ref LLP 0021#async-cursor
  const auto on_ack = [this](const AckedChunk& a) {
    // The final chunk's cursor would be deleted by MarkDelivered a moment later; a crash
    // in between re-sends that one chunk under the same key. @ref LLP 0021#async-cursor
    if (a.final) return true;
    return cursors_->Submit(std::string(a.partition), a.end);
  };

  bool progressed = false;
  for (;;) {
    const ForwardResult r = sink_->ForwardPartition(p.name, p.path, offset, on_ack);
    if (const Status saved = cursors_->Flush(); !saved.ok()) {
      // The sink already stopped (Submit refused the next ack); the partition stays
      // where its last saved cursor says, and is re-sent from there next tick.
      counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
      report.errors += 1;
      Emit({.name = "driver.spool_error", .partition = p.name, .reason = "cursor_save",
            .message = saved.message()});
      return;
    }
    report.chunks_acked += r.chunks_acked;
    report.rows_acked += r.rows_acked;
    report.bytes_acked += r.bytes_acked;
    report.throttled = report.throttled || r.throttled;
    if (r.chunks_acked > 0) progressed = true;
    offset = r.resume_offset;

    switch (r.outcome) {
      case Outcome::kDelivered: {
        const Status s = spool_.MarkDelivered(p.name);
        if (!s.ok()) {
          counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
          Emit({.name = "driver.spool_error", .partition = p.name, .reason = "mark_delivered",
                .message = s.message()});
        }
        report.delivered += 1;
        counters_.partitions_delivered.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      case Outcome::kPoisoned: {
        // @ref LLP 0021#poison — the poisoned rows go to dead letters; the rest goes on.
        std::string body;
        if (!ReadRange(p.path, r.poison_begin, r.poison_end, body)) {
          report.errors += 1;
          counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
          Emit({.name = "driver.spool_error", .partition = p.name, .reason = "read_poison",
                .begin = r.poison_begin, .end = r.poison_end,
                .message = "could not read the poisoned rows back; partition kept"});
          return;
        }
        auto dead = spool_.DeadLetterChunk(p.name, r.poison_begin, r.poison_end, body,
                                           r.status, r.reason, deps_.time->SystemNow());
        if (!dead) {
          report.errors += 1;
          counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
          Emit({.name = "driver.spool_error", .partition = p.name, .reason = "dead_letter",
                .message = dead.status().message()});
          return;  // cursor stays before the poison: nothing is lost
        }
        if (!spool_.SaveCursor(p.name, r.poison_end).ok()) {
          report.errors += 1;
          return;  // re-sent next tick; the dead letter is then written again (same name)
        }
        report.poisoned_chunks += 1;
        counters_.poisoned_chunks.fetch_add(1, std::memory_order_relaxed);
        Emit({.name = "driver.dead_letter", .partition = p.name, .status = r.status,
              .reason = r.reason, .begin = r.poison_begin, .end = r.poison_end,
              .message = "poisoned rows moved to " + dead->rows_path.string()});
        offset = r.poison_end;
        continue;
      }
      case Outcome::kAborted:
        report.aborted = true;
        stop_tick = true;
        return;
      case Outcome::kRespooled:
        report.respooled += 1;
        counters_.respools.fetch_add(1, std::memory_order_relaxed);
        if (progressed) (void)spool_.ClearFailures(p.name);
        Failed(p, offset, r, report);
        return;
      case Outcome::kPartitionError: {
        // A torn or unreadable sealed partition: what could be sent was sent; the
        // tail goes to dead letters whole, where an operator can fix and requeue it.
        auto dead = spool_.DeadLetterPartition(p.name, offset, r.reason, 0,
                                               deps_.time->SystemNow());
        report.torn += 1;
        counters_.torn_partitions.fetch_add(1, std::memory_order_relaxed);
        Emit({.name = "driver.dead_letter", .partition = p.name, .reason = r.reason,
              .begin = offset, .message = r.message + (dead ? "" : "; " + dead.status().message())});
        return;
      }
      case Outcome::kAuthError:
      case Outcome::kTlsError:
        // Endpoint-wide: every other partition would fail the same way. Stop the tick.
        report.errors += 1;
        report.last_error = r.outcome;
        Failed(p, offset, r, report);
        stop_tick = true;
        return;
    }
  }
}

void Driver::Failed(const ReadyPartition& p, std::uint64_t resume, const ForwardResult& r,
                    TickReport& report) {
  const auto now = deps_.time->SystemNow();
  if (!spool_.RecordFailure(p.name, now).ok()) {
    counters_.spool_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const CursorState c = spool_.LoadCursor(p.name);
  // @ref LLP 0021#horizon
  if (c.first_failure && now - *c.first_failure > options_.horizon) {
    auto dead = spool_.DeadLetterPartition(p.name, resume, r.reason.empty() ? "horizon" : r.reason,
                                           r.status, now);
    if (dead) {
      report.horizon_dead += 1;
      counters_.horizon_give_ups.fetch_add(1, std::memory_order_relaxed);
      Emit({.name = "driver.horizon_give_up", .partition = p.name, .status = r.status,
            .reason = r.reason, .begin = resume,
            .message = "failing for longer than the horizon; moved to dead letters whole"});
    }
  }
}

}  // namespace fwdsink
