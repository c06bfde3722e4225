// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/forward_sink.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <utility>

#include "chunk_source.h"
#include "default_random.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/http_header.h"
#include "saturating.h"
#include "single_slot_worker.h"
#include "verdict.h"

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

std::string KeyOf(std::string_view partition, const Chunk& c) {
  return std::string(partition) + ":" + std::to_string(c.begin) + "-" + std::to_string(c.end);
}

void Add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

// What a verdict retried in place says about the endpoint: transport errors and 5xx
// are failures (a 503 too, unless it asks for a wait); the rest is backpressure, a
// reason to leave only when its wait is long. @ref LLP 0019#leave
HealthReport::Kind HealthKindFor(const Verdict& v) {
  switch (v.retry_cause) {
    case RetryCause::kTransport: return HealthReport::Kind::kFailed;
    case RetryCause::kServer:
      return v.status >= 500 ? HealthReport::Kind::kFailed : HealthReport::Kind::kHeld;
    case RetryCause::kBackpressure:
      return v.status == 503 && !v.retry_after ? HealthReport::Kind::kFailed
                                               : HealthReport::Kind::kHeld;
  }
  return HealthReport::Kind::kFailed;
}

}  // namespace

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::kDelivered: return "delivered";
    case Outcome::kRespooled: return "respooled";
    case Outcome::kPoisoned: return "poisoned";
    case Outcome::kAborted: return "aborted";
    case Outcome::kAuthError: return "auth_error";
    case Outcome::kTlsError: return "tls_error";
    case Outcome::kPartitionError: return "partition_error";
    case Outcome::kConfigError: return "config_error";
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
    case RespoolReason::kRequestRefused: return "request_refused";
  }
  return "unknown";
}

std::string_view to_string(EngineProfile p) {
  switch (p) {
    case EngineProfile::kGeneric: return "generic";
    case EngineProfile::kClickHouse: return "clickhouse";
  }
  return "unknown";
}

std::optional<EngineProfile> ParseEngineProfile(std::string_view text) {
  if (text == "generic") return EngineProfile::kGeneric;
  if (text == "clickhouse") return EngineProfile::kClickHouse;
  return std::nullopt;
}

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The request options of issue 10: extra headers, Basic auth, the key in the query,
// the response rules. @ref LLP 0017#request-options
Status ValidateRequestOptions(const ForwardOptions& o) {
  static constexpr std::string_view kOwned[] = {"Content-Type",   "Content-Encoding",
                                                "Content-Length", "Transfer-Encoding",
                                                "Host",           "Connection"};
  for (std::size_t i = 0; i < o.headers.size(); ++i) {
    const auto& [name, value] = o.headers[i];
    const std::string field = "headers[" + std::to_string(i) + "]";
    if (Status e = ValidateHeaderField(name, value, field); !e.ok()) return e;
    for (std::string_view owned : kOwned) {
      if (IEquals(name, owned)) return Status::Config(field, name + " is set by the sink itself");
    }
    if (IEquals(name, o.idempotency_header)) {
      return Status::Config(field, name + " is the idempotency header, set per chunk");
    }
    if (IEquals(name, "Authorization") && o.basic_auth) {
      return Status::Config(field, "Authorization is also set by basic_auth; choose one");
    }
  }
  if (o.basic_auth &&
      (o.basic_auth->user.empty() || o.basic_auth->user.find(':') != std::string::npos)) {
    return Status::Config("basic_auth", "the user name must be non-empty and without ':'");
  }
  if (o.basic_auth) {
    if (Status e = ValidateHeaderField("Authorization", o.basic_auth->user + o.basic_auth->password,
                                       "basic_auth");
        !e.ok()) {
      return e;
    }
  }
  if (!o.idempotency_query_param.empty() &&
      !std::all_of(o.idempotency_query_param.begin(), o.idempotency_query_param.end(),
                   IsTokenChar)) {
    return Status::Config("idempotency_query_param", "must be a plain query parameter name");
  }
  if (!o.send_idempotency_header && o.idempotency_query_param.empty()) {
    return Status::Config(
        "send_idempotency_header",
        "the key must go somewhere: keep the header or set idempotency_query_param");
  }
  for (int s : o.responses.retry_statuses) {
    if (s < 300 || s > 599 || s == 401 || s == 429 || s == 503) {
      return Status::Config("responses.retry_statuses",
                            std::to_string(s) + " cannot be listed (3xx-5xx, not 401/429/503)");
    }
  }
  return OkStatus();
}

}  // namespace

std::vector<std::string> EndpointUrls(const ForwardOptions& o) {
  std::vector<std::string> urls{o.url};
  urls.insert(urls.end(), o.fallback_urls.begin(), o.fallback_urls.end());
  return urls;
}

namespace {

// The fallback URLs and the failover policy. @ref LLP 0019
Status ValidateEndpoints(const ForwardOptions& o) {
  for (std::size_t i = 0; i < o.fallback_urls.size(); ++i) {
    const std::string field = "fallback_urls[" + std::to_string(i) + "]";
    if (Result<Endpoint> ep = ParseEndpoint(o.fallback_urls[i]); !ep.ok()) {
      return Status::Config(field, ep.status().message());
    }
    const std::vector<std::string> urls = EndpointUrls(o);
    if (std::find(urls.begin(), urls.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  o.fallback_urls[i]) != urls.begin() + static_cast<std::ptrdiff_t>(i) + 1) {
      return Status::Config(field, "repeats an earlier URL");
    }
  }
  if (Status e = Validate(o.failover); !e.ok()) return e.WithFieldPrefix("failover");
  return OkStatus();
}

}  // namespace

