// SPDX-License-Identifier: Apache-2.0
// The sink's call, its loop: it reads chunks (or takes a pack's one body), gives each its
// Request and an Attempt, keeps up to a window of them in flight, runs their steps (the
// one place that sleeps; the connections post), and concludes each. @ref LLP 0014#core
// @ref LLP 0014#window
#include "engine/call.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stop_token>
#include <utility>

#include "base/counter_add.h"
#include "engine/attempt.h"
#include "engine/auth.h"
#include "engine/call.h"
#include "engine/chunk_source.h"
#include "engine/conclusion.h"
#include "engine/cursor_window.h"
#include "engine/request.h"
#include "engine/sink_impl.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "io/single_slot_worker.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

}  // namespace

ForwardSink::Call::Call(Impl& sink, std::string_view partition, const AckCallback& on_ack,
                        const PoisonCallback& on_poison)
    : sink_(sink),
      options_(sink.options),
      counters_(sink.counters),
      partition_(partition),
      on_ack_(on_ack),
      on_poison_(on_poison),
      stop_(sink.stop.get_token()),
      spacing_(sink.options.window),
      core_{.options = sink.options,
            .endpoints = *sink.deps.endpoints,
            .credentials = sink.credentials,
            .counters = sink.counters,
            .time = *sink.deps.time,
            .random = sink.deps.random,
            .stop = stop_,
            .content_encoding = sink.encoder.content_encoding(),
            .emit = [this](Event e) { Emit(std::move(e)); },
            .set_state = [this](State s) { sink_.SetState(std::move(s)); },
            .observer = sink.deps.on_attempt,
            .pacing = pacing_,
            .route = route_,
            .bisection = bisection_} {}

ForwardSink::Call::~Call() {
  FWDSINK_CHECK(posting_ == 0);  // a post's answer refers to its flight
  while (!flights_.empty()) Remove(flights_.begin());
}

ForwardResult ForwardSink::Call::Forward(const std::filesystem::path& path,
                                         const ForwardStart& start) {
  const std::uint64_t begin = start.begin;
  result_.resume_offset = begin;
  // A restart re-sends the journal's unacknowledged ranges first, exactly, and cuts new
  // chunks after the journal's end. @ref LLP 0014#journal
  window_ =
      start.journal.empty() ? CursorWindow(begin) : CursorWindow::Restore(begin, start.journal);
  result_.resume_offset = window_.acked_end();
  cursor_log_ = start.cursor_log;
  on_journal_ = start.on_journal;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> replay;
  for (const CursorRange& r : window_.Pending()) replay.emplace_back(r.begin, r.end);
  path_ = path;
  if (stop_.stop_requested()) {
    End(Ending::kAborted, {});
    return Finish();
  }
  ChunkSource source(path, window_.end(), options_.chunker, sink_.encoder, sink_.buffers,
                     sink_.read_ahead, std::move(replay));
  source_ = &source;
  file_size_ = source.file_size();
  result_.file_size = file_size_;
  result_.file_mtime_ns = source.chunker().file_mtime_ns();
  Pump();
  if (!stopping_) {
    if (!source_end_) {
      End(Ending::kAborted, {});  // Close() before the next chunk opened
    } else if (!Shrunk()) {
      if (*source_end_ == SourceStatus::kEnd) {
        // Every range of the file is acknowledged: anything else would lose rows.
        FWDSINK_CHECK(window_.durable_end() >= file_size_);
        End(Ending::kDelivered, {});
      } else {
        SourceFailed(source, *source_end_);
      }
    }
  }
  source_ = nullptr;
  return Finish();
}

// Opens chunks while the window, the request slots and the byte budget let it, runs
// every flight's steps, and returns when none is left. @ref LLP 0014#window
void ForwardSink::Call::Pump() {
  for (;;) {
    Refill();
    Dispatch();
    if (flights_.empty()) return;
    if (TakeAnswers()) continue;
    WaitForEvent();
  }
}

