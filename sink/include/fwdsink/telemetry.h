// SPDX-License-Identifier: Apache-2.0
// Structured events and counters: what the sink is doing, in the middle of an incident.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fwdsink {

// The least severe JSON log line written (log_level), and each event's: error when data
// or the service is at stake and a person must act, warn when something was given back
// or repaired, info for progress and lifecycle, debug for the routine waits.
// @ref LLP 0024#log-level
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// ---- Events, declared once.
//
// Event names: stable strings an operator can alert on. Every event carries `event`
// (the name); the sink's and the driver's events also carry `label`, and the sink's
// `partition`. The fields each one adds are listed in its row, as emitted by the engine
// (sink/src/engine/), the driver (sink/src/driver/driver.cc) and the daemon
// (examples/fwdsink/forward.cc); when `begin` or `end` is listed, both are rendered. The
// daemon's JSON log puts `ts` (RFC 3339, UTC, milliseconds) first on every line, then
// `level`. EVENT(constant, name, level) is one row; the list generates the constants
// (fwdsink::events::k*), the catalogue (kEventCatalogue) and the levels (EventLevel()):
// a new event is one row here. @ref LLP 0015#events
#define FWDSINK_EVENTS(EVENT)                                                             \
  /* A 429/503 (or another status retried in place) and the wait chosen (a transport      \
     error is forward.transport_error since issue 37). Fields: partition, key, status,    \
     reason, attempt, wait_ms, wait_source, retry_after (raw header, if any), begin,      \
     end, message. */                                                                     \
  EVENT(kForwardBackpressure, "forward.backpressure", kInfo)                              \
  /* Waiting on the endpoint's shared gate that another sender closed. Fields:            \
     partition, key, reason, attempt, wait_ms, wait_source="gate", begin, end,            \
     message. */                                                                          \
  EVENT(kForwardGateWait, "forward.gate_wait", kDebug)                                    \
  /* The next wait would pass the inline budget. Fields: partition, key, status,          \
     reason, attempt, wait_ms (the wait not taken), begin, end, message. */               \
  EVENT(kForwardGiveUp, "forward.give_up", kWarn)                                         \
  /* The partition is given back for a later tick. Fields: partition, key (absent         \
     for cursor_not_saved), status (absent for cursor_not_saved), reason (the             \
     respool reason after a give-up or "cursor_not_saved"; the server's reason or         \
     "http_NNN" after an unexpected status), end (the resume offset), message. */         \
  EVENT(kForwardRespool, "forward.respool", kWarn)                                        \
  /* A chunk the server refuses as malformed (400/422/413 on a single row). Fields:       \
     partition, key, status, reason, begin, end, message. */                              \
  EVENT(kForwardPoison, "forward.poison", kWarn)                                          \
  /* A chunk was split in two (413, or 400/422 to isolate a row). Fields:                 \
     partition, key, status, reason, begin, end, message. */                              \
  EVENT(kForwardSplit, "forward.split", kInfo)                                            \
  /* A 401 made the sink ask for a fresh token. Fields: partition, key, status,           \
     reason, message. */                                                                  \
  EVENT(kForwardAuthRefresh, "forward.auth_refresh", kInfo)                               \
  /* A second 401 after a refresh (or none to be had). Fields: partition, key,            \
     status, reason, message. */                                                          \
  EVENT(kForwardAuthFailed, "forward.auth_failed", kError)                                \
  /* TLS handshake/verification failed: nothing was sent. Fields: partition, key,         \
     reason="tls", message. */                                                            \
  EVENT(kForwardTlsError, "forward.tls_error", kError)                                    \
  /* A partition was delivered to its end. Fields: partition, end, message. */            \
  EVENT(kForwardDelivered, "forward.delivered", kInfo)                                    \
  /* A pack of small partitions was acknowledged (each member then has its own            \
     forward.delivered, its rows in the message). Fields: partition (the first            \
     member), key (the pack's), begin (0), end (its members), message. @ref LLP 0027 */   \
  EVENT(kForwardPackDelivered, "forward.pack_delivered", kInfo)                           \
  /* Close() cut a pause or a request short. Fields: partition, end (the cursor),         \
     message. */                                                                          \
  EVENT(kForwardAborted, "forward.aborted", kInfo)                                        \
  /* A request got no HTTP answer: the connection failed or broke under it (never         \
     Close(): that is forward.aborted). The same chunk goes again, same key and bytes,    \
     on a fresh connection after the wait. Fields: partition, key, reason                 \
     ("transport_io", "transport_connect", "transport_timeout", ...), phase (connect,     \
     head, await_continue, body, response_head, response_body), attempt, wait_ms,         \
     wait_source ("reconnect" | "ladder"), begin, end, message. @ref LLP                  \
     0014#transport-phases */                                                             \
  EVENT(kForwardTransportError, "forward.transport_error", kWarn)                         \
  /* The endpoint answered "Expect: 100-continue" with 417: the request goes once more    \
     without it, and no request to that endpoint carries it again until a reload.         \
     Fields: partition, key, status (417), reason ("expectation_failed"), message.        \
     @ref LLP 0017#expect-417 */                                                          \
  EVENT(kForwardExpectOff, "forward.expect_off", kWarn)                                   \
  /* The endpoint let the wait for 100 Continue run out twice in a row (it, or a front    \
     before it, ignores the header): no request to it carries Expect for 10 minutes,      \
     then again while a refusal is likely. Fields: partition, key, reason                 \
     ("expect_ignored"), wait_ms (the pause), message. @ref LLP 0017#expect-when */       \
  EVENT(kForwardExpectIgnored, "forward.expect_ignored", kInfo)                           \
  /* Anything else: the partition unreadable or torn (reason from the chunker,            \
     begin = the offset concerned) or a chunk that could not be encoded (key,             \
     reason="encode_failed"). Fields: partition, key, reason, begin, message. */          \
  EVENT(kForwardError, "forward.error", kError)                                           \
  /* The endpoint pacer made a sender wait at least a second before a request             \
     (shorter pacing waits are counted, not logged: at the limit there is one per         \
     request). Fields: partition, key, attempt, wait_ms, wait_source="pacer",             \
     reason (the pace source: "learned" | "advertised"), begin, end, message. */          \
  EVENT(kForwardPaceWait, "forward.pace_wait", kDebug)                                    \
  /* The pacing rate changed source, or moved by a quarter or more since last             \
     reported. Fields: partition, reason (the source: "none" | "learned" |                \
     "advertised"), rate_bytes_per_s, rate_requests_per_s (0: no limit in that            \
     dimension; rounded up), request_interval_ms (the request rate exactly: 60000         \
     for one a minute), message. */                                                       \
  EVENT(kForwardPacing, "forward.pacing", kInfo)                                          \
  /* The server refused the request, not the data: a single well-formed row refused       \
     with nothing of its request accepted, or a bisection past its request bound.         \
     The partition is respooled (never dead-lettered). Fields: partition, key,            \
     status, reason (the server's), begin, end, message (names the status and the         \
     server's reason). @ref LLP 0023#request-level-refusals */                            \
  EVENT(kForwardRequestRefused, "forward.request_refused", kWarn)                         \
  /* A cursor record was torn or invalid: the partition resumes from 0 under the          \
     same keys. Fields: partition, reason="cursor_corrupt", message. */                   \
  EVENT(kDriverCursorCorrupt, "driver.cursor_corrupt", kWarn)                             \
  /* Rows were moved to dead/: poisoned rows (status, begin, end) or a torn               \
     partition's tail (begin = from offset). Fields: partition, status, reason,           \
     begin, end, message. */                                                              \
  EVENT(kDriverDeadLetter, "driver.dead_letter", kError)                                  \
  /* A partition failed past the horizon and was moved to dead/ whole. Fields:            \
     partition, status, reason, begin (from offset), message. */                          \
  EVENT(kDriverHorizonGiveUp, "driver.horizon_give_up", kError)                           \
  /* The spool refused an operation. Fields: partition (absent for list_ready),           \
     reason (the operation: list_ready, cursor_unreadable, cursor_save,                   \
     mark_delivered, dead_purge, read_poison, dead_letter), begin and end                 \
     (read_poison only), message. */                                                      \
  EVENT(kDriverSpoolError, "driver.spool_error", kError)                                  \
  /* The server refuses our configuration (a ClickHouse unknown table, unknown            \
     setting, unsupported encoding, wrong credentials): the partition stops, the          \
     tick stops. Fields: partition, key, status, reason (the engine's code name),         \
     message (what and the server's words). @ref LLP 0017#config-errors */                \
  EVENT(kForwardConfigError, "forward.config_error", kError)                              \
  /* Every request of a pass failed the same permanent way (404, 405, 415, a config       \
     code): said once per pass. Fields: status, reason, message (the server's             \
     words). @ref LLP 0017#permanent-errors */                                            \
  EVENT(kDriverPermanentError, "driver.permanent_error", kError)                          \
  /* An entry of ready/ that is not a partition we may send (a symlink, a hard            \
     link, a FIFO, a device, a folder, a name outside the allowed set) was moved to       \
     SPOOL/quarantine/. Reported once per entry. Fields: reason (symlink,                 \
     hard_link, not_regular, bad_name), message (the entry's name, escaped, and           \
     where it went). @ref LLP 0023#spool */                                               \
  EVENT(kDriverQuarantine, "driver.quarantine", kWarn)                                    \
  /* A spool folder had vanished and was recreated. Fields: reason                        \
     ("folder_missing"), message (the folder). */                                         \
  EVENT(kDriverSpoolRepaired, "driver.spool_repaired", kWarn)                             \
  /* A delivered partition changed after it was opened (it grew, or was rewritten):       \
     it is not removed. Fields: partition, reason ("grew" | "changed"), begin (what       \
     was sent), end (its size now), message. */                                           \
  EVENT(kDriverHandoverChanged, "driver.handover_changed", kWarn)                         \
  /* A pack's manifest was resolved without a member: it changed since the manifest       \
     was written (moved to quarantine/), it is gone, or it grew or is torn (sent          \
     alone). The rest goes under a new key. Fields: partition (the member), key (the      \
     new pack's), reason ("changed" | "grew" | "gone" | "torn"), end (members left),      \
     message (both keys).                                                                 \
     @ref LLP 0027#changed */                                                             \
  EVENT(kDriverPackResolved, "driver.pack_resolved", kWarn)                               \
  /* An unacknowledged pack manifest found at start is sent again, unchanged, before      \
     anything else. Fields: partition (the first member), key, end (its members),         \
     message. @ref LLP 0027#resume */                                                     \
  EVENT(kDriverPackResumed, "driver.pack_resumed", kInfo)                                 \
  /* --profile clickhouse: the target table cannot deduplicate every retry (read at start \
     and on SIGHUP over the endpoint): its replicated_deduplication_window (or _seconds)  \
     is smaller than the retries need (reason "dedup_window_too_small"), or it is not a   \
     Replicated*MergeTree ("not_replicated"). Not a failure: /readyz stays 200 with a     \
     note. Fields: reason, message (the table, its window, the need).                     \
     @ref LLP 0017#dedup-window */                                                        \
  EVENT(kDriverEngineWarning, "driver.engine_warning", kWarn)                             \
  /* The window could not be read (no rights on system tables, no such table, no          \
     answer): said once, at info, and nothing else happens. Fields:                       \
     reason="unreadable", message. */                                                     \
  EVENT(kDriverEngineUnchecked, "driver.engine_unchecked", kInfo)                         \
  /* The daemon started. Fields: pid, mode ("once" | "run"), spool, url, metrics          \
     (the --metrics-listen address as bound, when set). */                                \
  EVENT(kDaemonStart, "daemon.start", kInfo)                                              \
  /* Periodic counters and progress from the daemon. Fields: label,                       \
     partitions_left, rows_per_s, bytes_per_s, counters (the sink's,                      \
     FWDSINK_SINK_COUNTERS), driver (the driver's, FWDSINK_DRIVER_COUNTERS), spool        \
     (ready_partitions, ready_bytes, oldest_ready_age_s, dead_letters, dead_bytes,        \
     max_dead_bytes, max_dead_age_s: the spool against its caps, @ref LLP                 \
     0025#caps). */                                                                       \
  EVENT(kDaemonStats, "daemon.stats", kInfo)                                              \
  /* The daemon is exiting. Fields: those of daemon.stats (rates 0), exit_code, why       \
     ("once" | "signal"), signal (the signal number, when one stopped it). */             \
  EVENT(kDaemonExit, "daemon.exit", kInfo)                                                \
  /* The endpoint in use was left for the next one (several --url). Fields:               \
     partition, key, endpoint (the one left), status, reason ("failures" | "hold"),       \
     wait_ms (the wait not taken there), message (names both endpoints). @ref LLP         \
     0019#leave */                                                                        \
  EVENT(kForwardFailover, "forward.failover", kWarn)                                      \
  /* A probe of the primary got a 2xx: the primary is in use again. Fields:               \
     partition, key, endpoint (the primary), message. @ref LLP 0019#failback */           \
  EVENT(kForwardFailback, "forward.failback", kInfo)                                      \
  /* A probe of the primary failed: the fallback stays in use, the chunk goes on to       \
     it. Fields: partition, key, endpoint (the primary), status, reason, message. */      \
  EVENT(kForwardProbeFailed, "forward.probe_failed", kWarn)                               \
  /* The concurrency limit fell (a 429/503, a transport error or a rising round           \
     trip), or rose to its ceiling (rises below it are only counted). Fields:             \
     reason ("backpressure" | "error" | "rtt_rising" | "latency_bound"), begin (the       \
     limit before), end (the limit after), message. @ref LLP 0018#visible */              \
  EVENT(kDriverConcurrency, "driver.concurrency", kInfo)                                  \
  /* SIGHUP was handled: the log file reopened, the header, Basic-auth and token          \
     files re-read and handed to the senders (taken before their next chunk).             \
     Fields: signal, reloaded (what: "log_file", "credentials"). @ref LLP                 \
     0024#reload */                                                                       \
  EVENT(kDaemonReload, "daemon.reload", kInfo)                                            \
  /* SIGHUP could not reload something; the old log file or credentials stay in           \
     use. Fields: signal, reloaded (what did reload), message (what failed; never a       \
     secret). */                                                                          \
  EVENT(kDaemonReloadFailed, "daemon.reload_failed", kError)                              \
  /* At start: FWDSINK_* variables in the environment that are not settings               \
     (ignored), named in one event. Fields: variables (their names), message. @ref        \
     LLP 0024#environment */                                                              \
  EVENT(kDaemonUnknownEnvironment, "daemon.unknown_environment", kWarn)                   \
  /* A dead letter was deleted by a cap (--max-dead-bytes / --max-dead-age), oldest       \
     first. Fields: partition (the dead letter's partition), reason                       \
     ("max_dead_bytes" | "max_dead_age"), begin, end (its byte range), message (the       \
     dead name, its size and age). @ref LLP 0025#caps */                                  \
  EVENT(kDriverDeadPurged, "driver.dead_purged", kWarn)                                   \
  /* SpoolWriter (when_full = drop_oldest) deleted the oldest ready partition to          \
     make room under max_ready_bytes. Fields: partition, reason="max_ready_bytes",        \
     end (its size), message. @ref LLP 0025#caps */                                       \
  EVENT(kWriterDropOldest, "writer.drop_oldest", kWarn)                                   \
  /* SpoolWriter (when_full = block) waited for room under max_ready_bytes. Fields:       \
     partition (the one being sealed), reason ("full" when it starts waiting,             \
     "timeout" when it gives up), wait_ms (waited so far), message. @ref LLP              \
     0025#caps */                                                                         \
  EVENT(kWriterFull, "writer.full", kWarn)                                                \
  /* The C API's periodic counters (fwdsink_conf_set_stats_cb). Fields: label,            \
     partitions_left, counters (FWDSINK_SINK_COUNTERS), driver                            \
     (FWDSINK_DRIVER_COUNTERS). @ref LLP 0026#callbacks */                                \
  EVENT(kApiStats, "api.stats", kInfo)

