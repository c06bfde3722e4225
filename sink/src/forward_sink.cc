#include "fwdsink/forward_sink.h"

#include <nlohmann/json.hpp>

#include <deque>
#include <condition_variable>
#include <functional>
#include <thread>

#include "fwdsink/retry_after.h"
#include "saturating.h"

#ifndef FWDSINK_VERSION
#define FWDSINK_VERSION "0"
#endif

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

milliseconds Since(MonotonicTime then, MonotonicTime now) {
  return std::chrono::duration_cast<milliseconds>(now - then);
}

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// What kind of failure a retryable attempt was; picks the respool reason.
enum class FailureKind { kBackpressure, kTransport, kServer };

RespoolReason RespoolFor(FailureKind k) {
  switch (k) {
    case FailureKind::kBackpressure: return RespoolReason::kBudgetExhausted;
    case FailureKind::kTransport: return RespoolReason::kTransportError;
    case FailureKind::kServer: return RespoolReason::kServerError;
  }
  return RespoolReason::kBudgetExhausted;
}

// Scans a possibly truncated JSON text for "<key>":"<value>" and returns the value.
std::string ScanStringField(std::string_view body, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\"";
  std::size_t pos = body.find(needle);
  while (pos != std::string_view::npos) {
    std::size_t i = pos + needle.size();
    while (i < body.size() && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n')) ++i;
    if (i < body.size() && body[i] == ':') {
      ++i;
      while (i < body.size() && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n')) ++i;
      if (i < body.size() && body[i] == '"') {
        std::string out;
        for (++i; i < body.size() && body[i] != '"' && out.size() < 256; ++i) {
          if (body[i] == '\\' && i + 1 < body.size()) ++i;
          out.push_back(body[i]);
        }
        return out;
      }
    }
    pos = body.find(needle, pos + 1);
  }
  return {};
}

}  // namespace

std::string ExtractReason(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    for (const char* outer : {"details", "data"}) {
      const auto it = j.find(outer);
      if (it != j.end() && it->is_object()) {
        const auto r = it->find("reason");
        if (r != it->end() && r->is_string()) return r->get<std::string>();
      }
    }
    const auto r = j.find("reason");
    if (r != j.end() && r->is_string()) return r->get<std::string>();
    return {};
  }
  // Truncated or not JSON at all: a bounded textual scan still finds the reason code,
  // which is the key fact in an incident.
  return ScanStringField(body, "reason");
}

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::kDelivered: return "delivered";
    case Outcome::kRespooled: return "respooled";
    case Outcome::kPoisoned: return "poisoned";
    case Outcome::kAborted: return "aborted";
    case Outcome::kAuthError: return "auth_error";
    case Outcome::kTlsError: return "tls_error";
    case Outcome::kPartitionError: return "partition_error";
  }
  return "unknown";
}

std::string_view to_string(RespoolReason r) {
  switch (r) {
    case RespoolReason::kNone: return "none";
    case RespoolReason::kBudgetExhausted: return "budget_exhausted";
    case RespoolReason::kTransportError: return "transport_error";
    case RespoolReason::kServerError: return "server_error";
    case RespoolReason::kClientError: return "client_error";
    case RespoolReason::kCursorNotSaved: return "cursor_not_saved";
  }
  return "unknown";
}

Status Validate(const ForwardOptions& o) {
  if (Result<Endpoint> ep = ParseEndpoint(o.url); !ep.ok()) return ep.status();
  if (o.idempotency_header.empty() ||
      !std::all_of(o.idempotency_header.begin(), o.idempotency_header.end(), IsTokenChar)) {
    return Status::Config("idempotency_header", "must be a non-empty HTTP header name");
  }
  if (o.compression == Compression::kZstd) {
    if (Status e = ValidateZstdLevel(o.zstd_level); !e.ok()) return e;
  }
  if (Status e = Validate(o.chunker); !e.ok()) return e.WithFieldPrefix("chunker");
  if (Status e = Validate(o.backpressure); !e.ok()) return e.WithFieldPrefix("backpressure");
  if (o.transport.connect_timeout <= milliseconds::zero()) {
    return Status::Config("transport.connect_timeout", "must be positive");
  }
  if (o.transport.read_timeout <= milliseconds::zero()) {
    return Status::Config("transport.read_timeout", "must be positive");
  }
  if (o.transport.write_timeout <= milliseconds::zero()) {
    return Status::Config("transport.write_timeout", "must be positive");
  }
  if (o.transport.body_prefix_bytes < 256) {
    return Status::Config("transport.body_prefix_bytes", "must be at least 256");
  }
  if (o.label.empty()) return Status::Config("label", "must not be empty");
  return OkStatus();
}