// Whether one more chunk may open now. Takes its request slot and budget when so.
bool ForwardSink::Call::CanOpen() {
  if (stopping_ || source_end_ || stop_.stop_requested()) return false;
  if (flights_.empty()) return true;  // the sender's own slot
  if (flights_.size() >= options_.window) return false;
  // One request at a time while a bisection runs (its bookkeeping is sequential), and
  // none new while a chunk is being retried: a refusal stops the window from growing
  // until the refused chunk is acknowledged. @ref LLP 0014#window-refusal
  if (bisection_.active) return false;
  for (const Flight& f : flights_) {
    if (f.attempt && (f.attempt->attempts() > 0 || f.attempt->throttled())) return false;
  }
  // Room in the budget for a chunk of full size, so that a chunk is seldom read only to
  // be given back (TakeBudget() takes it at its true size). @ref LLP 0014#inflight-cap
  const InflightBudget& budget = *sink_.deps.inflight;
  const std::uint64_t full =
      options_.chunker.chunk_bytes * (options_.compression == Compression::kIdentity ? 1 : 2);
  if (budget.in_use() + full > budget.limit()) return false;
  return flights_.size() < 1 + extras_ || TakeSlot();
}

// Takes room in the in-flight budget for the source's current chunk at its true size.
// The call's first flight waits for it (until Close()); a later one gives its chunk back
// to the source and opens when an answer frees room. @ref LLP 0014#inflight-cap
bool ForwardSink::Call::TakeBudget() {
  const std::uint64_t bytes = BodyBytes(sink_.buffers.current);
  if (flights_.empty() ? sink_.WaitForInflight(bytes, partition_, stop_)
                       : sink_.deps.inflight->TryTake(bytes)) {
    return true;
  }
  source_->PutBack();
  return false;
}

// A chunk's bytes as the in-flight budget counts them: its raw body, and its encoded
// body when it is compressed.
std::uint64_t ForwardSink::Call::BodyBytes(const PreparedChunk& c) const {
  const bool identity = options_.compression == Compression::kIdentity;
  return c.chunk.body.size() + (identity ? 0 : c.wire.size());
}

// One more request slot beyond the sender's own, if the driver's limit has one.
bool ForwardSink::Call::TakeSlot() {
  if (sink_.deps.requests && !sink_.deps.requests->TryAcquire(extras_)) return false;
  ++extras_;
  return true;
}

// Gives back the slots beyond what `needed` requests use.
void ForwardSink::Call::ReleaseSlots(std::size_t needed) {
  while (extras_ > 0 && extras_ + 1 > std::max<std::size_t>(needed, 1)) {
    if (sink_.deps.requests) sink_.deps.requests->Release();
    --extras_;
  }
}

// Opens what the window allows, journals the ranges, then starts their attempts: no
// byte of a new range leaves before its journal is durable. A refill waits until a
// quarter of the most this call had in flight is free, so that one journal write covers
// several chunks (fewer fsyncs than chunks). @ref LLP 0014#journal
void ForwardSink::Call::Refill() {
  if (!flights_.empty() && flights_.size() + std::max<std::size_t>(1, peak_ / 4) > peak_) return;
  std::vector<Flight*> opened;
  while (CanOpen()) {
    const SourceStatus next = source_->Next();
    if (next != SourceStatus::kChunk) {
      source_end_ = next;
      ReleaseSlots(flights_.size());  // the slot taken for it goes back
      break;
    }
    if (!TakeBudget()) {
      ReleaseSlots(flights_.size());
      break;
    }
    opened.push_back(&Open(BodyBytes(sink_.buffers.current)));  // as TakeBudget() took
  }
  if (opened.empty()) return;
  peak_ = std::max(peak_, flights_.size());
  // The call's first refill needs no write: what is on disk (the cursor and journal it
  // started from) cuts these chunks again by itself, and they are at most a window. So a
  // small partition costs no cursor record at all. @ref LLP 0014#journal
  const bool first = first_refill_;
  first_refill_ = false;
  if (!first && !Journal()) return;  // the new flights were dropped with the idle ones
  for (Flight* f : opened) Launch(*f);
}

