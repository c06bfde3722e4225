// SPDX-License-Identifier: Apache-2.0
// The forward sink: streams one NDJSON partition to the ingest endpoint, chunk by
// chunk, retrying the same chunk in place under backpressure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/backoff.h"
#include "fwdsink/chunker.h"
#include "fwdsink/clock.h"
#include "fwdsink/codec.h"
#include "fwdsink/credentials.h"
#include "fwdsink/endpoint_health.h"
#include "fwdsink/gate.h"
#include "fwdsink/histogram.h"
#include "fwdsink/pacer.h"
#include "fwdsink/spool.h"
#include "fwdsink/status.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/transport.h"

namespace fwdsink {

// Which server's response conventions apply beyond HTTP statuses. @ref LLP 0017#profiles
enum class EngineProfile {
  kGeneric,     // statuses and a JSON details.reason only (fwdsink-central, most APIs)
  kClickHouse,  // also X-ClickHouse-Exception-Code or a "Code: N" body prefix
};
[[nodiscard]] std::string_view to_string(EngineProfile profile);
// Parses "generic" or "clickhouse"; nullopt for anything else.
[[nodiscard]] std::optional<EngineProfile> ParseEngineProfile(std::string_view text);

// How responses beyond 2xx, 401, 429 and 503 are treated. @ref LLP 0017#statuses
struct ResponseRules {
  EngineProfile profile = EngineProfile::kGeneric;
  // Statuses retried in place (same bytes, same key, on the ladder) like a 5xx. 408
  // (the server timed the request out) and 425 (too early) are worth a retry.
  std::vector<int> retry_statuses = {408, 425};
  // Also retry every 5xx not listed; when false, a 5xx not in retry_statuses is not
  // retried inline (the partition is respooled, as a 404 is).
  bool retry_all_5xx = true;
};

// User name and password for HTTP Basic auth (RFC 7617). Never logged.
struct BasicAuth {
  std::string user;
  std::string password;
};

struct ForwardOptions {
  // Endpoint URL, http:// or https://, e.g. "https://ingest.example:8443/v1/ndjson".
  // With fallback_urls, the primary.
  std::string url;
  // Fallback endpoints, tried in order when the one in use fails (the daemon's second
  // and later --url). Each has its own gate, pacer, connection and counters; a chunk
  // keeps its bytes and key on every endpoint. @ref LLP 0019
  std::vector<std::string> fallback_urls{};
  // When to leave an endpoint and when to take the primary back (several URLs only).
  FailoverPolicy failover{};
  // Header that carries the chunk's stable key "<partition>:<begin>-<end>".
  std::string idempotency_header = "Idempotency-Key";
  // Send that header (false: the key goes only in the URL query, below).
  bool send_idempotency_header = true;
  // When set, the key is also put in the URL query as NAME=KEY, e.g.
  // "insert_deduplication_token" for ClickHouse. @ref LLP 0017#key-param
  std::string idempotency_query_param{};
  // Extra request headers ("X-Scope-OrgID", an API key). Validated by Validate(); never
  // logged. Content-Type, Content-Encoding, Content-Length, Transfer-Encoding, Host,
  // Connection and the idempotency header are the sink's and may not be set here.
  HeaderList headers{};
  // HTTP Basic auth; also taken from the URL's userinfo. A bearer token from the token
  // provider wins when both exist.
  std::optional<BasicAuth> basic_auth{};
  // Response rules beyond the status (engine profile, statuses retried in place).
  ResponseRules responses{};
  Compression compression = Compression::kZstd;
  int zstd_level = kDefaultZstdLevel;
  ChunkerOptions chunker{};
  BackpressurePolicy backpressure{};
  // Proactive pacing of the private pacer made when ForwardDeps has none (its max_wait
  // is then backpressure.max_wait). @ref LLP 0016#pacer
  PacingPolicy pacing{};
  TransportOptions transport{};
  // Prefix/label that tells two sinks in one daemon apart in events and logs.
  std::string label = "fwdsink";
  // Requests one partition's bisection (splitting refused chunks to isolate a row) may
  // spend in one ForwardPartition call; past it the refusal is blamed on the request
  // and the partition is respooled. @ref LLP 0023#request-level-refusals
  std::uint64_t max_split_requests = 256;
  // Chunks of one partition in flight at once, 1-64: each has its own fixed range and
  // key; acknowledgements may come in any order, the cursor is the end of the contiguous
  // acknowledged prefix. How many are in flight is decided by the request slots
  // (ForwardDeps::requests, the driver's adaptive limit). 1 sends one chunk at a time
  // and keeps a partition's rows in order at the server. @ref LLP 0014#window
  std::size_t window = 16;
  static constexpr std::size_t kMaxWindow = 64;
  // The bytes of the bodies in flight together (raw and encoded), when ForwardDeps has
  // no shared budget: a new request waits for room; a partition's first always goes.
  // @ref LLP 0014#window-memory
  std::uint64_t max_inflight_bytes = std::uint64_t{32} << 20;
};

// Checks every field; returns OK, or a kInvalidConfig status naming the first bad one
// in field() ("url", "chunker.chunk_bytes", "backpressure.ladder[1]", "zstd_level", ...).
[[nodiscard]] Status Validate(const ForwardOptions& options);
// Returns every endpoint URL in order: url, then fallback_urls.
[[nodiscard]] std::vector<std::string> EndpointUrls(const ForwardOptions& options);

class Endpoints;    // fwdsink/endpoints.h
struct PackMember;  // fwdsink/forward_pack.h
struct PackResult;

// Supplies bearer tokens. Called with force_refresh=false before the first request and
// with true after a 401; returns nullopt when no token is available. Called on the
// sending thread. An empty std::function means "no Authorization header".
using TokenProvider = std::function<std::optional<std::string>(bool force_refresh)>;

// What ForwardPartition achieved.
enum class Outcome {
  kDelivered,       // every row up to the end of the file was acknowledged
  kRespooled,       // gave up for now; resume at resume_offset on a later tick
  kPoisoned,        // the server refuses [poison_begin, poison_end) as malformed, and
                    // no poison callback took it
  kAborted,         // Close() was called
  kAuthError,       // 401 again after a token refresh (or no token to be had)
  kTlsError,        // TLS verification/handshake failed; nothing was sent
  kPartitionError,  // the file cannot be read or is torn (message names the offset)
  kConfigError,     // the server says our configuration is wrong (unknown table,
                    // unknown setting, unsupported encoding, credentials): retrying
                    // will not help; message names the cause. @ref LLP 0017#config-errors
};
[[nodiscard]] std::string_view to_string(Outcome outcome);

// Why a partition was respooled.
enum class RespoolReason {
  kNone,
  kBudgetExhausted,  // 429/503 backpressure outlasted the inline budget
  kTransportError,   // connection failures/timeouts outlasted the budget
  kServerError,      // other 5xx outlasted the budget
  kClientError,      // a 4xx we cannot act on (404, 405, 415, ...): not retried inline
  kCursorNotSaved,   // the ack callback could not persist the cursor
  kRequestRefused,   // the server refuses the request, not the data (a well-formed row
                     // refused with nothing of its request accepted, or a bisection past
                     // max_split_requests): never dead-lettered. @ref LLP 0023
};
[[nodiscard]] std::string_view to_string(RespoolReason reason);

// ForwardResult::reason of a kPartitionError for a partition that shrank while it was
// sent (the driver quarantines it). @ref LLP 0023#shrunk
inline constexpr std::string_view kShrunkReason = "shrunk";

struct ForwardResult {
  Outcome outcome = Outcome::kDelivered;
  // The cursor: end offset of the last acknowledged chunk (where the next attempt
  // starts). For kPoisoned it is poison_begin.
  std::uint64_t resume_offset = 0;
  RespoolReason respool_reason = RespoolReason::kNone;
  int status = 0;                  // the last HTTP status seen (0: none / transport error)
  std::string reason;              // server's details.reason, or the error text
  std::string message;             // a sentence for an operator
  std::string server_message;      // the server's own words for the last refusal, if any
  std::uint64_t poison_begin = 0;  // kPoisoned: the refused byte range
  std::uint64_t poison_end = 0;
  std::uint64_t poison_rows = 0;
  std::uint64_t chunks_acked = 0;  // during this call
  std::uint64_t rows_acked = 0;
  std::uint64_t bytes_acked = 0;
  bool throttled = false;  // at least one 429/503 was seen during this call
  // The partition file as it was opened: the driver checks them before removing a
  // delivered partition (a file that changed since is not removed). @ref LLP 0023#handover
  std::uint64_t file_size = 0;
  std::int64_t file_mtime_ns = 0;
};

// An acknowledged chunk, passed to the ack callback before the next chunk is sent.
// Also passed for a poisoned chunk once the poison callback has put it in dead
// letters (dead_lettered): the cursor then moves past it by the same route.
struct AckedChunk {
  std::string_view partition;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
  bool duplicate = false;      // the server said it had this key already
  bool final = false;          // the partition is acknowledged to its end with this chunk
  bool dead_lettered = false;  // the rows went to dead letters, not to the server
  // Part of a split chunk whose other parts are not all acknowledged yet. A cursor
  // persisted here would make a restart chunk differently from the halves the server
  // may already hold (new keys, rows stored twice): the driver persists the cursor at
  // the split chunk's end instead. @ref LLP 0023#split-window
  bool inside_split = false;
  // Where the cursor may be persisted now: the end of the contiguous prefix of wholly
  // acknowledged chunks (never inside a split chunk, never past a gap). @ref LLP 0014#window
  std::uint64_t cursor = 0;
  // Requests of the partition still in flight after this one.
  std::size_t in_flight = 0;
  // The journal past `cursor` (CursorWindow::Journal): the ranges in flight and those
  // acknowledged past a gap, to persist with the cursor. @ref LLP 0014#journal
  std::span<const CursorRange> journal{};
};
// Persists the cursor; returns false if it could not (the sink then stops and
// respools with kCursorNotSaved rather than run ahead of what is on disk).
using AckCallback = std::function<bool(const AckedChunk&)>;

// The journal of a partition's call, handed over before the first byte of new ranges
// (chunks, split pieces) leaves: the callback must make it durable before it returns,
// or return false (the sink then stops with kCursorNotSaved, nothing new sent).
// @ref LLP 0014#journal
struct JournalState {
  std::string_view partition;
  std::uint64_t cursor = 0;               // as AckedChunk::cursor
  std::span<const CursorRange> ranges{};  // gapless from `cursor`
};
using JournalCallback = std::function<bool(const JournalState&)>;

// Where a ForwardPartition call starts: the persisted cursor and its journal (as
// Spool::LoadCursor gives them: the journal's unacknowledged ranges are re-sent first,
// exactly, under their keys; acknowledged ones never), and the journal's callback.
struct ForwardStart {
  std::uint64_t begin = 0;
  std::vector<CursorRange> journal{};
  JournalCallback on_journal{};  // empty: nothing is journaled (a bare sink)
};

// A chunk the server refuses as malformed (a single row, after bisection), passed to
// the poison callback with its bytes as read from the partition.
struct PoisonedChunk {
  std::string_view partition;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
  int status = 0;           // the refusing HTTP status (400, 413, 422)
  std::string_view reason;  // server's details.reason, or "http_<status>"
  std::string_view body;    // the chunk's raw (unencoded) bytes, [begin, end)
};
// Writes a poisoned chunk durably to dead letters; returns false if it could not.
// On true the sink moves on past the chunk (acking it as dead_lettered, so the cursor
// follows the ack route); on false, or with no poison callback, the call returns
// kPoisoned with the cursor before the chunk. @ref LLP 0014#core
using PoisonCallback = std::function<bool(const PoisonedChunk&)>;

// One answered request, told to ForwardDeps::on_attempt where it is classified, before
// anything is done about it (the concurrency limit and the driver's round-trip samples
// learn from it there, not from counters or event names). @ref LLP 0018#signals
struct AttemptRecord {
  enum class Kind {
    kAccepted,  // a 2xx: the chunk is acknowledged
    kRefused,   // a 429/503, retried in place
    kFailed,    // a transport error, another 5xx or a retried status, retried in place
    kOther,     // anything else (a split, a poison, a respool, a stop, a token refresh)
  };
  std::size_t endpoint = 0;  // the endpoint it went to (0: the primary)
  Kind kind = Kind::kOther;
  int status = 0;  // the HTTP status decided on (0: a transport error)
  // This chunk's attempts so far waited (gate, pacer, backoff) or were refused: a round
  // trip that includes them measures the waits, not the path.
  bool pushed_back = false;
  std::chrono::microseconds round_trip{0};  // Post() to its answer
};
using AttemptObserver = std::function<void(const AttemptRecord&)>;

// Injected collaborators; everything defaults to the real thing.
//
// Lifetimes: the objects `time` and `sleeper` point to are not owned, and must
// outlive every ForwardSink (and Driver) created with these deps. The gate, the pacer
// and the endpoints are shared ownership. The callables are copied into the sink and
// called on the sending thread (the token provider, the event callback, the random
// source): whatever they capture must outlive the sink.
class RequestSlots;    // below
class InflightBudget;  // below

struct ForwardDeps {
  TimeSource* time = nullptr;          // Not owned. Default: RealTimeSource()
  Sleeper* sleeper = nullptr;          // Not owned. Default: RealSleeper()
  std::shared_ptr<EndpointGate> gate;  // shared per endpoint; default: a private one
  // Shared per endpoint like the gate; default: a private one from options.pacing.
  std::shared_ptr<EndpointPacer> pacer;
  TokenProvider tokens;    // default: no Authorization header
  EventCallback on_event;  // default: events are dropped
  // Jitter source, when policy.jitter > 0; default: a private generator seeded from
  // std::random_device (guarded: safe from any thread).
  UniformRandom random;
  // Per-endpoint state (gate, pacer, token provider, counters, health) shared by every
  // sender made from copies of these deps; default: Endpoints::Make(options, deps),
  // whose primary takes `gate` and `pacer` above. @ref LLP 0019
  std::shared_ptr<Endpoints> endpoints;
  // Credentials published while the sink runs (the daemon's SIGHUP), shared by every
  // sender; default: none, the options' headers and basic_auth hold. @ref LLP 0024#reload
  std::shared_ptr<const CredentialsBox> credentials;
  // Request latency (Post start to verdict input), shared like the gate; default: none
  // (not recorded). @ref LLP 0025#metrics
  std::shared_ptr<LatencyHistogram> latency;
  // Told of every answered request, on the sending thread; default: nobody.
  AttemptObserver on_attempt;
  // Slots for a partition's second and later requests in flight (its first is the
  // sender's own): the driver's adaptive limit counts requests. Default: none (a sink
  // alone fills its window). @ref LLP 0014#window
  std::shared_ptr<RequestSlots> requests;
  // The bytes in flight, shared by every sender made from these deps; default: a
  // private budget of options.max_inflight_bytes. @ref LLP 0014#window-memory
  std::shared_ptr<InflightBudget> inflight;
};

// Slots for requests in flight beyond a sender's first. Thread-safe.
class RequestSlots {
 public:
  virtual ~RequestSlots() = default;
  // Takes a slot if one is free now, without waiting; `held` is how many this sender
  // holds already (a fair share caps it).
  [[nodiscard]] virtual bool TryAcquire(std::size_t held) = 0;
  virtual void Release() = 0;
};

// A budget of bytes, taken by a request's bodies while it is in flight: a cap, like
// Kafka's buffer.memory. Thread-safe. @ref LLP 0014#inflight-cap
class InflightBudget {
 public:
  explicit InflightBudget(std::uint64_t limit) : limit_(limit) {}
  // Takes `bytes` if they fit under the limit, or if nothing at all is in flight: a body
  // larger than the whole budget goes, alone, and only then. `held` is not read any
  // more (a sender's first request went whatever the others held: not a cap); kept so
  // that callers still compile.
  [[nodiscard]] bool TryTake(std::uint64_t bytes, std::uint64_t held = 0);
  // Waits until TryTake(bytes) succeeds (true) or `stop` is requested (false).
  [[nodiscard]] bool Take(std::uint64_t bytes, const std::stop_token& stop);
  void Give(std::uint64_t bytes);
  [[nodiscard]] std::uint64_t in_use() const { return used_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }
  // The most ever taken at once, and how many times a taker had to wait for room.
  [[nodiscard]] std::uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<std::uint64_t> waits_{0};
  std::atomic<int> waiting_{0};  // takers in Take(): Give() wakes them only then
  std::mutex mu_;
  std::condition_variable_any room_;
};

// Streams partitions to one endpoint, or to the one in use of a primary and its
// fallbacks (ForwardOptions::fallback_urls). @ref LLP 0019
//
// Threads: ForwardPartition() runs on one thread at a time (the sender). Close(),
// counters() and state() may be called from any thread. Close() is idempotent,
// returns promptly (it only signals and shuts the socket down), and makes the current
// and every later ForwardPartition() return kAborted with the cursor at the last
// acknowledged chunk.
//
// Deliberately ignores: partition discovery, cursor storage and dead letters (the
// driver's job, through the ack and poison callbacks and the outcome).
class ForwardSink {
 public:
  // Creates a sink; returns a kInvalidConfig status naming the field when the options
  // do not validate or the URL/TLS settings are unusable ("transport.ca_file").
  [[nodiscard]] static Result<std::unique_ptr<ForwardSink>> Create(ForwardOptions options,
                                                                   ForwardDeps deps);
  ~ForwardSink();
  ForwardSink(const ForwardSink&) = delete;
  ForwardSink& operator=(const ForwardSink&) = delete;