Status Validate(const ForwardOptions& o) {
  if (Result<Endpoint> ep = ParseEndpoint(o.url); !ep.ok()) return ep.status();
  if (Status e = ValidateEndpoints(o); !e.ok()) return e;
  if (Status e = ValidateRequestOptions(o); !e.ok()) return e;
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
  if (o.transport.min_throughput_bytes_per_s == 0) {
    return Status::Config("transport.min_throughput_bytes_per_s", "must be positive");
  }
  if (o.transport.response_timeout <= milliseconds::zero()) {
    return Status::Config("transport.response_timeout", "must be positive");
  }
  if (o.transport.body_prefix_bytes < 256) {
    return Status::Config("transport.body_prefix_bytes", "must be at least 256");
  }
  if (o.label.empty()) return Status::Config("label", "must not be empty");
  if (o.max_split_requests == 0) return Status::Config("max_split_requests", "must be positive");
  return OkStatus();
}

// The Basic Authorization value from the options, else from the URL's userinfo.
std::string BasicAuthorizationFor(const ForwardOptions& o, const Endpoint& ep) {
  if (o.basic_auth) return BasicAuthorization(o.basic_auth->user, o.basic_auth->password);
  if (ep.username) return BasicAuthorization(*ep.username, ep.password.value_or(""));
  return {};
}

// What a sink keeps per endpoint: its own connection and the token it got.
struct EndpointLink {
  std::unique_ptr<HttpTransport> transport;
  std::optional<std::string> token = {};  // sender thread only
  bool token_reload = false;              // credentials reloaded: ask with a refresh
  std::string basic_authorization = {};   // "Basic ..." or empty; never logged
};

// Everything a sink keeps between calls; the public class is its handle.
struct ForwardSink::Impl {
  Impl(ForwardOptions o, ForwardDeps d, std::vector<EndpointLink> l)
      : options(std::move(o)),
        deps(std::move(d)),
        links(std::move(l)),
        encoder(options.compression, options.zstd_level),
        headers(options.headers) {
    buffers.Reserve(options.chunker.chunk_bytes, options.compression != Compression::kIdentity);
    for (EndpointLink& link : links) {
      link.basic_authorization = BasicAuthorizationFor(options, link.transport->endpoint());
    }
  }

  void SetState(State s) {
    std::lock_guard lock(state_mu);
    state = std::move(s);
  }

  const ForwardOptions options;
  ForwardDeps deps;
  std::vector<EndpointLink> links;  // one per endpoint, in deps.endpoints' order; fixed
  Encoder encoder;                  // sender thread, or the read-ahead job while it runs
  ChunkBuffers buffers;             // sender thread, or the read-ahead job (buffers.ahead)
  // The extra headers: the options' until a newer generation of deps.credentials
  // replaces them (each link's "Basic ..." likewise). Sender thread only; never logged.
  HeaderList headers;
  std::uint64_t credentials_seen = 0;  // sender thread only
  std::stop_source stop;
  Counters counters;
  mutable std::mutex state_mu;
  State state;                  // guarded by state_mu
  SingleSlotWorker read_ahead;  // last: joined before the buffers it fills go away
};