// Runs one job at a time on a thread kept for the sink's lifetime (started on first
// use): reading and encoding the next chunk while the current one is on the wire.
// A thread per chunk cost a thread creation per request and spread the chunk buffers
// over glibc's per-thread arenas, which grew the peak RSS with the partition's size.
// Start() and Wait() are called by the sender thread only; state guarded by mu_.
// @ref LLP 0014#read-ahead
class ForwardSink::ReadAhead {
 public:
  ~ReadAhead() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Runs `job` on the worker. Precondition: no job in flight (!busy()).
  void Start(std::function<NextStatus()> job) {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    job_ = std::move(job);
    done_ = false;
    busy_ = true;
    cv_.notify_all();
  }
  // Waits for the job in flight and returns its result.
  NextStatus Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    busy_ = false;
    return result_;
  }
  // Returns true between Start() and Wait().
  bool busy() const {
    std::lock_guard lock(mu_);
    return busy_;
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return job_ != nullptr || stopping_; });
      if (!job_) return;
      auto job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      const NextStatus r = job();
      lock.lock();
      result_ = r;
      done_ = true;
      cv_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<NextStatus()> job_;         // guarded by mu_
  NextStatus result_ = NextStatus::kEnd;    // guarded by mu_
  bool done_ = false;                       // guarded by mu_
  bool busy_ = false;                       // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::thread thread_;
};

// One ForwardPartition call: the per-chunk retry-in-place loop.
class ForwardSink::Run {
 public:
  Run(ForwardSink& sink, std::string_view partition, const AckCallback& on_ack)
      : s_(sink), o_(sink.options_), partition_(partition), on_ack_(on_ack),
        time_(*sink.deps_.time), sleeper_(*sink.deps_.sleeper), stop_(sink.stop_.get_token()) {}