  // Sends `path` (partition id `partition`) from byte `begin` to the end, chunk by
  // chunk, calling `on_ack` after each acknowledged chunk and `on_poison` with each
  // chunk the server refuses as malformed. Never throws for operational failures: the
  // outcome says what happened. The callbacks are called on this thread, before it
  // returns.
  [[nodiscard]] ForwardResult ForwardPartition(std::string_view partition,
                                               const std::filesystem::path& path,
                                               std::uint64_t begin, const AckCallback& on_ack,
                                               const PoisonCallback& on_poison = {});
  // The same from a cursor and its journal. @ref LLP 0014#journal
  [[nodiscard]] ForwardResult ForwardPartition(std::string_view partition,
                                               const std::filesystem::path& path,
                                               const ForwardStart& start, const AckCallback& on_ack,
                                               const PoisonCallback& on_poison = {});

  // Sends `members` (whole partitions, as their manifest recorded them) as one request
  // under `key`, with their own keys in an Idempotency-Members header. Nothing is sent
  // when a member is not as recorded. Same threads as ForwardPartition(). @ref LLP 0027
  [[nodiscard]] PackResult ForwardPack(const std::string& key,
                                       const std::vector<PackMember>& members);

  // Aborts any pause or in-flight request at once, and all later work. Any thread.
  void Close();
  [[nodiscard]] bool closed() const;

  // What the sender is doing now, for progress lines ("waiting 30 s: byte_rate").
  struct State {
    enum class Phase { kIdle, kSending, kWaiting } phase = Phase::kIdle;
    std::string partition{};
    std::string reason{};  // why it is waiting
    int status = 0;        // the status that caused the wait
    std::chrono::milliseconds wait{0};
    MonotonicTime until{};  // when the wait ends
  };
  [[nodiscard]] State state() const;
  [[nodiscard]] const Counters& counters() const;
  // Returns the pacer's rate now, of the endpoint in use, and where it comes from. Any
  // thread.
  [[nodiscard]] PaceRate pacing() const;
  // Returns the endpoints (one unless fallback URLs are set). Any thread.
  [[nodiscard]] const Endpoints& endpoints() const;
  [[nodiscard]] const ForwardOptions& options() const;

 private:
  struct Impl;     // the transport, encoder, chunk buffers, read-ahead worker, token, state
  class Call;      // one ForwardPartition call: chunks, their attempts, their conclusions
  class PackCall;  // one ForwardPack call (pack_call.cc)
  explicit ForwardSink(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace fwdsink
