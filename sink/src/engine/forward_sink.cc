// SPDX-License-Identifier: Apache-2.0
// The forward sink: one call per partition. It reads chunks, gives each its Request and
// an Attempt, runs the attempt (the one place that sleeps and posts), and concludes.
// @ref LLP 0014#core
#include "fwdsink/forward_sink.h"

#include <algorithm>
#include <mutex>
#include <stop_token>
#include <utility>

#include "engine/attempt.h"
#include "engine/auth.h"
#include "engine/chunk_source.h"
#include "engine/conclusion.h"
#include "engine/cursor_window.h"
#include "engine/request.h"
#include "engine/resolve_deps.h"
#include "engine/sink_impl.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "io/single_slot_worker.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

void Add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace

// One ForwardPartition call: "next chunk, its attempt, its conclusion", and the cursor
// route. What a response means is decided by Classify(), what an attempt does next by
// the Attempt, what an ending writes by the conclusion table. @ref LLP 0014#core
class ForwardSink::Call {
 public:
  Call(Impl& sink, std::string_view partition, const AckCallback& on_ack,
       const PoisonCallback& on_poison)
      : sink_(sink),
        options_(sink.options),
        counters_(sink.counters),
        partition_(partition),
        on_ack_(on_ack),
        on_poison_(on_poison),
        stop_(sink.stop.get_token()),
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

  ForwardResult Forward(const std::filesystem::path& path, std::uint64_t begin) {
    result_.resume_offset = begin;
    window_ = CursorWindow(begin);
    if (stop_.stop_requested()) {
      End(Ending::kAborted, {});
      return Finish();
    }
    ChunkSource source(path, begin, options_.chunker, sink_.encoder, sink_.buffers,
                       sink_.read_ahead);
    file_size_ = source.file_size();
    result_.file_size = file_size_;
    result_.file_mtime_ns = source.chunker().file_mtime_ns();
    for (;;) {
      const SourceStatus next = source.Next();
      if (next == SourceStatus::kEnd) {
        if (!Shrunk(path)) End(Ending::kDelivered, {});
        break;
      }
      if (next != SourceStatus::kChunk) {
        if (!Shrunk(path)) SourceFailed(source, next);
        break;
      }
      if (SendChunk(source) == ChunkEnd::kStop) break;
    }
    return Finish();
  }

 private:
  // How a chunk's attempts ended: on to the next chunk, or stop the partition.
  enum class ChunkEnd { kNext, kStop };

  ForwardResult Finish() {
    sink_.SetState({});
    return std::move(result_);
  }

  void End(Ending ending, const Facts& facts) {
    fwdsink::Conclude(ending, facts, result_, counters_, core_.emit);
  }