namespace events {
#define FWDSINK_INTERNAL_EVENT_NAME(constant, name, level) \
  inline constexpr std::string_view constant = name;
FWDSINK_EVENTS(FWDSINK_INTERNAL_EVENT_NAME)
#undef FWDSINK_INTERNAL_EVENT_NAME
}  // namespace events

// One row of the catalogue.
struct EventInfo {
  std::string_view name;
  LogLevel level;
};
// Every event, in the list's order.
inline constexpr EventInfo kEventCatalogue[] = {
#define FWDSINK_INTERNAL_EVENT_INFO(constant, name, level) {name, LogLevel::level},
    FWDSINK_EVENTS(FWDSINK_INTERNAL_EVENT_INFO)
#undef FWDSINK_INTERNAL_EVENT_INFO
};
// Returns the level of an event of the catalogue; an unknown name is info.
[[nodiscard]] LogLevel EventLevel(std::string_view event);

// One structured event. Fields that do not apply are left at their defaults (0 /
// empty) and are not rendered; `begin` and `end` are rendered together, both, when
// either is non-zero.
struct Event {
  std::string_view name{};   // one of the events:: constants
  std::string_view label{};  // the sink's log label (two sinks in one daemon)
  std::string partition{};
  std::string key{};        // Idempotency-Key of the chunk concerned
  int status = 0;           // HTTP status, 0 for transport errors
  std::string reason{};     // server's details.reason, or ours
  std::size_t attempt = 0;  // failed attempts of this chunk so far
  std::chrono::milliseconds wait{0};
  std::string_view wait_source{};  // "retry_after" | "ladder" | "reconnect" | "gate" | "pacer"
  std::string_view phase{};        // forward.transport_error: where the request broke
  std::string retry_after{};       // raw Retry-After header, if any
  std::uint64_t begin = 0;         // chunk or resume offsets
  std::uint64_t end = 0;
  std::string message{};                  // a sentence for humans
  std::uint64_t rate_bytes_per_s = 0;     // forward.pacing only (rendered there, even 0)
  std::uint64_t rate_requests_per_s = 0;  // forward.pacing only (rounded up)
  // forward.pacing only: milliseconds between two requests at the request rate (0: no
  // limit), the exact figure when the rate is under one per second.
  std::uint64_t request_interval_ms = 0;
  // The endpoint the event concerns (its URL, credentials redacted); set on the sink's
  // events only when there are several endpoints. @ref LLP 0019
  std::string endpoint{};
};