// Gives a flight its attempt and carries out the attempt's first step.
void ForwardSink::Call::Launch(Flight& f) {
  f.attempt = std::make_unique<Attempt>(core_, f.request);
  f.step = f.attempt->Start();
  Handle(Find(&f));
}

// Hands the journal to the cursor log, then to the callback (each makes it durable);
// false when one could not: the partition stops before anything new is sent.
// @ref LLP 0021#cursor-road
bool ForwardSink::Call::Journal() {
  if (!cursor_log_ && !on_journal_) return true;
  const std::vector<CursorRange> ranges = window_.Journal();
  const JournalState state{
      .partition = partition_, .cursor = window_.durable_end(), .ranges = ranges};
  if ((!cursor_log_ || cursor_log_->Journal(state)) && (!on_journal_ || on_journal_(state))) {
    return true;
  }
  End(Ending::kCursorNotSaved,
      {.message = "the journal of the ranges in flight could not be persisted at offset " +
                  std::to_string(window_.durable_end())});
  stopping_ = true;
  DropIdle(nullptr);
  return false;
}

// Moves the current chunk (the source's, or a pack's body) into a new flight holding
// `bytes` of the in-flight budget. The flight owns the bytes until it ends; the buffer
// it gives back is one of an ended flight (capacity kept). @ref LLP 0014#window-memory
ForwardSink::Call::Flight& ForwardSink::Call::Open(std::uint64_t bytes) {
  Flight& f = flights_.emplace_back();
  if (!spare_.empty()) {
    f.prepared = std::move(spare_.back());
    spare_.pop_back();
  }
  std::swap(f.prepared, sink_.buffers.current);
  const bool identity = options_.compression == Compression::kIdentity;
  std::string& wire = identity ? f.prepared.chunk.body : f.prepared.wire;
  f.bytes = bytes;  // @ref LLP 0014#inflight-cap
  bytes_held_ += f.bytes;
  f.request = pack_ ? MakePackRequest(pack_->key, pack_->members, f.prepared.chunk, wire, options_)
                    : MakeRequest(partition_, f.prepared.chunk, wire, options_);
  // Reloaded credentials apply from a chunk's first attempt on. @ref LLP 0024#reload
  sink_.credentials.TakeNewer(sink_.deps.credentials.get());
  window_.Open(f.request.range.begin, f.request.range.end);
  return f;
}

// Posts every flight that wants to, each on a free connection. A flight held for a connection is
// rechecked first: an answer that freed the connection may have held the endpoint or moved
// the pacer's schedule since it reserved its slot. @ref LLP 0016#recheck
void ForwardSink::Call::Dispatch() {
  spaced_until_.reset();
  for (auto it = flights_.begin(); it != flights_.end();) {
    Flight& f = *it;
    if (f.step.kind != Attempt::Step::Kind::kPost || f.conn >= 0) {
      ++it;
      continue;
    }
    if (posting_ >= 1 + extras_ && !TakeSlot()) return;  // a slot comes free with an answer
    if (!Spaced(f)) return;
    const int conn = sink_.connections.Take();
    if (conn < 0) return;  // one comes free with the next answer
    f.step = f.attempt->Recheck();
    if (f.step.kind != Attempt::Step::Kind::kPost) {
      sink_.connections.Give(conn);
      Handle(it);  // may drop other flights: start over (those posting are skipped)
      it = flights_.begin();
      continue;
    }
    Send(f, conn);
    ++it;
  }
}

// Whether the flight's start may go now: the starts of a window are spread over a round
// trip. Otherwise it waits for `spaced_until_` (WaitForEvent). @ref LLP 0014#stagger
bool ForwardSink::Call::Spaced(Flight& f) {
  if (stop_.stop_requested()) return true;  // Close(): the post fails at once, no wait
  const MonotonicTime now = sink_.deps.time->MonotonicNow();
  const std::chrono::microseconds wait = spacing_.Wait(now);
  if (wait == std::chrono::microseconds::zero()) return true;
  if (!f.held_since) f.held_since = now;
  spaced_until_ = now + wait;
  return false;
}