  // A sealed partition never changes: one smaller now than at open was cut under us (a
  // contract violation, not a delivery and not a torn row). The driver quarantines it;
  // the message has the true counts. @ref LLP 0023#shrunk
  bool Shrunk(const std::filesystem::path& path) {
    std::error_code ec;
    const std::uint64_t now = std::filesystem::file_size(path, ec);
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

  void SourceFailed(ChunkSource& source, SourceStatus status) {
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

  void Emit(Event e) {
    if (!sink_.deps.on_event) return;
    e.label = options_.label;
    e.partition = partition_;
    if (sink_.deps.endpoints->size() > 1) e.endpoint = sink_.deps.endpoints->at(route_.ep).name;
    sink_.deps.on_event(e);
  }

  // Sends the current chunk, identical bytes under an identical key on every attempt,
  // until its attempt ends. @ref LLP 0014#retry-in-place
  ChunkEnd SendChunk(ChunkSource& source) {
    const Request request = MakeRequest(partition_, source.chunk(), source.wire(), options_);
    // Reloaded credentials apply from a chunk's first attempt on. @ref LLP 0024#reload
    sink_.credentials.TakeNewer(sink_.deps.credentials.get());
    window_.Open(request.range.begin, request.range.end);
    Attempt attempt(core_, request);
    RunAttempt(attempt);
    if (attempt.status_seen()) result_.status = *attempt.status_seen();
    if (attempt.throttled()) result_.throttled = true;
    return Finished(attempt, source);
  }

  // The one loop that sleeps and posts for an attempt. @ref LLP 0014#attempt
  void RunAttempt(Attempt& attempt) {
    Attempt::Step step = attempt.Start();
    for (;;) {
      switch (step.kind) {
        case Attempt::Step::Kind::kDone: return;
        case Attempt::Step::Kind::kPost: step = Post(attempt); break;
        case Attempt::Step::Kind::kWait: step = attempt.Woke(Sleep(step)); break;
      }
    }
  }

  Attempt::Step Post(Attempt& attempt) {
    const Request& request = attempt.request();
    TimeSource& time = *sink_.deps.time;
    const MonotonicTime posted = time.MonotonicNow();
    TransportResult answer = sink_.credentials.links[attempt.endpoint()].transport->Post(
        attempt.headers(), *request.wire, request.query, attempt.limits());
    const auto took = time.MonotonicNow() - posted;
    if (sink_.deps.latency) sink_.deps.latency->Observe(took);
    return attempt.Answered(std::move(answer),
                            std::chrono::duration_cast<std::chrono::microseconds>(took));
  }

  // Sleeps until the step's wake time; Close() cuts it short (kStopped), and so does a
  // failover that leaves the endpoint of a wait on it (kLeft). @ref LLP 0019#wake
  Attempt::Woken Sleep(const Attempt::Step& step) {
    const milliseconds wait =
        std::max(milliseconds::zero(),
                 std::chrono::ceil<milliseconds>(step.wake_at - sink_.deps.time->MonotonicNow()));
    Sleeper& sleeper = *sink_.deps.sleeper;
    if (!step.on_endpoint) {
      return sleeper.SleepFor(wait, stop_) ? Attempt::Woken::kElapsed : Attempt::Woken::kStopped;
    }
    const Endpoints::Waiting on = sink_.deps.endpoints->WaitOn(route_.ep, route_.moves_seen, stop_);
    if (!on.left() && sleeper.SleepFor(wait, on.token())) return Attempt::Woken::kElapsed;
    return stop_.stop_requested() ? Attempt::Woken::kStopped : Attempt::Woken::kLeft;
  }

  // Carries out how the attempt ended.
  ChunkEnd Finished(const Attempt& attempt, ChunkSource& source) {
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
      if (end.shrink_to) source.LimitChunkBytes(*end.shrink_to);
      return Acked(request, v.duplicate) ? ChunkEnd::kNext : ChunkEnd::kStop;
    }
    const std::optional<Ending> ending = EndingFor(v);
    FWDSINK_CHECK(ending.has_value());
    switch (*ending) {
      case Ending::kSplit: return Split(v, request, source);
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
  void GiveUp(const Attempt& attempt) {
    const Attempt::End& end = attempt.end();
    const Request& request = attempt.request();
    End(Ending::kGiveUp,
        {.key = request.key,
         .status = end.verdict.status,
         .reason = end.verdict.reason,
         .message = "inline budget of " +
                    std::to_string(options_.backpressure.inline_budget.count()) +
                    " ms would be passed by a further " + std::to_string(end.would_wait.count()) +
                    " ms wait after " + std::to_string(attempt.attempts()) +
                    " attempt(s); resume at " + std::to_string(result_.resume_offset),
         .attempt = attempt.attempts(),
         .wait = end.would_wait,
         .begin = request.range.begin,
         .end = request.range.end,
         .respool = RespoolReasonFor(end.verdict.retry_cause)});
  }

  // A refused chunk is halved at a line boundary; both halves go next, under their own
  // keys. Past the bisection's request bound the refusal is the request's.
  ChunkEnd Split(const Verdict& v, const Request& request, ChunkSource& source) {
    if (bisection_.requests >= options_.max_split_requests) {
      return RequestRefused(v, request,
                            "bisection spent its " + std::to_string(options_.max_split_requests) +
                                " requests without isolating a row");
    }
    bisection_.NoteSplit(request.range.end);
    End(Ending::kSplit, ChunkFacts(v, request, v.message));
    source.SplitCurrent();
    return ChunkEnd::kNext;
  }

  static Facts ChunkFacts(const Verdict& v, const Request& request, std::string message) {
    return {.key = request.key,
            .status = v.status,
            .reason = v.reason,
            .message = std::move(message),
            .begin = request.range.begin,
            .end = request.range.end,
            .rows = request.range.rows};
  }

  // Counts an acknowledged chunk and hands its cursor to the ack callback.
  bool Acked(const Request& request, bool duplicate) {
    const ChunkRange& c = request.range;
    bisection_.NoteAcked(c.end);
    Add(counters_.chunks_acked);
    counters_.last_ack_time_ms.store(
        static_cast<std::uint64_t>(std::chrono::duration_cast<milliseconds>(
                                       sink_.deps.time->SystemNow().time_since_epoch())
                                       .count()),
        std::memory_order_relaxed);
    Add(counters_.rows_acked, c.rows);
    Add(counters_.bytes_acked, request.body.size());
    EndpointEntry& entry = sink_.deps.endpoints->at(route_.ep);
    Add(entry.counters.chunks_acked);
    Add(entry.counters.bytes_acked, request.body.size());
    result_.chunks_acked += 1;
    result_.rows_acked += c.rows;
    result_.bytes_acked += request.body.size();
    return Advance(c, /*duplicate=*/duplicate, /*dead_lettered=*/false);
  }

  // Moves the cursor past `c` by the one route: the ack callback. Inside a split chunk
  // the window says so (inside_split), and the driver holds the cursor at the chunk's
  // end. @ref LLP 0023#split-window
  bool Advance(const ChunkRange& c, bool duplicate, bool dead_lettered) {
    result_.resume_offset = c.end;
    window_.Ack(c.begin, c.end);
    const bool final = c.end >= file_size_;
    const bool inside_split = window_.Inside(c.end);
    if (!on_ack_ || on_ack_(AckedChunk{partition_, c.begin, c.end, c.rows, duplicate, final,
                                       dead_lettered, inside_split})) {
      return true;
    }
    End(Ending::kCursorNotSaved,
        {.message = "the cursor could not be persisted after offset " + std::to_string(c.end)});
    return false;
  }

  // A single row the server refuses: hand its bytes to the poison callback; once they
  // are durably in dead letters, move on past them. @ref LLP 0014#core
  ChunkEnd Poisoned(const Verdict& v, const Request& request) {
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
  ChunkEnd RequestRefused(const Verdict& v, const Request& request, const std::string& why) {
    const std::string reason = v.reason.empty() ? "http_" + std::to_string(v.status) : v.reason;
    Facts f = ChunkFacts(v, request,
                         "HTTP " + std::to_string(v.status) + " (" + reason + ") for " +
                             request.key + ": " + why + "; partition kept, resume at " +
                             std::to_string(result_.resume_offset));
    f.reason = reason;
    End(Ending::kRequestRefused, f);
    return ChunkEnd::kStop;
  }

  Impl& sink_;
  const ForwardOptions& options_;
  Counters& counters_;
  const std::string partition_;
  const AckCallback& on_ack_;
  const PoisonCallback& on_poison_;
  std::stop_token stop_;
  ForwardResult result_;
  std::uint64_t file_size_ = 0;  // of the partition, when opened
  CursorWindow window_;          // the ranges in flight and the cursor route's view of them
  PacingReport pacing_;
  Route route_;
  Bisection bisection_;
  SendCore core_;  // last: refers to the members above
};

namespace {

// One connection per endpoint, in order.
Result<std::vector<EndpointLink>> MakeLinks(const ForwardOptions& options) {
  std::vector<EndpointLink> links;
  for (const std::string& url : EndpointUrls(options)) {
    Result<std::unique_ptr<HttpTransport>> made = HttpTransport::Create(url, options.transport);
    if (!made.ok()) return made.status().WithFieldPrefix("transport");
    links.push_back(EndpointLink{.transport = std::move(made).value()});
  }
  return links;
}

}  // namespace

Result<std::unique_ptr<ForwardSink>> ForwardSink::Create(ForwardOptions options, ForwardDeps deps) {
  if (Status e = Validate(options); !e.ok()) return e;
  Result<std::vector<EndpointLink>> links = MakeLinks(options);
  if (!links.ok()) return links.status();
  Result<ForwardDeps> resolved = ResolveDeps(options, std::move(deps));
  if (!resolved.ok()) return resolved.status();
  return std::unique_ptr<ForwardSink>(new ForwardSink(std::make_unique<Impl>(
      std::move(options), std::move(resolved).value(), std::move(links).value())));
}

ForwardSink::ForwardSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ForwardSink::~ForwardSink() = default;

ForwardResult ForwardSink::ForwardPartition(std::string_view partition,
                                            const std::filesystem::path& path, std::uint64_t begin,
                                            const AckCallback& on_ack,
                                            const PoisonCallback& on_poison) {
  return Call(*impl_, partition, on_ack, on_poison).Forward(path, begin);
}

void ForwardSink::Close() {
  // @ref LLP 0014#close
  impl_->stop.request_stop();  // wakes a pause at once (stop_callback on the sleeper's cv)
  // Shuts the sockets: connect, send or header wait fail at once.
  for (EndpointLink& link : impl_->credentials.links) link.transport->Abort();
}

bool ForwardSink::closed() const { return impl_->stop.stop_requested(); }

ForwardSink::State ForwardSink::state() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->state;
}

const Counters& ForwardSink::counters() const { return impl_->counters; }

PaceRate ForwardSink::pacing() const {
  const Endpoints& endpoints = *impl_->deps.endpoints;
  return endpoints.at(endpoints.active()).pacer->Current(impl_->deps.time->MonotonicNow());
}

const Endpoints& ForwardSink::endpoints() const { return *impl_->deps.endpoints; }

const ForwardOptions& ForwardSink::options() const { return impl_->options; }

}  // namespace fwdsink