using EventCallback = std::function<void(const Event&)>;

// One JSON object under construction: the one writer every JSON line fwdsink and its
// daemon write goes through. Fields keep the order they were added in (a field added
// twice appears once, with the last value). Dump() writes compact JSON and replaces
// invalid UTF-8 (a server's reason is not ours to trust) with U+FFFD, so a line is
// always JSON. Not thread-safe: one object per thread. A moved-from JsonObject may only
// be assigned to or destroyed.
// @ref LLP 0015#json-writer
class JsonObject {
 public:
  JsonObject();
  JsonObject(const JsonObject& other);
  JsonObject(JsonObject&& other) noexcept;
  JsonObject& operator=(const JsonObject& other);
  JsonObject& operator=(JsonObject&& other) noexcept;
  ~JsonObject();

  // Adds a field; each returns *this for chaining.
  JsonObject& Add(std::string_view key, std::string_view value);
  JsonObject& Add(std::string_view key, const char* value);
  JsonObject& Add(std::string_view key, const std::string& value);
  JsonObject& Add(std::string_view key, bool value);
  template <class Int>
  requires(std::is_integral_v<Int> &&
           !std::is_same_v<Int, bool>) JsonObject& Add(std::string_view key, Int value) {
    if constexpr (std::is_signed_v<Int>)
      return AddSigned(key, value);
    else
      return AddUnsigned(key, value);
  }
  JsonObject& Add(std::string_view key, const JsonObject& value);
  JsonObject& Add(std::string_view key, const std::vector<JsonObject>& values);
  JsonObject& Add(std::string_view key, const std::vector<std::string>& values);
  // Adds every field of `other`, in its order, after the fields already here.
  JsonObject& Append(const JsonObject& other);
  // Returns the object as one line of compact JSON (no trailing newline).
  [[nodiscard]] std::string Dump() const;