  ForwardResult Go(const std::filesystem::path& path, std::uint64_t begin) {
    r_.resume_offset = begin;
    if (stop_.stop_requested()) return Aborted();
    Chunker chunker = Chunker::Open(path, begin, o_.chunker);
    file_size_ = chunker.file_size();
    std::deque<Chunk> pending;  // halves of a split chunk, sent before the chunker's next
    Prepared& cur = s_.cur_;
    Prepared& ahead_buf = s_.ahead_;     // filled by the read-ahead job
    ReadAhead& ahead = *s_.read_ahead_;
    // Every return waits for a job in flight: it uses the chunker on this stack.
    struct Drain {
      ReadAhead& a;
      ~Drain() {
        if (a.busy()) (void)a.Wait();
      }
    } drain{ahead};
    std::optional<NextStatus> stashed;   // a read-ahead held back behind split halves
    // The only code that touches the chunker and the encoder while a read-ahead runs.
    const auto fetch = [this, &chunker](Prepared& p) {
      const NextStatus st = chunker.Next(p.chunk);
      p.encoded = st == NextStatus::kChunk &&
                  (identity_ || s_.encoder_.Encode(p.chunk.body, p.wire));
      return st;
    };
    for (;;) {
      NextStatus st = NextStatus::kChunk;
      if (!pending.empty()) {
        cur.chunk = std::move(pending.front());
        cur.encoded = false;
        pending.pop_front();
      } else if (stashed || ahead.busy()) {
        st = stashed ? *stashed : ahead.Wait();
        stashed.reset();
        std::swap(cur, ahead_buf);
      } else {
        st = fetch(cur);
      }
      if (st == NextStatus::kEnd) break;
      if (st == NextStatus::kError) {
        r_.outcome = Outcome::kPartitionError;
        r_.reason = std::string(to_string(chunker.error()));
        r_.message = chunker.error_message();
        Emit({.name = "forward.error", .reason = r_.reason, .begin = chunker.error_offset(),
              .message = r_.message});
        return Finish();
      }
      // Read and encode the next chunk while this one is on the wire.
      // @ref LLP 0014#read-ahead
      if (pending.empty() && !stashed && chunker.ok() &&
          chunker.offset() < chunker.file_size()) {
        ahead.Start([&fetch, &ahead_buf] { return fetch(ahead_buf); });
      }
      switch (SendChunk(cur)) {
        case Step::kAcked:
          if (!Acked(cur.chunk)) return Finish();  // ~Drain waits for the read-ahead
          break;
        case Step::kSplit: {
          if (ahead.busy()) stashed = ahead.Wait();  // the halves go first
          auto halves = SplitChunk(cur.chunk);       // SendChunk only asks for >= 2 rows
          pending.push_front(std::move(halves->second));
          pending.push_front(std::move(halves->first));
          break;
        }
        case Step::kStop:
          return Finish();
      }
    }
    r_.outcome = Outcome::kDelivered;
    s_.counters_.partitions_delivered.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = "forward.delivered", .end = r_.resume_offset,
          .message = "partition delivered"});
    return Finish();
  }

 private:
  enum class Step { kAcked, kSplit, kStop };

  ForwardResult Finish() {
    s_.SetState({});
    return std::move(r_);
  }

  ForwardResult Aborted() {
    r_.outcome = Outcome::kAborted;
    r_.message = "closed";
    s_.counters_.aborts.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = "forward.aborted", .end = r_.resume_offset,
          .message = "close() aborted the partition; cursor kept"});
    return Finish();
  }

  void Emit(Event e) {
    if (!s_.deps_.on_event) return;
    e.label = o_.label;
    e.partition = partition_;
    s_.deps_.on_event(e);
  }

  bool Acked(const Chunk& c) {
    auto& k = s_.counters_;
    k.chunks_acked.fetch_add(1, std::memory_order_relaxed);
    k.rows_acked.fetch_add(c.rows, std::memory_order_relaxed);
    k.bytes_acked.fetch_add(c.body.size(), std::memory_order_relaxed);
    r_.chunks_acked += 1;
    r_.rows_acked += c.rows;
    r_.bytes_acked += c.body.size();
    r_.resume_offset = c.end;
    const bool final = c.end >= file_size_;
    if (on_ack_ &&
        !on_ack_(AckedChunk{partition_, c.begin, c.end, c.rows, duplicate_, final})) {
      r_.outcome = Outcome::kRespooled;
      r_.respool_reason = RespoolReason::kCursorNotSaved;
      r_.message = "the cursor could not be persisted after offset " + std::to_string(c.end);
      k.respools.fetch_add(1, std::memory_order_relaxed);
      Emit({.name = "forward.respool", .reason = "cursor_not_saved", .end = c.end,
            .message = r_.message});
      return false;
    }
    return true;
  }

  HeaderList Headers(const std::string& key) const {
    HeaderList h = {{"Content-Type", "application/x-ndjson"},
                    {"Content-Encoding", std::string(s_.encoder_.content_encoding())},
                    {o_.idempotency_header, key},
                    {"User-Agent", "fwdsink/" FWDSINK_VERSION}};
    if (s_.token_) h.emplace_back("Authorization", "Bearer " + *s_.token_);
    return h;
  }

  // Sends one chunk until it is acknowledged, must be split, or we stop.
  // @ref LLP 0014#retry-in-place
  Step SendChunk(Prepared& p) {
    const Chunk& c = p.chunk;
    const std::string key =
        partition_ + ":" + std::to_string(c.begin) + "-" + std::to_string(c.end);
    // Encode once: every re-send carries the identical bytes under the identical key.
    // Identity sends the chunk's own buffer: no copy (the transport hands it back intact).
    std::string& wire = identity_ ? p.chunk.body : p.wire;
    if (!identity_ && !p.encoded && !s_.encoder_.Encode(c.body, wire)) {
      r_.outcome = Outcome::kPartitionError;
      r_.reason = "encode_failed";
      r_.message = "compressing chunk " + key + " failed: " + s_.encoder_.error();
      Emit({.name = "forward.error", .key = key, .reason = r_.reason, .message = r_.message});
      return Step::kStop;
    }
    if (s_.deps_.tokens && !s_.token_) s_.token_ = s_.deps_.tokens(false);
    HeaderList headers = Headers(key);

    auto& k = s_.counters_;
    const MonotonicTime first = time_.MonotonicNow();
    std::size_t attempt = 0;
    bool refreshed = false;
    for (;;) {
      if (stop_.stop_requested()) return Stop(Aborted());

      // One backoff per resource: honour a hold another sender's Retry-After set.
      const auto hold = s_.deps_.gate->Remaining(time_.MonotonicNow());
      if (hold.remaining > milliseconds::zero()) {
        const auto elapsed = Since(first, time_.MonotonicNow());
        if (SaturatingAdd(elapsed, hold.remaining) > o_.backpressure.inline_budget) {
          return GiveUp(key, c, FailureKind::kBackpressure, 0, hold.reason, attempt,
                        hold.remaining);
        }
        k.gate_waits.fetch_add(1, std::memory_order_relaxed);
        Emit({.name = "forward.gate_wait", .key = key, .reason = hold.reason,
              .attempt = attempt, .wait = hold.remaining, .wait_source = "gate",
              .begin = c.begin, .end = c.end,
              .message = "endpoint held by an earlier Retry-After"});
        SetWaiting(hold.reason, 0, hold.remaining);
        if (!sleeper_.SleepFor(hold.remaining, stop_)) return Stop(Aborted());
      }

      s_.SetState({.phase = State::Phase::kSending, .partition = partition_});
      k.chunks_sent.fetch_add(1, std::memory_order_relaxed);
      k.rows_sent.fetch_add(c.rows, std::memory_order_relaxed);
      k.bytes_sent.fetch_add(c.body.size(), std::memory_order_relaxed);
      k.wire_bytes_sent.fetch_add(wire.size(), std::memory_order_relaxed);
      const TransportResult tr = s_.transport_->Post(headers, wire);

      if (tr.error == TransportError::kAborted || stop_.stop_requested()) {
        return Stop(Aborted());
      }
      if (tr.error == TransportError::kTls) {
        r_.outcome = Outcome::kTlsError;
        r_.reason = "tls";
        r_.message = tr.message;
        Emit({.name = "forward.tls_error", .key = key, .reason = "tls",
              .message = tr.message});
        return Step::kStop;
      }

      FailureKind kind;
      int status = 0;
      std::string reason;
      std::optional<milliseconds> retry_after;
      std::string retry_after_raw;
      if (tr.error != TransportError::kNone) {
        k.transport_errors.fetch_add(1, std::memory_order_relaxed);
        kind = FailureKind::kTransport;
        reason = "transport_" + std::string(to_string(tr.error));
      } else {
        status = tr.response.status;
        r_.status = status;
        reason = ExtractReason(tr.response.body_prefix);
        if (status >= 200 && status < 300) {
          duplicate_ = ScanStringField(tr.response.body_prefix, "status") == "duplicate";
          return Step::kAcked;
        }
        if (status == 401) {
          if (!refreshed && s_.deps_.tokens) {
            refreshed = true;
            k.auth_refreshes.fetch_add(1, std::memory_order_relaxed);
            s_.token_ = s_.deps_.tokens(true);
            Emit({.name = "forward.auth_refresh", .key = key, .status = 401,
                  .reason = reason, .message = "401: asking for a fresh token"});
            if (s_.token_) {
              headers = Headers(key);
              continue;  // not a backoff attempt: re-send at once
            }
          }
          r_.outcome = Outcome::kAuthError;
          r_.reason = reason.empty() ? "unauthorized" : reason;
          r_.message = refreshed ? "401 again after a token refresh"
                                 : "401 and no token provider to refresh from";
          Emit({.name = "forward.auth_failed", .key = key, .status = 401,
                .reason = r_.reason, .message = r_.message});
          return Step::kStop;
        }
        if (status == 413 || status == 400 || status == 422) {
          // @ref LLP 0014#split-and-poison
          if (c.rows >= 2) {
            k.splits.fetch_add(1, std::memory_order_relaxed);
            Emit({.name = "forward.split", .key = key, .status = status, .reason = reason,
                  .begin = c.begin, .end = c.end,
                  .message = "splitting the chunk in two at a line boundary"});
            return Step::kSplit;
          }
          k.poisoned_chunks.fetch_add(1, std::memory_order_relaxed);
          r_.outcome = Outcome::kPoisoned;
          r_.status = status;
          r_.reason = reason.empty() ? "http_" + std::to_string(status) : reason;
          r_.poison_begin = c.begin;
          r_.poison_end = c.end;
          r_.poison_rows = c.rows;
          r_.message = "the server refuses row(s) at [" + std::to_string(c.begin) + ", " +
                       std::to_string(c.end) + ") with " + std::to_string(status);
          Emit({.name = "forward.poison", .key = key, .status = status, .reason = r_.reason,
                .begin = c.begin, .end = c.end, .message = r_.message});
          return Step::kStop;
        }
        if (status == 429 || status == 503) {
          (status == 429 ? k.status_429 : k.status_503).fetch_add(1, std::memory_order_relaxed);
          r_.throttled = true;
          kind = FailureKind::kBackpressure;
          if (tr.response.retry_after) {
            retry_after_raw = *tr.response.retry_after;
            retry_after = ParseRetryAfter(retry_after_raw, time_.SystemNow());
          }
        } else if (status >= 500) {
          k.other_5xx.fetch_add(1, std::memory_order_relaxed);
          kind = FailureKind::kServer;
        } else {
          // 404, 405, 415, 3xx...: retrying inline will not help; the driver classifies.
          r_.outcome = Outcome::kRespooled;
          r_.respool_reason = RespoolReason::kClientError;
          r_.reason = reason.empty() ? "http_" + std::to_string(status) : reason;
          r_.message = "unexpected HTTP " + std::to_string(status) + " for " + key;
          k.respools.fetch_add(1, std::memory_order_relaxed);
          Emit({.name = "forward.respool", .key = key, .status = status, .reason = r_.reason,
                .end = r_.resume_offset, .message = r_.message});
          return Step::kStop;
        }
        if (reason.empty()) reason = "http_" + std::to_string(status);
      }

      // Retry in place: same body, same key, after the decided wait.
      ++attempt;
      const auto elapsed = Since(first, time_.MonotonicNow());
      const WaitDecision d =
          DecideWait(o_.backpressure, attempt, retry_after, elapsed, s_.deps_.random);
      Emit({.name = "forward.backpressure", .key = key, .status = status, .reason = reason,
            .attempt = attempt, .wait = d.wait, .wait_source = to_string(d.source),
            .retry_after = retry_after_raw, .begin = c.begin, .end = c.end,
            .message = tr.error != TransportError::kNone ? tr.message : std::string{}});
      // The server's hold applies to every sender, even when this one gives up now:
      // the next partition must not hammer the endpoint. @ref LLP 0021#shared-gate
      if (d.source == WaitSource::kRetryAfter) {
        s_.deps_.gate->HoldUntil(time_.MonotonicNow() + d.wait, reason);
      }
      if (d.give_up) return GiveUp(key, c, kind, status, reason, attempt, d.wait);
      k.waits.fetch_add(1, std::memory_order_relaxed);
      k.wait_ms.fetch_add(static_cast<std::uint64_t>(d.wait.count()), std::memory_order_relaxed);
      SetWaiting(reason, status, d.wait);
      if (!sleeper_.SleepFor(d.wait, stop_)) return Stop(Aborted());
    }
  }

  Step GiveUp(const std::string& key, const Chunk& c, FailureKind kind, int status,
              const std::string& reason, std::size_t attempt, milliseconds would_wait) {
    auto& k = s_.counters_;
    k.budget_exhausted.fetch_add(1, std::memory_order_relaxed);
    k.respools.fetch_add(1, std::memory_order_relaxed);
    r_.outcome = Outcome::kRespooled;
    r_.respool_reason = RespoolFor(kind);
    r_.status = status;
    r_.reason = reason;
    r_.message = "inline budget of " + std::to_string(o_.backpressure.inline_budget.count()) +
                 " ms would be passed by a further " + std::to_string(would_wait.count()) +
                 " ms wait after " + std::to_string(attempt) + " attempt(s); resume at " +
                 std::to_string(r_.resume_offset);
    Emit({.name = "forward.give_up", .key = key, .status = status, .reason = reason,
          .attempt = attempt, .wait = would_wait, .begin = c.begin, .end = c.end,
          .message = r_.message});
    Emit({.name = "forward.respool", .key = key, .status = status,
          .reason = std::string(to_string(r_.respool_reason)), .end = r_.resume_offset,
          .message = r_.message});
    return Step::kStop;
  }

  Step Stop(ForwardResult&& r) {
    r_ = std::move(r);
    return Step::kStop;
  }

  void SetWaiting(const std::string& reason, int status, milliseconds wait) {
    s_.SetState({.phase = State::Phase::kWaiting, .partition = partition_, .reason = reason,
                 .status = status, .wait = wait, .until = time_.MonotonicNow() + wait});
  }

  ForwardSink& s_;
  const ForwardOptions& o_;
  const std::string partition_;
  const AckCallback& on_ack_;
  TimeSource& time_;
  Sleeper& sleeper_;
  std::stop_token stop_;
  ForwardResult r_;
  bool duplicate_ = false;
  std::uint64_t file_size_ = 0;  // of the partition, when opened
  const bool identity_ = o_.compression == Compression::kIdentity;
};

