// Structured events and counters: what the sink is doing, in the middle of an incident.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace fwdsink {

// Event names: stable strings an operator can alert on, declared once here. Every
// event carries `event` (the name) and `label`; the fields each one adds are listed.
namespace events {
// A 429/503 (or a transport error / other 5xx) and the wait chosen.
// Fields: partition, key, status, reason, attempt, wait_ms, wait_source, retry_after,
// begin, end, message (transport error text).
inline constexpr std::string_view kForwardBackpressure = "forward.backpressure";
// Waiting on the endpoint's shared gate that another sender closed.
// Fields: partition, key, reason, attempt, wait_ms, wait_source="gate", begin, end.
inline constexpr std::string_view kForwardGateWait = "forward.gate_wait";
// The next wait would pass the inline budget. Fields: partition, key, status, reason,
// attempt, wait_ms (the wait not taken), begin, end, message.
inline constexpr std::string_view kForwardGiveUp = "forward.give_up";
// The partition is given back for a later tick. Fields: partition, key, status,
// reason (the respool reason), end (the resume offset), message.
inline constexpr std::string_view kForwardRespool = "forward.respool";
// A chunk the server refuses as malformed (400/422/413 on a single row).
// Fields: partition, key, status, reason, begin, end, message.
inline constexpr std::string_view kForwardPoison = "forward.poison";
// A chunk was split in two (413, or 400/422 to isolate a row).
// Fields: partition, key, status, reason, begin, end.
inline constexpr std::string_view kForwardSplit = "forward.split";
// A 401 made the sink ask for a fresh token. Fields: partition, key, status, reason.
inline constexpr std::string_view kForwardAuthRefresh = "forward.auth_refresh";
// A second 401 after a refresh (or none to be had). Fields: partition, key, status,
// reason, message.
inline constexpr std::string_view kForwardAuthFailed = "forward.auth_failed";
// TLS handshake/verification failed: nothing was sent. Fields: partition, key, reason.
inline constexpr std::string_view kForwardTlsError = "forward.tls_error";
// A partition was delivered to its end. Fields: partition, end.
inline constexpr std::string_view kForwardDelivered = "forward.delivered";
// Close() cut a pause or a request short. Fields: partition, end (the cursor).
inline constexpr std::string_view kForwardAborted = "forward.aborted";
// Anything else (partition unreadable or torn, encoding failed, cursor not persisted).
// Fields: partition, key, reason, begin (the offset concerned), message.
inline constexpr std::string_view kForwardError = "forward.error";
// A cursor record was torn or invalid: the partition resumes from 0 under the same keys.
// Fields: partition, reason, message.
inline constexpr std::string_view kDriverCursorCorrupt = "driver.cursor_corrupt";
// Rows were moved to dead/. Fields: partition, status, reason, begin, end, message.
inline constexpr std::string_view kDriverDeadLetter = "driver.dead_letter";
// A partition failed past the horizon and was moved to dead/ whole.
// Fields: partition, status, reason, begin (from offset), message.
inline constexpr std::string_view kDriverHorizonGiveUp = "driver.horizon_give_up";
// The spool refused an operation. Fields: partition, reason, message.
inline constexpr std::string_view kDriverSpoolError = "driver.spool_error";
// The daemon started. Fields: pid, version, spool, url (logged by the daemon).
inline constexpr std::string_view kDaemonStart = "daemon.start";
// Periodic counters and progress from the daemon. Fields: every counter, ready.
inline constexpr std::string_view kDaemonStats = "daemon.stats";
// The daemon is exiting. Fields: every counter, ready, exit_code.
inline constexpr std::string_view kDaemonExit = "daemon.exit";
}  // namespace events

// One structured event. Fields that do not apply are left at their defaults (0 /
// empty) and are not rendered.
struct Event {
  std::string_view name{};
  std::string_view label{};      // the sink's log label (two sinks in one daemon)
  std::string partition{};
  std::string key{};             // Idempotency-Key of the chunk concerned
  int status = 0;              // HTTP status, 0 for transport errors
  std::string reason{};          // server's details.reason, or ours
  std::size_t attempt = 0;     // failed attempts of this chunk so far
  std::chrono::milliseconds wait{0};
  std::string_view wait_source{};  // "retry_after" | "ladder" | "gate"
  std::string retry_after{};     // raw Retry-After header, if any
  std::uint64_t begin = 0;     // chunk or resume offsets
  std::uint64_t end = 0;
  std::string message{};         // a sentence for humans
};

// Renders an event as one JSON object (no trailing newline), for structured logs.
[[nodiscard]] std::string ToJson(const Event& event);

using EventCallback = std::function<void(const Event&)>;

// Monotonic counters. Written by the sending thread, readable from any thread
// (relaxed atomics: each is exact, a snapshot of several is not a transaction).
struct Counters {
  std::atomic<std::uint64_t> chunks_sent{0};     // requests carrying a chunk (incl. retries)
  std::atomic<std::uint64_t> chunks_acked{0};
  std::atomic<std::uint64_t> rows_sent{0};
  std::atomic<std::uint64_t> rows_acked{0};
  std::atomic<std::uint64_t> bytes_sent{0};      // raw (uncompressed) bytes per request
  std::atomic<std::uint64_t> bytes_acked{0};
  std::atomic<std::uint64_t> wire_bytes_sent{0}; // encoded body bytes
  std::atomic<std::uint64_t> status_429{0};
  std::atomic<std::uint64_t> status_503{0};
  std::atomic<std::uint64_t> other_5xx{0};
  std::atomic<std::uint64_t> transport_errors{0};
  std::atomic<std::uint64_t> waits{0};
  std::atomic<std::uint64_t> wait_ms{0};
  std::atomic<std::uint64_t> gate_waits{0};
  std::atomic<std::uint64_t> budget_exhausted{0};
  std::atomic<std::uint64_t> respools{0};
  std::atomic<std::uint64_t> poisoned_chunks{0};
  std::atomic<std::uint64_t> splits{0};
  std::atomic<std::uint64_t> auth_refreshes{0};
  std::atomic<std::uint64_t> aborts{0};
  std::atomic<std::uint64_t> partitions_delivered{0};
};

// A plain copy of Counters, for printing and comparing.
struct CountersSnapshot {
  std::uint64_t chunks_sent, chunks_acked, rows_sent, rows_acked, bytes_sent, bytes_acked,
      wire_bytes_sent, status_429, status_503, other_5xx, transport_errors, waits, wait_ms,
      gate_waits, budget_exhausted, respools, poisoned_chunks, splits, auth_refreshes, aborts,
      partitions_delivered;
};
[[nodiscard]] CountersSnapshot Snapshot(const Counters& c);
[[nodiscard]] std::string ToJson(const CountersSnapshot& s);

// Appends `s` to `out` as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace fwdsink
