#include "fwdsink/telemetry.h"

#include <cstdio>

namespace fwdsink {

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);  // UTF-8 passes through; invalid bytes are the server's text
        }
    }
  }
  out.push_back('"');
}

namespace {
void Field(std::string& out, std::string_view k, std::string_view v) {
  out += ',';
  AppendJsonString(out, k);
  out += ':';
  AppendJsonString(out, v);
}
void Field(std::string& out, std::string_view k, std::uint64_t v) {
  out += ',';
  AppendJsonString(out, k);
  out += ':';
  out += std::to_string(v);
}
}  // namespace

std::string ToJson(const Event& e) {
  std::string out = "{\"event\":";
  AppendJsonString(out, e.name);
  if (!e.label.empty()) Field(out, "label", e.label);
  if (!e.partition.empty()) Field(out, "partition", e.partition);
  if (!e.key.empty()) Field(out, "key", e.key);
  if (e.status != 0) Field(out, "status", static_cast<std::uint64_t>(e.status));
  if (!e.reason.empty()) Field(out, "reason", e.reason);
  if (e.attempt != 0) Field(out, "attempt", e.attempt);
  if (e.wait.count() > 0) Field(out, "wait_ms", static_cast<std::uint64_t>(e.wait.count()));
  if (!e.wait_source.empty()) Field(out, "wait_source", e.wait_source);
  if (!e.retry_after.empty()) Field(out, "retry_after", e.retry_after);
  if (e.begin != 0 || e.end != 0) {
    Field(out, "begin", e.begin);
    Field(out, "end", e.end);
  }
  if (!e.message.empty()) Field(out, "message", e.message);
  out += '}';
  return out;
}

CountersSnapshot Snapshot(const Counters& c) {
  constexpr auto r = std::memory_order_relaxed;
  return CountersSnapshot{
      c.chunks_sent.load(r),    c.chunks_acked.load(r),     c.rows_sent.load(r),
      c.rows_acked.load(r),     c.bytes_sent.load(r),       c.bytes_acked.load(r),
      c.wire_bytes_sent.load(r), c.status_429.load(r),      c.status_503.load(r),
      c.other_5xx.load(r),      c.transport_errors.load(r), c.waits.load(r),
      c.wait_ms.load(r),        c.gate_waits.load(r),       c.budget_exhausted.load(r),
      c.respools.load(r),       c.poisoned_chunks.load(r),  c.splits.load(r),
      c.auth_refreshes.load(r), c.aborts.load(r),           c.partitions_delivered.load(r)};
}

std::string ToJson(const CountersSnapshot& s) {
  std::string out = "{";
  bool first = true;
  auto f = [&](std::string_view k, std::uint64_t v) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, k);
    out += ':';
    out += std::to_string(v);
  };
  f("chunks_sent", s.chunks_sent);
  f("chunks_acked", s.chunks_acked);
  f("rows_sent", s.rows_sent);
  f("rows_acked", s.rows_acked);
  f("bytes_sent", s.bytes_sent);
  f("bytes_acked", s.bytes_acked);
  f("wire_bytes_sent", s.wire_bytes_sent);
  f("status_429", s.status_429);
  f("status_503", s.status_503);
  f("other_5xx", s.other_5xx);
  f("transport_errors", s.transport_errors);
  f("waits", s.waits);
  f("wait_ms", s.wait_ms);
  f("gate_waits", s.gate_waits);
  f("budget_exhausted", s.budget_exhausted);
  f("respools", s.respools);
  f("poisoned_chunks", s.poisoned_chunks);
  f("splits", s.splits);
  f("auth_refreshes", s.auth_refreshes);
  f("aborts", s.aborts);
  f("partitions_delivered", s.partitions_delivered);
  out += '}';
  return out;
}

}  // namespace fwdsink