// One ForwardPartition call: "next chunk, send until a verdict ends it, ack", and the
// effects of every verdict (counters, events, state, waits, the result). What a
// response means is decided by Classify() alone. @ref LLP 0014#core
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
        time_(*sink.deps.time),
        sleeper_(*sink.deps.sleeper),
        stop_(sink.stop.get_token()) {}

  ForwardResult Forward(const std::filesystem::path& path, std::uint64_t begin) {
    result_.resume_offset = begin;
    if (stop_.stop_requested()) {
      Aborted();
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
        if (!Shrunk(path)) Delivered();
        break;
      }
      if (next != SourceStatus::kChunk) {
        if (!Shrunk(path)) SourceFailed(source, next);
        break;
      }
      if (SendUntilVerdictEnds(source) == ChunkEnd::kStop) break;
    }
    return Finish();
  }

 private:
  // How a chunk's attempts ended: on to the next chunk, or stop the partition.
  enum class ChunkEnd { kNext, kStop };

  // The attempts of one chunk so far.
  struct Sending {
    std::string key;
    std::string query{};      // "name=key" for the URL (--key-param), or empty
    MonotonicTime first{};    // the first attempt: the inline budget counts from here
    std::size_t attempt = 0;  // failed attempts that waited (not token refreshes)
    bool refreshed = false;   // a 401 made us refresh the token already
  };

  ForwardResult Finish() {
    sink_.SetState({});
    return std::move(result_);
  }

  void Delivered() {
    result_.outcome = Outcome::kDelivered;
    Add(counters_.partitions_delivered);
    Emit({.name = events::kForwardDelivered,
          .end = result_.resume_offset,
          .message = "partition delivered"});
  }

  // A sealed partition never changes: one smaller now than at open was cut under us (a
  // contract violation, not a delivery and not a torn row). The driver quarantines it;
  // the message has the true counts. @ref LLP 0023#shrunk
  bool Shrunk(const std::filesystem::path& path) {
    std::error_code ec;
    const std::uint64_t now = std::filesystem::file_size(path, ec);
    if (ec || now >= file_size_) return false;
    result_.outcome = Outcome::kPartitionError;
    result_.reason = std::string(kShrunkReason);
    result_.message = "partition shrank while being sent: " + std::to_string(file_size_) +
                      " bytes at hand-over, " + std::to_string(result_.resume_offset) +
                      " sent and acknowledged, " + std::to_string(now) + " now";
    Emit({.name = events::kForwardError,
          .reason = result_.reason,
          .begin = result_.resume_offset,
          .end = now,
          .message = result_.message});
    return true;
  }

  // Close() was called: the cursor stays at the last acknowledged chunk.
  ChunkEnd Aborted() {
    result_.outcome = Outcome::kAborted;
    result_.message = "closed";
    Add(counters_.aborts);
    Emit({.name = events::kForwardAborted,
          .end = result_.resume_offset,
          .message = "close() aborted the partition; cursor kept"});
    return ChunkEnd::kStop;
  }

  void SourceFailed(ChunkSource& source, SourceStatus status) {
    result_.outcome = Outcome::kPartitionError;
    if (status == SourceStatus::kEncodeError) {
      const std::string key = KeyOf(partition_, source.chunk());
      result_.reason = "encode_failed";
      result_.message = "compressing chunk " + key + " failed: " + source.encode_error();
      Emit({.name = events::kForwardError,
            .key = key,
            .reason = result_.reason,
            .message = result_.message});
      return;
    }
    const Chunker& chunker = source.chunker();
    result_.reason = std::string(to_string(chunker.error()));
    result_.message = chunker.error_message();
    Emit({.name = events::kForwardError,
          .reason = result_.reason,
          .begin = chunker.error_offset(),
          .message = result_.message});
  }

  void Emit(Event e) {
    if (!sink_.deps.on_event) return;
    e.label = options_.label;
    e.partition = partition_;
    if (sink_.deps.endpoints->size() > 1) e.endpoint = Entry().name;
    sink_.deps.on_event(e);
  }

  HeaderList Headers(const std::string& key) const {
    HeaderList h = {{"Content-Type", "application/x-ndjson"},
                    {"User-Agent", "fwdsink/" FWDSINK_VERSION}};
    // No Content-Encoding at all without compression. @ref LLP 0017#no-identity
    if (const auto ce = sink_.encoder.content_encoding(); !ce.empty()) {
      h.emplace_back("Content-Encoding", std::string(ce));
    }
    if (options_.send_idempotency_header) h.emplace_back(options_.idempotency_header, key);
    h.insert(h.end(), sink_.headers.begin(), sink_.headers.end());
    if (Link().token) {
      h.emplace_back("Authorization", "Bearer " + *Link().token);
    } else if (!Link().basic_authorization.empty()) {
      h.emplace_back("Authorization", Link().basic_authorization);
    }
    return h;
  }

  // Sends the current chunk, identical bytes under an identical key on every attempt,
  // until a verdict ends it. @ref LLP 0014#retry-in-place
  ChunkEnd SendUntilVerdictEnds(ChunkSource& source) {
    const Chunk& c = source.chunk();
    Sending sending{.key = KeyOf(partition_, c), .first = time_.MonotonicNow()};
    // Built once per chunk: every re-send carries the identical key.
    if (!options_.idempotency_query_param.empty()) {
      sending.query = options_.idempotency_query_param + "=" + PercentEncode(sending.key);
    }
    // Reloaded credentials apply from a chunk's first attempt on. @ref LLP 0024#reload
    TakeNewCredentials();
    HeaderList headers;  // built by UseEndpoint: first attempt, and on every move
    for (;;) {
      if (stop_.stop_requested()) return Aborted();
      if (!UseEndpoint(sending, headers)) return ChunkEnd::kStop;
      const GateEnd gate = WaitForGate(sending, c);
      if (gate == GateEnd::kStop) return ChunkEnd::kStop;
      if (gate == GateEnd::kMoved) continue;
      if (!WaitForPacer(sending, c, source.wire().size())) return ChunkEnd::kStop;
      Attempt attempt = Send(headers, source, sending);
      Verdict verdict = Classify(attempt, options_.responses);
      if (stop_.stop_requested()) return Aborted();
      Count(verdict);
      if (verdict.action == Action::kAcknowledge) {
        Entry().pacer->OnAccepted(time_.MonotonicNow(), source.wire().size(), verdict.quota);
        ReportPacing();
        ShrinkToBurst(source);
        ReportHealth(HealthReport::Kind::kAccepted, milliseconds::zero(), sending, verdict);
      }
      if (verdict.action == Action::kRetryInPlace) {
        if (!WaitToRetry(verdict, sending, c)) return ChunkEnd::kStop;
        continue;
      }
      if (verdict.action == Action::kRefreshToken) {
        if (RefreshToken(verdict, sending)) {
          if (!TokenIsSafe(sending)) return ChunkEnd::kStop;
          headers = Headers(sending.key);
          continue;  // not a backoff attempt: re-send at once
        }
        attempt.token_refresh_tried = true;  // the provider had no token: an auth error
        verdict = Classify(attempt, options_.responses);
      }
      return Conclude(verdict, source, sending);
    }
  }

  // Picks the endpoint of the next attempt: the one in use, or the primary when a probe
  // is due. On the chunk's first attempt and on every change of endpoint, hands that
  // endpoint's token over (checked once) and builds the headers. @ref LLP 0019#states
  bool UseEndpoint(Sending& sending, HeaderList& headers) {
    const EndpointHealth::Choice choice =
        sink_.deps.endpoints->Choose(time_.MonotonicNow(), &moves_seen_);
    const bool changed = headers.empty() || choice.endpoint != ep_;
    if (choice.endpoint != ep_) sending.refreshed = false;  // a 401 is per endpoint
    ep_ = choice.endpoint;
    probe_ = choice.probe;
    counters_.endpoint_in_use.store(ep_, std::memory_order_relaxed);
    if (probe_) {
      Add(counters_.probes);
      Add(Entry().counters.probes);
    }
    if (!changed) return true;
    // A token is checked once, when it is handed over (here or after a refresh).
    if (Entry().tokens && !Link().token) {
      Link().token = Entry().tokens(std::exchange(Link().token_reload, false));
      if (!TokenIsSafe(sending)) return false;
    }
    headers = Headers(sending.key);
    return true;
  }

  // Tells the endpoints what the request to ep_ came to; carries a move out (counters,
  // an event). The request is no probe any more once reported.
  HealthDecision ReportHealth(HealthReport::Kind kind, milliseconds wait, const Sending& sending,
                              const Verdict& v) {
    const HealthDecision d =
        sink_.deps.endpoints->Report({.endpoint = ep_, .kind = kind, .probe = probe_, .wait = wait},
                                     time_.MonotonicNow(), &moves_seen_);
    probe_ = false;
    if (kind == HealthReport::Kind::kFailed) Add(Entry().counters.failures);
    if (kind == HealthReport::Kind::kHeld) Add(Entry().counters.holds);
    Event e{.key = sending.key, .status = v.status, .reason = v.reason};
    const std::string& to = sink_.deps.endpoints->at(d.active).name;
    switch (d.move) {
      case HealthDecision::Move::kStay: return d;
      case HealthDecision::Move::kFailover:
        Add(counters_.failovers);
        Add(Entry().counters.left);
        e.name = events::kForwardFailover;
        e.reason = kind == HealthReport::Kind::kFailed ? "failures" : "hold";
        e.wait = wait;
        e.message = "left " + Entry().name + " for " + to + " (" +
                    (v.reason.empty() ? std::string(e.reason) : v.reason) + ")";
        break;
      case HealthDecision::Move::kFailback:
        Add(counters_.failbacks);
        e.name = events::kForwardFailback;
        e.message = "the primary " + to + " answered a probe: in use again";
        break;
      case HealthDecision::Move::kProbeFailed:
        Add(counters_.probe_failures);
        e.name = events::kForwardProbeFailed;
        e.message = "the primary " + Entry().name + " failed a probe; " + to + " stays in use";
        break;
    }
    Emit(std::move(e));
    return d;
  }

  // Takes a newer generation of published credentials, if any: every endpoint's token is
  // asked afresh; a set with an unsafe header value is not taken (the old one stays): it
  // would inject headers. @ref LLP 0023#header-safety
  void TakeNewCredentials() {
    if (!sink_.deps.credentials) return;
    std::optional<RequestCredentials> fresh =
        sink_.deps.credentials->TakeIfNewer(sink_.credentials_seen);
    if (!fresh) return;
    // The token is asked afresh on every endpoint (the file may have been rotated).
    for (EndpointLink& link : sink_.links) {
      link.token.reset();
      link.token_reload = true;
    }
    for (const auto& [name, value] : fresh->headers) {
      if (!ValidateHeaderField(name, value, "reloaded header").ok()) return;
    }
    if (fresh->basic_authorization &&
        !ValidateHeaderValue(*fresh->basic_authorization, "reloaded basic auth").ok()) {
      return;
    }
    sink_.headers = std::move(fresh->headers);
    for (EndpointLink& link : sink_.links) {
      link.basic_authorization =
          fresh->basic_authorization
              ? *fresh->basic_authorization
              : BasicAuthorizationFor(ForwardOptions{}, link.transport->endpoint());
    }
  }

  // A token with CR, LF, NUL or another control byte would inject headers: it is a
  // configuration error, and nothing is sent with it. @ref LLP 0023#header-safety
  bool TokenIsSafe(const Sending& sending) {
    if (!Link().token) return true;
    const Status bad = ValidateHeaderValue("Bearer " + *Link().token, "token provider");
    if (bad.ok()) return true;
    Link().token.reset();  // ask again next time: the file may have been fixed
    result_.outcome = Outcome::kAuthError;
    result_.reason = "bad_token_value";
    result_.message = bad.message() + "; nothing sent";
    Emit({.name = events::kForwardAuthFailed,
          .key = sending.key,
          .reason = result_.reason,
          .message = result_.message});
    return false;
  }

  // Posts the chunk once and describes what came back for Classify().
  Attempt Send(const HeaderList& headers, ChunkSource& source, const Sending& sending) {
    const Chunk& c = source.chunk();
    std::string& wire = source.wire();
    NoteSplitRequest(c);
    sink_.SetState({.phase = State::Phase::kSending, .partition = partition_});
    Add(counters_.chunks_sent);
    Add(Entry().counters.chunks_sent);
    Add(counters_.rows_sent, c.rows);
    Add(counters_.bytes_sent, c.body.size());
    Add(counters_.wire_bytes_sent, wire.size());
    // The request may take what is left of the inline budget, no more. @ref LLP 0023#deadlines
    const auto left =
        options_.backpressure.inline_budget - Since(sending.first, time_.MonotonicNow());
    const MonotonicTime posted = time_.MonotonicNow();
    last_ = Link().transport->Post(headers, wire, sending.query, PostLimits{.time_left = left});
    if (sink_.deps.latency) sink_.deps.latency->Observe(time_.MonotonicNow() - posted);
    Attempt a{.error = last_.error,
              .error_message = last_.message,
              .status = last_.response.status,
              .body_prefix = last_.response.body_prefix,
              .rows = c.rows,
              .token_refresh_tried = sending.refreshed,
              .has_token_provider = static_cast<bool>(Entry().tokens),
              .now = time_.SystemNow(),
              .rate_limit = &last_.response.rate_limit};
    if (last_.response.retry_after) a.retry_after = *last_.response.retry_after;
    if (last_.response.clickhouse_exception_code) {
      a.clickhouse_exception_code = *last_.response.clickhouse_exception_code;
    }
    DescribeRefusedRow(a, c);
    return a;
  }

  // ---- Split bookkeeping: which refused chunk the current bisection started from,
  // whether the server took any part of it, and how many requests bisection spent.
  // @ref LLP 0023#request-level-refusals

  // Counts a request made inside a bisection; notices when the bisection is over.
  void NoteSplitRequest(const Chunk& c) {
    if (split_.active && c.begin >= split_.end) split_ = {};
    if (split_.active) ++split_requests_;
  }

  // Starts a bisection at `c` unless one covering it runs already.
  void NoteSplit(const Chunk& c) {
    if (split_.active) return;
    split_ = {.active = true, .end = c.end, .acked = false};
    ++split_requests_;  // the refused request itself
  }

  void NoteAcked(const Chunk& c) {
    if (split_.active && c.end <= split_.end) split_.acked = true;
  }

  // Adds the facts Classify() needs about a refused single row.
  void DescribeRefusedRow(Attempt& a, const Chunk& c) const {
    if (a.error != TransportError::kNone || c.rows != 1) return;
    if (a.status != 400 && a.status != 422) return;
    a.row_is_json = nlohmann::json::accept(c.body);
    a.split_tree_acked = split_.active && split_.acked;
  }

  // Counts what came back, whatever is done about it next.
  void Count(const Verdict& v) {
    if (last_.error == TransportError::kNone) result_.status = v.status;
    if (v.action == Action::kStop && v.stop == StopCause::kConfig) Add(counters_.config_errors);
    if (v.action != Action::kRetryInPlace) return;
    switch (v.retry_cause) {
      case RetryCause::kTransport: Add(counters_.transport_errors); break;
      case RetryCause::kServer:
        Add(v.status >= 500 ? counters_.other_5xx : counters_.retried_4xx);
        break;
      case RetryCause::kBackpressure:
        if (v.status != 429 && v.status != 503) {
          Add(counters_.engine_overload);  // an engine's code, e.g. ClickHouse 252
          result_.throttled = true;
          break;
        }
        Add(v.status == 429 ? counters_.status_429 : counters_.status_503);
        result_.throttled = true;
        break;
    }
  }

  // How a wait on the gate ended: send, try the endpoint now in use, or stop.
  enum class GateEnd { kGo, kMoved, kStop };

  // One backoff per resource: honours a hold another sender's Retry-After set. A hold
  // longer than failover_after leaves the endpoint when another is not known down
  // (kMoved). kStop when the partition stops (the hold passes the budget, or Close()).
  GateEnd WaitForGate(const Sending& sending, const Chunk& c) {
    auto hold = Entry().gate->Remaining(time_.MonotonicNow());
    if (hold.remaining <= milliseconds::zero()) return GateEnd::kGo;
    if (sink_.deps.endpoints->size() > 1 && hold.remaining > options_.failover.failover_after) {
      const Verdict held{.action = Action::kRetryInPlace, .reason = hold.reason};
      if (ReportHealth(HealthReport::Kind::kHeld, hold.remaining, sending, held).resend_now) {
        return GateEnd::kMoved;
      }
    }
    // Senders held together are let go apart; a hold is only lengthened.
    // @ref LLP 0016#jitter
    hold.remaining = JitterLonger(hold.remaining, options_.backpressure.jitter, sink_.deps.random);
    const auto elapsed = Since(sending.first, time_.MonotonicNow());
    if (SaturatingAdd(elapsed, hold.remaining) > options_.backpressure.inline_budget) {
      const Verdict held{.action = Action::kRetryInPlace,
                         .reason = hold.reason,
                         .retry_cause = RetryCause::kBackpressure};
      GiveUp(held, sending, c, hold.remaining);
      return GateEnd::kStop;
    }
    Add(counters_.gate_waits);
    Emit({.name = events::kForwardGateWait,
          .key = sending.key,
          .reason = hold.reason,
          .attempt = sending.attempt,
          .wait = hold.remaining,
          .wait_source = "gate",
          .begin = c.begin,
          .end = c.end,
          .message = "endpoint held by an earlier Retry-After"});
    SetWaiting(hold.reason, 0, hold.remaining);
    switch (SleepOnEndpoint(hold.remaining)) {
      case Slept::kElapsed: return GateEnd::kGo;
      case Slept::kLeft: return GateEnd::kMoved;
      case Slept::kStopped: Aborted(); return GateEnd::kStop;
    }
    return GateEnd::kStop;
  }

  // How a wait on the endpoint in use ended.
  enum class Slept { kElapsed, kLeft, kStopped };

  // Sleeps `wait` on ep_; Close() cuts it short (kStopped), and so does a failover that
  // leaves ep_ (kLeft: the caller re-sends where requests now go). @ref LLP 0019#wake
  Slept SleepOnEndpoint(milliseconds wait) {
    const Endpoints::Waiting on = sink_.deps.endpoints->WaitOn(ep_, moves_seen_, stop_);
    if (!on.left() && sleeper_.SleepFor(wait, on.token())) return Slept::kElapsed;
    return stop_.stop_requested() ? Slept::kStopped : Slept::kLeft;
  }

  // Proactive pacing: waits for the endpoint pacer's slot, after any gate hold (so it
  // never shortens one). Returns false when the partition stops (the wait passes the
  // budget, or Close()). @ref LLP 0016#pacer
  bool WaitForPacer(const Sending& sending, const Chunk& c, std::size_t wire_bytes) {
    const milliseconds wait = Entry().pacer->Reserve(time_.MonotonicNow(), wire_bytes);
    if (wait <= milliseconds::zero()) return true;
    const auto elapsed = Since(sending.first, time_.MonotonicNow());
    const PaceRate rate = Entry().pacer->Current(time_.MonotonicNow());
    const std::string source(to_string(rate.source));
    if (SaturatingAdd(elapsed, wait) > options_.backpressure.inline_budget) {
      const Verdict paced{.action = Action::kRetryInPlace,
                          .reason = "pacing_" + source,
                          .retry_cause = RetryCause::kBackpressure};
      GiveUp(paced, sending, c, wait);
      return false;
    }
    Add(counters_.pacer_waits);
    Add(counters_.pacer_wait_ms, static_cast<std::uint64_t>(wait.count()));
    if (wait >= std::chrono::seconds{1}) {
      Emit({.name = events::kForwardPaceWait,
            .key = sending.key,
            .reason = source,
            .attempt = sending.attempt,
            .wait = wait,
            .wait_source = "pacer",
            .begin = c.begin,
            .end = c.end,
            .message = "paced to the endpoint's rate"});
      SetWaiting("pacing (" + source + ")", 0, wait);
    }
    if (!sleeper_.SleepFor(wait, stop_)) {
      Aborted();
      return false;
    }
    return true;
  }

  // A chunk larger on the wire than the server's advertised burst can never be paced
  // into it: later chunks shrink (raw size scaled by this chunk's compression ratio),
  // down to a floor. Chunks already read keep their bytes and key. @ref LLP 0016#shrink
  void ShrinkToBurst(ChunkSource& source) {
    const std::uint64_t burst = Entry().pacer->Current(time_.MonotonicNow()).burst_bytes;
    const std::size_t wire = source.wire().size();
    if (burst == 0 || wire <= burst) return;
    const double raw_per_wire =
        static_cast<double>(source.chunk().body.size()) / static_cast<double>(wire);
    const auto limit = static_cast<std::size_t>(static_cast<double>(burst) * raw_per_wire);
    const std::size_t floor = Entry().pacer->policy().min_chunk_bytes;
    source.LimitChunkBytes(std::max(limit, floor));
  }

  // Publishes the pacing rate in the gauges, and as an event when it changed source or
  // moved by a quarter or more since last reported.
  void ReportPacing() {
    const PaceRate r = Entry().pacer->Current(time_.MonotonicNow());
    const auto bytes = static_cast<std::uint64_t>(r.bytes_per_s);
    const auto requests = static_cast<std::uint64_t>(std::ceil(r.requests_per_s));
    counters_.pacing_bytes_per_s.store(bytes, std::memory_order_relaxed);
    counters_.pacing_requests_per_s.store(requests, std::memory_order_relaxed);
    const auto previous = counters_.pacing_source.exchange(static_cast<std::uint64_t>(r.source),
                                                           std::memory_order_relaxed);
    // The request rate exactly, also under one a second. @ref LLP 0023#rate-limit-remaining
    const auto interval = r.requests_per_s > 0
                              ? static_cast<std::uint64_t>(std::llround(1000 / r.requests_per_s))
                              : 0;
    const auto moved_by_a_quarter = [](std::uint64_t now, std::uint64_t then) {
      return now > then * 5 / 4 || now < then * 3 / 4;
    };
    const bool moved = moved_by_a_quarter(bytes, reported_bytes_) ||
                       moved_by_a_quarter(interval, reported_interval_ms_);
    if (previous == static_cast<std::uint64_t>(r.source) && !moved) return;
    reported_bytes_ = bytes;
    reported_interval_ms_ = interval;
    Emit({.name = events::kForwardPacing,
          .reason = std::string(to_string(r.source)),
          .message = "pacing rate changed",
          .rate_bytes_per_s = bytes,
          .rate_requests_per_s = requests,
          .request_interval_ms = interval});
  }

  // Retry in place: same body, same key, after the decided wait. Returns false when
  // the partition stops (the wait passes the budget, or Close()).
  bool WaitToRetry(const Verdict& v, Sending& sending, const Chunk& c) {
    ++sending.attempt;
    const auto elapsed = Since(sending.first, time_.MonotonicNow());
    const WaitDecision d = DecideWait(options_.backpressure, sending.attempt, v.retry_after,
                                      elapsed, sink_.deps.random);
    Emit({.name = events::kForwardBackpressure,
          .key = sending.key,
          .status = v.status,
          .reason = v.reason,
          .attempt = sending.attempt,
          .wait = d.wait,
          .wait_source = to_string(d.source),
          .retry_after = v.retry_after_raw,
          .begin = c.begin,
          .end = c.end,
          .message = v.message});
    // The server's hold applies to every sender, even when this one gives up now:
    // the next partition must not hammer the endpoint. @ref LLP 0021#shared-gate
    if (d.source == WaitSource::kRetryAfter) {
      Entry().gate->HoldUntil(time_.MonotonicNow() + d.wait, v.reason);
    }
    if (v.retry_cause == RetryCause::kBackpressure) {
      Entry().pacer->OnRefused(time_.MonotonicNow(), d.wait, v.quota);
      ReportPacing();
    }
    // Left for an endpoint not known down: the same chunk goes there at once.
    // @ref LLP 0019#leave
    if (ReportHealth(HealthKindFor(v), d.wait, sending, v).resend_now &&
        elapsed < options_.backpressure.inline_budget) {
      return true;
    }
    if (d.give_up) {
      GiveUp(v, sending, c, d.wait);
      return false;
    }
    Add(counters_.waits);
    Add(counters_.wait_ms, static_cast<std::uint64_t>(d.wait.count()));
    SetWaiting(v.reason, v.status, d.wait);
    if (SleepOnEndpoint(d.wait) == Slept::kStopped) {
      Aborted();
      return false;
    }
    return true;  // elapsed, or left by a failover: the same chunk goes out again
  }

  // Asks the provider for a fresh token, once per chunk; returns whether it gave one.
  bool RefreshToken(const Verdict& v, Sending& sending) {
    sending.refreshed = true;
    Add(counters_.auth_refreshes);
    Link().token = Entry().tokens(true);
    Emit({.name = events::kForwardAuthRefresh,
          .key = sending.key,
          .status = v.status,
          .reason = v.reason,
          .message = v.message});
    return Link().token.has_value();
  }

  // The inline budget would be passed by the next wait: respool, cursor kept.
  void GiveUp(const Verdict& v, const Sending& sending, const Chunk& c, milliseconds would_wait) {
    Add(counters_.budget_exhausted);
    Add(counters_.respools);
    result_.outcome = Outcome::kRespooled;
    result_.respool_reason = RespoolReasonFor(v.retry_cause);
    result_.status = v.status;
    result_.reason = v.reason;
    result_.message = "inline budget of " +
                      std::to_string(options_.backpressure.inline_budget.count()) +
                      " ms would be passed by a further " + std::to_string(would_wait.count()) +
                      " ms wait after " + std::to_string(sending.attempt) +
                      " attempt(s); resume at " + std::to_string(result_.resume_offset);
    Emit({.name = events::kForwardGiveUp,
          .key = sending.key,
          .status = v.status,
          .reason = v.reason,
          .attempt = sending.attempt,
          .wait = would_wait,
          .begin = c.begin,
          .end = c.end,
          .message = result_.message});
    Emit({.name = events::kForwardRespool,
          .key = sending.key,
          .status = v.status,
          .reason = std::string(to_string(result_.respool_reason)),
          .end = result_.resume_offset,
          .message = result_.message});
  }

  // Carries out a verdict that ends the chunk's attempts.
  ChunkEnd Conclude(const Verdict& v, ChunkSource& source, const Sending& sending) {
    const Chunk& c = source.chunk();
    switch (v.action) {
      case Action::kAcknowledge: return Acked(c, v.duplicate) ? ChunkEnd::kNext : ChunkEnd::kStop;
      case Action::kSplit:
        if (split_requests_ >= options_.max_split_requests) {
          return RequestRefused(v, c, sending,
                                "bisection spent its " +
                                    std::to_string(options_.max_split_requests) +
                                    " requests without isolating a row");
        }
        NoteSplit(c);
        Add(counters_.splits);
        Emit({.name = events::kForwardSplit,
              .key = sending.key,
              .status = v.status,
              .reason = v.reason,
              .begin = c.begin,
              .end = c.end,
              .message = v.message});
        source.SplitCurrent();
        return ChunkEnd::kNext;
      case Action::kPoison: return Poisoned(v, c, sending);
      case Action::kRespool:
        if (v.respool_reason == RespoolReason::kRequestRefused) {
          return RequestRefused(v, c, sending, v.message);
        }
        return RespoolClientError(v, sending);
      case Action::kStop: return Stopped(v, sending);
      case Action::kRetryInPlace:
      case Action::kRefreshToken: break;  // handled by the send loop; never concluded here
    }
    FWDSINK_CHECK(false);
    return ChunkEnd::kStop;
  }

  // Counts an acknowledged chunk and hands its cursor to the ack callback.
  bool Acked(const Chunk& c, bool duplicate) {
    NoteAcked(c);
    Add(counters_.chunks_acked);
    counters_.last_ack_time_ms.store(
        static_cast<std::uint64_t>(
            std::chrono::duration_cast<milliseconds>(time_.SystemNow().time_since_epoch()).count()),
        std::memory_order_relaxed);
    Add(counters_.rows_acked, c.rows);
    Add(counters_.bytes_acked, c.body.size());
    Add(Entry().counters.chunks_acked);
    Add(Entry().counters.bytes_acked, c.body.size());
    result_.chunks_acked += 1;
    result_.rows_acked += c.rows;
    result_.bytes_acked += c.body.size();
    return Advance(c, /*duplicate=*/duplicate, /*dead_lettered=*/false);
  }

  // Moves the cursor past `c` by the one route: the ack callback.
  bool Advance(const Chunk& c, bool duplicate, bool dead_lettered) {
    result_.resume_offset = c.end;
    const bool final = c.end >= file_size_;
    const bool inside_split = split_.active && c.end < split_.end;
    if (!on_ack_ || on_ack_(AckedChunk{partition_, c.begin, c.end, c.rows, duplicate, final,
                                       dead_lettered, inside_split})) {
      return true;
    }
    result_.outcome = Outcome::kRespooled;
    result_.respool_reason = RespoolReason::kCursorNotSaved;
    result_.message = "the cursor could not be persisted after offset " + std::to_string(c.end);
    Add(counters_.respools);
    Emit({.name = events::kForwardRespool,
          .reason = "cursor_not_saved",
          .end = c.end,
          .message = result_.message});
    return false;
  }

  // A single row the server refuses: hand its bytes to the poison callback; once they
  // are durably in dead letters, move on past them. @ref LLP 0014#core
  ChunkEnd Poisoned(const Verdict& v, const Chunk& c, const Sending& sending) {
    Add(counters_.poisoned_chunks);
    result_.outcome = Outcome::kPoisoned;
    result_.status = v.status;
    result_.reason = v.reason;
    result_.poison_begin = c.begin;
    result_.poison_end = c.end;
    result_.poison_rows = c.rows;
    result_.message = "the server refuses row(s) at [" + std::to_string(c.begin) + ", " +
                      std::to_string(c.end) + ") with " + std::to_string(v.status);
    Emit({.name = events::kForwardPoison,
          .key = sending.key,
          .status = v.status,
          .reason = v.reason,
          .begin = c.begin,
          .end = c.end,
          .message = result_.message});
    if (!on_poison_) return ChunkEnd::kStop;
    if (!on_poison_(
            PoisonedChunk{partition_, c.begin, c.end, c.rows, v.status, v.reason, c.body})) {
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

  // 404, 405, 415, 3xx...: not retried inline; the driver classifies.
  ChunkEnd RespoolClientError(const Verdict& v, const Sending& sending) {
    result_.outcome = Outcome::kRespooled;
    result_.respool_reason = v.respool_reason;
    result_.reason = v.reason;
    result_.server_message = v.server_message;
    result_.message = v.message + " for " + sending.key;
    if (!v.server_message.empty()) result_.message += ": " + v.server_message;
    Add(counters_.respools);
    Emit({.name = events::kForwardRespool,
          .key = sending.key,
          .status = v.status,
          .reason = v.reason,
          .end = result_.resume_offset,
          .message = result_.message});
    return ChunkEnd::kStop;
  }

  // The server refuses the request, not the data: respool (the driver backs off), an
  // error event naming the status and the server's reason, nothing dead-lettered.
  ChunkEnd RequestRefused(const Verdict& v, const Chunk& c, const Sending& sending,
                          const std::string& why) {
    Add(counters_.request_refusals);
    Add(counters_.respools);
    result_.outcome = Outcome::kRespooled;
    result_.respool_reason = RespoolReason::kRequestRefused;
    result_.status = v.status;
    result_.reason = v.reason.empty() ? "http_" + std::to_string(v.status) : v.reason;
    result_.message = "HTTP " + std::to_string(v.status) + " (" + result_.reason + ") for " +
                      sending.key + ": " + why + "; partition kept, resume at " +
                      std::to_string(result_.resume_offset);
    Emit({.name = events::kForwardRequestRefused,
          .key = sending.key,
          .status = v.status,
          .reason = result_.reason,
          .begin = c.begin,
          .end = c.end,
          .message = result_.message});
    Emit({.name = events::kForwardRespool,
          .key = sending.key,
          .status = v.status,
          .reason = "request_refused",
          .end = result_.resume_offset,
          .message = result_.message});
    return ChunkEnd::kStop;
  }

  ChunkEnd Stopped(const Verdict& v, const Sending& sending) {
    switch (v.stop) {
      case StopCause::kAborted: return Aborted();
      case StopCause::kTls:
        result_.outcome = Outcome::kTlsError;
        result_.reason = v.reason;
        result_.message = v.message;
        Emit({.name = events::kForwardTlsError,
              .key = sending.key,
              .reason = v.reason,
              .message = v.message});
        return ChunkEnd::kStop;
      case StopCause::kAuth:
        result_.outcome = Outcome::kAuthError;
        result_.reason = v.reason;
        result_.message = v.message;
        Emit({.name = events::kForwardAuthFailed,
              .key = sending.key,
              .status = v.status,
              .reason = v.reason,
              .message = v.message});
        return ChunkEnd::kStop;
      case StopCause::kConfig: return ConfigError(v, sending);
    }
    return ChunkEnd::kStop;
  }

  // The server says our configuration is wrong: stop at once, name the cause, no
  // retry loop. @ref LLP 0017#config-errors
  ChunkEnd ConfigError(const Verdict& v, const Sending& sending) {
    result_.outcome = Outcome::kConfigError;
    result_.reason = v.reason;
    result_.server_message = v.server_message;
    result_.message = v.message + (v.server_message.empty() ? "" : ": " + v.server_message);
    Emit({.name = events::kForwardConfigError,
          .key = sending.key,
          .status = v.status,
          .reason = v.reason,
          .message = result_.message});
    return ChunkEnd::kStop;
  }

  void SetWaiting(const std::string& reason, int status, milliseconds wait) {
    sink_.SetState({.phase = State::Phase::kWaiting,
                    .partition = partition_,
                    .reason = reason,
                    .status = status,
                    .wait = wait,
                    .until = time_.MonotonicNow() + wait});
  }

  EndpointEntry& Entry() const { return sink_.deps.endpoints->at(ep_); }
  EndpointLink& Link() const { return sink_.links[ep_]; }

  Impl& sink_;
  const ForwardOptions& options_;
  Counters& counters_;
  const std::string partition_;
  const AckCallback& on_ack_;
  const PoisonCallback& on_poison_;
  TimeSource& time_;
  Sleeper& sleeper_;
  std::stop_token stop_;
  ForwardResult result_;
  TransportResult last_;                    // the last attempt's response; Attempt views into it
  std::uint64_t file_size_ = 0;             // of the partition, when opened
  std::uint64_t reported_bytes_ = 0;        // the pacing rate last reported in an event
  std::uint64_t reported_interval_ms_ = 0;  // the request interval last reported
  struct SplitTree {
    bool active = false;    // a bisection is under way
    std::uint64_t end = 0;  // end of the refused chunk it started from
    bool acked = false;     // the server accepted some part of it
  } split_;
  std::uint64_t split_requests_ = 0;  // requests spent bisecting, this call
  std::size_t ep_ = 0;                // the endpoint of the current attempt
  std::uint64_t moves_seen_ = 0;      // Endpoints' waking moves at our last look
  bool probe_ = false;                // that attempt probes the primary, not yet reported
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
  if (!deps.time) deps.time = &RealTimeSource();
  if (!deps.sleeper) deps.sleeper = &RealSleeper();
  // Every sender made from copies of one deps shares the endpoints' state.
  // @ref LLP 0019#shared
  if (!deps.endpoints) deps.endpoints = Endpoints::Make(options, deps);
  if (!deps.endpoints->Matches(EndpointUrls(options))) {
    return Status::Config("fallback_urls", "ForwardDeps::endpoints was made for other URLs");
  }
  deps.gate = deps.endpoints->at(0).gate;
  deps.pacer = deps.endpoints->at(0).pacer;
  if (!deps.random) deps.random = MakeDefaultRandom();
  return std::unique_ptr<ForwardSink>(new ForwardSink(
      std::make_unique<Impl>(std::move(options), std::move(deps), std::move(links).value())));
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
  for (EndpointLink& link : impl_->links) link.transport->Abort();
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