 private:
  JsonObject& AddSigned(std::string_view key, std::int64_t value);
  JsonObject& AddUnsigned(std::string_view key, std::uint64_t value);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Renders an event as one JSON object (`event` first, then the fields that apply).
[[nodiscard]] JsonObject ToJsonObject(const Event& event);
// Same, as one line of JSON (no trailing newline), for structured logs.
[[nodiscard]] std::string ToJson(const Event& event);

// ---- Counters, declared once.
//
// Each list below is the only place a counter is named (model: Envoy's
// ALL_CLUSTER_TRAFFIC_STATS). COUNTER(name, help) is monotonic; GAUGE(name, help) goes
// up and down. Units are in the name or the help. The lists generate the atomic
// struct, its plain snapshot, Snapshot(), the JSON and ForEachCounter(); a new counter
// is one line here. @ref LLP 0015#counters

// The sink's counters (ForwardSink::counters()).
#define FWDSINK_SINK_COUNTERS(COUNTER, GAUGE)                                                  \
  COUNTER(chunks_sent, "Requests carrying a chunk, retries included.")                         \
  COUNTER(chunks_acked, "Chunks acknowledged with a 2xx (duplicates included).")               \
  COUNTER(rows_sent, "Rows in the chunks sent, counted again on every retry.")                 \
  COUNTER(rows_acked, "Rows in the chunks acknowledged.")                                      \
  COUNTER(bytes_sent, "Raw (uncompressed) chunk bytes per request, retries included.")         \
  COUNTER(bytes_acked, "Raw (uncompressed) bytes in the chunks acknowledged.")                 \
  COUNTER(wire_bytes_sent, "Encoded request body bytes sent, retries included.")               \
  COUNTER(bodies_withheld, "Request bodies not sent: the answer came before 100 Continue.")    \
  COUNTER(status_429, "Responses with HTTP 429.")                                              \
  COUNTER(status_503, "Responses with HTTP 503.")                                              \
  COUNTER(other_5xx, "Responses with a 5xx status other than 503.")                            \
  COUNTER(transport_errors, "Requests that got no HTTP response (connect, reset, timeout).")   \
  COUNTER(transport_errors_connect, "Transport errors while connecting.")                      \
  COUNTER(transport_errors_head, "Transport errors while writing the request head.")           \
  COUNTER(transport_errors_await_continue, "Transport errors while waiting for 100 Continue.") \
  COUNTER(transport_errors_body, "Transport errors while writing the request body.")           \
  COUNTER(transport_errors_response_head, "Transport errors before the response head was in.") \
  COUNTER(transport_errors_response_body, "Transport errors while reading the response body.") \
  COUNTER(expect_refusals, "Requests with Expect: 100-continue answered 417.")                 \
  GAUGE(expect_off, "1 while Expect: 100-continue is off for an endpoint after a 417.")        \
  COUNTER(expect_sent, "Requests sent with Expect: 100-continue.")                             \
  COUNTER(expect_timeouts, "Waits for 100 Continue that ran out (the body went late).")        \
  COUNTER(expect_ignored, "Endpoints that ignored Expect twice in a row: off 10 min.")         \
  COUNTER(waits, "Backoff waits taken before re-sending a chunk in place.")                    \
  COUNTER(wait_ms, "Milliseconds of backoff waits taken (sum of the waits chosen).")           \
  COUNTER(gate_waits, "Waits on the endpoint gate another sender's Retry-After closed.")       \
  COUNTER(budget_exhausted, "Chunks whose next wait would have passed the inline budget.")     \
  COUNTER(respools, "Partitions given back for a later tick by the sink.")                     \
  COUNTER(poisoned_chunks, "Single-row chunks refused as malformed (400/413/422).")            \
  COUNTER(splits, "Chunks split in two after a 413, or a 400/422 to isolate a row.")           \
  COUNTER(auth_refreshes, "Token refreshes asked for after a 401.")                            \
  COUNTER(aborts, "Partitions cut short by Close().")                                          \
  COUNTER(request_refusals,                                                                    \
          "Refusals blamed on the request, not the data (respooled, never dead-lettered).")    \
  COUNTER(partitions_delivered, "Partitions sent to their end and acknowledged.")              \
  COUNTER(packs_sent, "Packs of small partitions acknowledged (one request each).")            \
  COUNTER(partitions_packed, "Partitions delivered inside an acknowledged pack.")              \
  COUNTER(retried_4xx, "Responses with a 4xx listed in the retried statuses (408, 425).")      \
  COUNTER(engine_overload, "Refusals an engine profile reads as overload (ClickHouse 252).")   \
  COUNTER(config_errors, "Refusals that name our configuration (unknown table, encoding).")    \
  COUNTER(pacer_waits, "Requests the endpoint pacer delayed.")                                 \
  COUNTER(pacer_wait_ms, "Milliseconds of pacer waits taken (sum).")                           \
  COUNTER(spaced_starts, "Requests whose start waited to spread a window over a round trip.")  \
  COUNTER(spaced_wait_ms, "Milliseconds those starts waited (sum).")                           \
  GAUGE(pacing_bytes_per_s, "Pacing rate in wire bytes/s now (0: no byte limit).")             \
  GAUGE(pacing_requests_per_s, "Pacing rate in requests/s now, rounded up (0: no limit).")     \
  GAUGE(pacing_source, "Where the pacing rate comes from: 0 none, 1 learned, 2 advertised.")   \
  COUNTER(failovers, "Times the endpoint in use was left for the next (several --url).")       \
  COUNTER(failbacks, "Times a probe took the primary endpoint back.")                          \
  COUNTER(probes, "Requests that probed the primary while a fallback was in use.")             \
  COUNTER(probe_failures, "Probes of the primary that failed (the fallback stayed).")          \
  GAUGE(endpoint_in_use, "Index of the endpoint the last request went to (0: the primary).")   \
  GAUGE(last_ack_time_ms, "Wall-clock time of the last acknowledged chunk, ms since the epoch.")

// The driver's counters (Driver::counters()).
#define FWDSINK_DRIVER_COUNTERS(COUNTER, GAUGE)                                                  \
  COUNTER(ticks, "Ticks started (passes over the ready partitions).")                            \
  COUNTER(partitions_delivered, "Partitions delivered and removed from ready/.")                 \
  COUNTER(respools, "Partitions left in ready/ for a later tick.")                               \
  COUNTER(poisoned_chunks, "Poisoned chunks moved to dead letters.")                             \
  COUNTER(horizon_give_ups,                                                                      \
          "Partitions failing past the horizon, moved to dead letters whole (alert on it).")     \
  COUNTER(torn_partitions, "Torn or unreadable partition tails moved to dead letters.")          \
  COUNTER(cursor_corrupt, "Cursor records found torn or invalid (resumed from offset 0).")       \
  COUNTER(spool_errors, "Spool operations that failed (list, cursor, dead letter).")             \
  COUNTER(permanent_errors, "Passes where every request failed the same permanent way.")         \
  COUNTER(cursor_save_failures, "Ticks stopped because a cursor could not be saved.")            \
  COUNTER(auth_failures, "Ticks stopped by an auth or TLS failure (never dead-lettered).")       \
  COUNTER(config_stops, "Ticks stopped by a configuration error the server reported.")           \
  COUNTER(quarantined, "ready/ entries moved to quarantine/ (links, FIFOs, bad names).")         \
  COUNTER(spool_repairs, "Spool folders recreated after they vanished.")                         \
  COUNTER(handover_changed, "Delivered partitions changed after hand-over (kept).")              \
  GAUGE(overload_level, "Current overload level: 0 = none, higher pauses longer between ticks.") \
  GAUGE(concurrency_limit, "Requests allowed in flight now (the adaptive limit).")               \
  GAUGE(senders_busy, "Request slots held now (by a partition or a request).")                   \
  GAUGE(requests_in_flight, "Requests in flight now, every partition's window together.")        \
  COUNTER(concurrency_increases, "Rises of the concurrency limit (latency-bound).")              \
  COUNTER(concurrency_decreases, "Falls of the concurrency limit (refusals, errors, RTT).")      \
  COUNTER(dead_purged, "Dead letters deleted by the dead-letter caps, oldest first.")            \
  COUNTER(dead_purged_bytes, "Bytes of the dead letters deleted by the caps.")

// One endpoint's counters (several --url: Endpoints::at(i).counters), shared by every
// sender to it. @ref LLP 0019
#define FWDSINK_ENDPOINT_COUNTERS(COUNTER, GAUGE)                                            \
  COUNTER(chunks_sent, "Requests carrying a chunk sent to this endpoint, retries included.") \
  COUNTER(chunks_acked, "Chunks this endpoint acknowledged.")                                \
  COUNTER(bytes_acked, "Raw bytes in the chunks this endpoint acknowledged.")                \
  COUNTER(failures, "Transport errors and 5xx answers from this endpoint.")                  \
  COUNTER(holds, "Backpressure answers (429/503 with a wait) from this endpoint.")           \
  COUNTER(left, "Times this endpoint was left for another.")                                 \
  COUNTER(probes, "Probes sent to this endpoint while a fallback was in use.")

// The producer's counters (SpoolWriter::counters()). @ref LLP 0025#caps
#define FWDSINK_WRITER_COUNTERS(COUNTER, GAUGE)                                               \
  COUNTER(partitions_sealed, "Partitions sealed into ready/.")                                \
  COUNTER(full_waits, "Seals that waited for ready/ to fall below max_ready_bytes.")          \
  COUNTER(full_timeouts, "Seals refused after waiting block_timeout for room in ready/.")     \
  COUNTER(dropped_partitions, "Oldest ready/ partitions deleted to make room (drop_oldest).") \
  COUNTER(dropped_bytes, "Bytes of the partitions deleted to make room (drop_oldest).")

enum class CounterKind { kCounter, kGauge };
[[nodiscard]] std::string_view to_string(CounterKind kind);

// One counter as ForEachCounter() yields it.
struct CounterField {
  std::string_view name;  // as in the list: also the JSON key
  CounterKind kind;
  std::string_view help;  // one line, for a Prometheus HELP
  std::uint64_t value;
};

#define FWDSINK_INTERNAL_ATOMIC_FIELD(name, help) std::atomic<std::uint64_t> name{0};
#define FWDSINK_INTERNAL_PLAIN_FIELD(name, help) std::uint64_t name = 0;

// The sink's counters. Written by the sending thread, readable from any thread
// (relaxed atomics: each is exact, a snapshot of several is not a transaction).
struct Counters {
  FWDSINK_SINK_COUNTERS(FWDSINK_INTERNAL_ATOMIC_FIELD, FWDSINK_INTERNAL_ATOMIC_FIELD)
};
// A plain copy of Counters, for printing and comparing.
struct CountersSnapshot {
  FWDSINK_SINK_COUNTERS(FWDSINK_INTERNAL_PLAIN_FIELD, FWDSINK_INTERNAL_PLAIN_FIELD)
};

// The driver's counters. Written by the driver thread, readable from any thread
// (relaxed atomics, as Counters).
struct DriverCounters {
  FWDSINK_DRIVER_COUNTERS(FWDSINK_INTERNAL_ATOMIC_FIELD, FWDSINK_INTERNAL_ATOMIC_FIELD)
};
// A plain copy of DriverCounters.
struct DriverCountersSnapshot {
  FWDSINK_DRIVER_COUNTERS(FWDSINK_INTERNAL_PLAIN_FIELD, FWDSINK_INTERNAL_PLAIN_FIELD)
};

// One endpoint's counters. Written by every sender to it, readable from any thread
// (relaxed atomics, as Counters).
struct EndpointCounters {
  FWDSINK_ENDPOINT_COUNTERS(FWDSINK_INTERNAL_ATOMIC_FIELD, FWDSINK_INTERNAL_ATOMIC_FIELD)
};
// A plain copy of EndpointCounters.
struct EndpointCountersSnapshot {
  FWDSINK_ENDPOINT_COUNTERS(FWDSINK_INTERNAL_PLAIN_FIELD, FWDSINK_INTERNAL_PLAIN_FIELD)
};
// The producer's counters: plain, as SpoolWriter is used by one thread at a time.
struct WriterCounters {
  FWDSINK_WRITER_COUNTERS(FWDSINK_INTERNAL_PLAIN_FIELD, FWDSINK_INTERNAL_PLAIN_FIELD)
};

#undef FWDSINK_INTERNAL_ATOMIC_FIELD
#undef FWDSINK_INTERNAL_PLAIN_FIELD

// Copies each counter (relaxed loads). Any thread.
[[nodiscard]] CountersSnapshot Snapshot(const Counters& c);
[[nodiscard]] DriverCountersSnapshot Snapshot(const DriverCounters& c);
[[nodiscard]] EndpointCountersSnapshot Snapshot(const EndpointCounters& c);

#define FWDSINK_INTERNAL_VISIT_COUNTER(name, help) \
  visit(CounterField{#name, CounterKind::kCounter, help, s.name});
#define FWDSINK_INTERNAL_VISIT_GAUGE(name, help) \
  visit(CounterField{#name, CounterKind::kGauge, help, s.name});

// Calls visit(const CounterField&) once per counter, in list order.
template <class Visit>
void ForEachCounter(const CountersSnapshot& s, Visit&& visit) {
  FWDSINK_SINK_COUNTERS(FWDSINK_INTERNAL_VISIT_COUNTER, FWDSINK_INTERNAL_VISIT_GAUGE)
}
template <class Visit>
void ForEachCounter(const DriverCountersSnapshot& s, Visit&& visit) {
  FWDSINK_DRIVER_COUNTERS(FWDSINK_INTERNAL_VISIT_COUNTER, FWDSINK_INTERNAL_VISIT_GAUGE)
}
template <class Visit>
void ForEachCounter(const EndpointCountersSnapshot& s, Visit&& visit) {
  FWDSINK_ENDPOINT_COUNTERS(FWDSINK_INTERNAL_VISIT_COUNTER, FWDSINK_INTERNAL_VISIT_GAUGE)
}
template <class Visit>
void ForEachCounter(const WriterCounters& s, Visit&& visit) {
  FWDSINK_WRITER_COUNTERS(FWDSINK_INTERNAL_VISIT_COUNTER, FWDSINK_INTERNAL_VISIT_GAUGE)
}

#undef FWDSINK_INTERNAL_VISIT_COUNTER
#undef FWDSINK_INTERNAL_VISIT_GAUGE

// Renders the counters as one flat JSON object, `name: value` in list order.
[[nodiscard]] JsonObject ToJsonObject(const CountersSnapshot& s);
[[nodiscard]] JsonObject ToJsonObject(const DriverCountersSnapshot& s);
[[nodiscard]] std::string ToJson(const CountersSnapshot& s);
[[nodiscard]] std::string ToJson(const DriverCountersSnapshot& s);
[[nodiscard]] JsonObject ToJsonObject(const EndpointCountersSnapshot& s);

}  // namespace fwdsink
