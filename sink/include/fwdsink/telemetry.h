// Structured events and counters: what the sink is doing, in the middle of an incident.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace fwdsink {

// One structured event. Names are stable strings an operator can alert on:
//   forward.backpressure  a 429/503 (or a transport error / 5xx) and the wait chosen
//   forward.gate_wait     waiting on the endpoint's shared gate another sender closed
//   forward.give_up       the next wait would pass the inline budget
//   forward.respool       the partition is given back, with its resume offset
//   forward.poison        a chunk the server refuses as malformed (400/422/413 single row)
//   forward.split         a chunk was split in two (413, or 400/422 to isolate a row)
//   forward.auth_refresh  a 401 made the sink ask for a fresh token
//   forward.auth_failed   a second 401 after a refresh
//   forward.tls_error     TLS handshake/verification failed: nothing was sent
//   forward.delivered     a partition was delivered to its end
//   forward.aborted       Close() cut a pause or a request short
//   forward.error         anything else (partition unreadable, cursor not persisted)
// Fields that do not apply are left at their defaults (0 / empty).
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