Result<std::unique_ptr<ForwardSink>> ForwardSink::Create(ForwardOptions options,
                                                         ForwardDeps deps) {
  if (Status e = Validate(options); !e.ok()) return e;
  Result<std::unique_ptr<HttpTransport>> made =
      HttpTransport::Create(options.url, options.transport);
  if (!made.ok()) return made.status().WithFieldPrefix("transport");
  std::unique_ptr<HttpTransport> transport = std::move(made).value();
  if (!deps.time) deps.time = &RealTimeSource();
  if (!deps.sleeper) deps.sleeper = &RealSleeper();
  if (!deps.gate) deps.gate = std::make_shared<EndpointGate>();
  return std::unique_ptr<ForwardSink>(
      new ForwardSink(std::move(options), std::move(deps), std::move(transport)));
}

ForwardSink::ForwardSink(ForwardOptions options, ForwardDeps deps,
                         std::unique_ptr<HttpTransport> t)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      transport_(std::move(t)),
      encoder_(options_.compression, options_.zstd_level),
      read_ahead_(std::make_unique<ReadAhead>()) {
  // Size the two chunk buffers for the configured chunk once: a buffer that grows mid-run
  // leaves its old block behind (LLP 0030#memory-step). Pages not yet written cost no RSS.
  for (Prepared* p : {&cur_, &ahead_}) {
    p->chunk.body.reserve(options_.chunker.chunk_bytes);
    if (options_.compression != Compression::kIdentity) {
      p->wire.reserve(options_.chunker.chunk_bytes / 2);
    }
  }
}

ForwardSink::~ForwardSink() = default;

ForwardResult ForwardSink::ForwardPartition(std::string_view partition,
                                            const std::filesystem::path& path,
                                            std::uint64_t begin, const AckCallback& on_ack) {
  return Run(*this, partition, on_ack).Go(path, begin);
}

void ForwardSink::Close() {
  // @ref LLP 0014#close
  stop_.request_stop();  // wakes a pause at once (stop_callback on the sleeper's cv)
  transport_->Abort();   // shuts the socket: connect, send or header wait fail at once
}

bool ForwardSink::closed() const { return stop_.stop_requested(); }

ForwardSink::State ForwardSink::state() const {
  std::lock_guard lock(state_mu_);
  return state_;
}

void ForwardSink::SetState(State s) {
  std::lock_guard lock(state_mu_);
  state_ = std::move(s);
}

}  // namespace fwdsink