void ForwardSink::Call::Send(Flight& f, int conn) {
  const MonotonicTime now = sink_.deps.time->MonotonicNow();
  spacing_.Started(now);
  if (f.held_since) {
    Add(counters_.spaced_starts);
    Add(counters_.spaced_wait_ms,
        std::chrono::duration_cast<milliseconds>(now - *f.held_since).count());
    f.held_since.reset();
  }
  f.conn = conn;
  ++posting_;
  Flight* flight = &f;
  sink_.connections.Post(conn, f.attempt->endpoint(), f.attempt->headers(), *f.request.wire,
                         f.request.query, f.attempt->limits(), [this, flight](PostDone done) {
                           std::lock_guard lock(answers_mu_);
                           answers_.push_back({flight, std::move(done)});
                           wake_.request_stop();
                           answers_cv_.notify_all();
                         });
}

// Hands every answer in to its attempt; false when there was none.
bool ForwardSink::Call::TakeAnswers() {
  std::vector<Answered> answers;
  {
    std::lock_guard lock(answers_mu_);
    answers.swap(answers_);
  }
  for (Answered& a : answers) {
    Flight& f = *a.flight;
    sink_.connections.Give(f.conn);
    f.conn = -1;
    --posting_;
    if (sink_.deps.latency) sink_.deps.latency->Observe(a.done.took);
    f.step = f.attempt->Answered(std::move(a.done.result), a.done.took);
    if (Acknowledged(f)) spacing_.OnAccepted(a.done.took);  // @ref LLP 0014#stagger
    Handle(Find(&f));
  }
  return !answers.empty();
}

// Whether the flight's attempt ended in an acknowledgement (its verdict, not only a 2xx:
// the response rules may read a 2xx as an error).
bool ForwardSink::Call::Acknowledged(const Flight& f) {
  if (f.step.kind != Attempt::Step::Kind::kDone) return false;
  const Attempt::End& end = f.attempt->end();
  return end.kind == Attempt::End::Kind::kVerdict && end.verdict.action == Action::kAcknowledge;
}

ForwardSink::Call::FlightIt ForwardSink::Call::Find(const Flight* f) {
  for (auto it = flights_.begin(); it != flights_.end(); ++it) {
    if (&*it == f) return it;
  }
  return flights_.end();
}

// Carries out a flight's new step: an ending is concluded and the flight removed; while
// the partition stops, a flight that would go on is dropped instead (its range stays
// open: it is re-sent under its key next time).
void ForwardSink::Call::Handle(FlightIt it) {
  Flight& f = *it;
  if (f.step.kind == Attempt::Step::Kind::kDone) {
    const bool acked = Acknowledged(f);
    // Once the partition stops, only acknowledgements still count. @ref LLP 0014#window-refusal
    if ((!stopping_ || acked) && Finished(f) == ChunkEnd::kStop && !stopping_) {
      stopping_ = true;
      DropIdle(&f);
    }
    Remove(it);
    return;
  }
  if (stopping_ && f.conn < 0) Remove(it);
}

// The partition stops: every flight not posting now is dropped (its range stays open in
// the window and is re-sent under its key next time); those posting finish.
void ForwardSink::Call::DropIdle(const Flight* except) {
  for (auto it = flights_.begin(); it != flights_.end();) {
    auto next = std::next(it);
    if (&*it != except && it->conn < 0) Remove(it);
    it = next;
  }
}

void ForwardSink::Call::Remove(FlightIt it) {
  Flight& f = *it;
  FWDSINK_DCHECK(f.conn < 0);
  sink_.deps.inflight->Give(f.bytes);
  bytes_held_ -= f.bytes;
  f.attempt.reset();
  spare_.push_back(std::move(f.prepared));
  flights_.erase(it);
  ReleaseSlots(flights_.size());
}

// Waits for the next thing to do: an answer, or the soonest flight's wake time.
void ForwardSink::Call::WaitForEvent() {
  const Flight* soonest = nullptr;
  for (const Flight& f : flights_) {
    if (f.step.kind != Attempt::Step::Kind::kWait) continue;
    if (!soonest || f.step.wake_at < soonest->step.wake_at) soonest = &f;
  }
  if (spaced_until_ && (!soonest || *spaced_until_ < soonest->step.wake_at)) {
    // A start waits for its spacing: an answer may come first. @ref LLP 0014#stagger
    if (SleepUntilAnswer(*spaced_until_)) WakeDue(/*stopped=*/true);
    return;
  }
  if (!soonest) {
    std::unique_lock lock(answers_mu_);
    answers_cv_.wait(lock, [this] { return !answers_.empty(); });  // Close() aborts posts
    return;
  }
  if (posting_ == 0) {
    // Nothing else runs: a partition that waits holds no slot beyond the sender's own,
    // and the sleeper lends that one for a long wait. @ref LLP 0018#lend
    ReleaseSlots(0);
    const Attempt::Woken how = Sleep(*soonest);
    if (how == Attempt::Woken::kStopped) return WakeDue(/*stopped=*/true);
    const FlightIt it = Find(soonest);
    it->step = it->attempt->Woke(how);
    return Handle(it);
  }
  const bool stopped = SleepUntilAnswer(soonest->step.wake_at);
  WakeDue(stopped);
}

// Wakes the flights whose time has come (all of them with kStopped on Close()).
void ForwardSink::Call::WakeDue(bool stopped) {
  const MonotonicTime now = sink_.deps.time->MonotonicNow();
  std::vector<const Flight*> due;
  for (const Flight& f : flights_) {
    if (f.step.kind == Attempt::Step::Kind::kWait && (stopped || f.step.wake_at <= now)) {
      due.push_back(&f);
    }
  }
  for (const Flight* f : due) {
    const FlightIt it = Find(f);  // an earlier one's ending may have dropped it
    if (it == flights_.end()) continue;
    it->step = it->attempt->Woke(stopped ? Attempt::Woken::kStopped : Attempt::Woken::kElapsed);
    Handle(it);
  }
}

// Sleeps until `wake_at`, or less when an answer comes in; true when Close() cut it.
bool ForwardSink::Call::SleepUntilAnswer(MonotonicTime wake_at) {
  std::stop_source wake;
  {
    std::lock_guard lock(answers_mu_);
    if (!answers_.empty()) return false;
    wake_ = std::stop_source();
    wake = wake_;
  }
  const std::stop_callback on_close(stop_, [wake]() mutable { wake.request_stop(); });
  // In steps short enough that the sleeper never lends the sender's slot while its posts
  // run (the loop comes back here until the time is reached). @ref LLP 0018#lend
  constexpr milliseconds kStep{500};
  const auto wait =
      std::clamp(std::chrono::ceil<milliseconds>(wake_at - sink_.deps.time->MonotonicNow()),
                 milliseconds::zero(), kStep);
  (void)sink_.deps.sleeper->SleepFor(wait, wake.get_token());
  return stop_.stop_requested();
}

// Sleeps until the step's wake time; Close() cuts it short (kStopped), and so does a
// failover that leaves the endpoint of a wait on it (kLeft). @ref LLP 0019#wake
Attempt::Woken ForwardSink::Call::Sleep(const Flight& f) {
  const Attempt::Step& step = f.step;
  const milliseconds wait =
      std::max(milliseconds::zero(),
               std::chrono::ceil<milliseconds>(step.wake_at - sink_.deps.time->MonotonicNow()));
  Sleeper& sleeper = *sink_.deps.sleeper;
  if (!step.on_endpoint) {
    return sleeper.SleepFor(wait, stop_) ? Attempt::Woken::kElapsed : Attempt::Woken::kStopped;
  }
  const Route& route = f.attempt->route();
  const Endpoints::Waiting on = sink_.deps.endpoints->WaitOn(route.ep, route.moves_seen, stop_);
  if (!on.left() && sleeper.SleepFor(wait, on.token())) return Attempt::Woken::kElapsed;
  return stop_.stop_requested() ? Attempt::Woken::kStopped : Attempt::Woken::kLeft;
}

}  // namespace fwdsink
