// SPDX-License-Identifier: Apache-2.0
// The dead-letter record, which both halves of dead/ share (declared in dead_records.h
// and spool_records.h): dead names, the record's text as written (DumpDeadRecord) and as
// parsed (ParseDeadRecord), the kind's spelling. dead_letter_writes.cc puts dead letters
// into dead/, dead_letter_upkeep.cc lists, requeues and purges them. Pure: no I/O.
// @ref LLP 0020#dead-letters
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "base/json_writer.h"
#include "fwdsink/dead_letters.h"
#include "fwdsink/partition_name.h"
#include "fwdsink/time_format.h"
#include "spool/dead_records.h"
#include "spool/spool_io.h"
#include "spool/spool_records.h"

namespace fwdsink {
using nlohmann::json;

namespace {

// Dead names append ".<begin>-<end>" (and ".requeued-<n>") to partition names; this
// keeps "<dead name>.json.tmp" and friends under the 255-byte file name limit.
constexpr std::size_t kMaxDeadNameLength = 240;

Status Corrupt(std::string message) { return Status(StatusCode::kCorrupt, std::move(message)); }

template <typename T>
bool GetUnsigned(const json& j, const char* key, T& out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return false;
  out = it->get<T>();
  return true;
}

bool GetInt(const json& j, const char* key, std::int64_t& out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  out = it->get<std::int64_t>();
  return true;
}

bool GetString(const json& j, const char* key, std::string& out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

// Parses a record; returns kCorrupt naming what is wrong on failure.
Status ParseRecord(std::string_view text, DeadEntry& e) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Corrupt("not a JSON object");
  std::string kind;
  std::int64_t dead_ms = 0;
  std::int64_t status = 0;
  if (!GetString(j, "partition", e.partition) || !GetUnsigned(j, "begin", e.begin) ||
      !GetUnsigned(j, "end", e.end) || !GetUnsigned(j, "rows", e.rows) ||
      !GetInt(j, "status", status) || !GetString(j, "reason", e.reason) ||
      !GetString(j, "kind", kind) || !GetInt(j, "dead_at_ms", dead_ms) ||
      !GetUnsigned(j, "data_offset", e.data_offset)) {
    return Corrupt("a required field is missing or has the wrong type");
  }
  if (kind == "poison") {
    e.kind = DeadKind::kPoison;
  } else if (kind == "horizon") {
    e.kind = DeadKind::kHorizon;
  } else {
    return Corrupt("unknown kind \"" + kind + "\"");
  }
  if (e.end < e.begin) return Corrupt("end is before begin");
  e.status = static_cast<int>(std::clamp<std::int64_t>(status, INT32_MIN, INT32_MAX));
  e.dead_at = spool_io::FromUnixMs(dead_ms);
  std::int64_t requeued_ms = 0;
  if (GetInt(j, "requeued_at_ms", requeued_ms)) e.requeued_at = spool_io::FromUnixMs(requeued_ms);
  std::string requeued_as;
  if (GetString(j, "requeued_as", requeued_as)) e.requeued_as = std::move(requeued_as);
  GetUnsigned(j, "requeues", e.requeues);
  return OkStatus();
}

}  // namespace

namespace internal {

Status ValidateDeadName(std::string_view name) {
  if (name.size() > kMaxDeadNameLength) {
    return Status(StatusCode::kInvalidName, "invalid dead-letter name: longer than " +
                                                std::to_string(kMaxDeadNameLength) + " bytes");
  }
  // Same alphabet as partition names; only the length bound differs.
  if (name.size() <= kMaxPartitionNameLength) {
    Status st = ValidatePartitionName(name);
    if (st.ok()) return st;
    std::string message = st.message();
    message.replace(0, std::string_view("invalid partition name").size(),
                    "invalid dead-letter name");
    return spool_io::Reworded(st, std::move(message));
  }
  Status st = ValidatePartitionName(name.substr(0, kMaxPartitionNameLength));
  if (st.ok()) st = ValidatePartitionName(name.substr(kMaxPartitionNameLength));
  if (!st.ok()) {
    return Status(StatusCode::kInvalidName,
                  "invalid dead-letter name: only A-Z a-z 0-9 . _ - are allowed");
  }
  return {};
}

std::string DeadName(std::string_view partition, std::uint64_t begin, std::uint64_t end) {
  return std::string(partition) + "." + std::to_string(begin) + "-" + std::to_string(end);
}

std::string DumpDeadRecord(const DeadEntry& e) {
  json j = {
      {"partition", e.partition},
      {"begin", e.begin},
      {"end", e.end},
      {"rows", e.rows},
      {"status", e.status},
      {"reason", e.reason},
      {"kind", std::string(to_string(e.kind))},
      {"dead_at", FormatRfc3339(e.dead_at)},
      {"dead_at_ms", spool_io::ToUnixMs(e.dead_at)},
      {"data_offset", e.data_offset},
  };
  if (e.requeued_at) {
    j["requeued_at"] = FormatRfc3339(*e.requeued_at);
    j["requeued_at_ms"] = spool_io::ToUnixMs(*e.requeued_at);
  }
  if (e.requeued_as) j["requeued_as"] = *e.requeued_as;
  if (e.requeues > 0) j["requeues"] = e.requeues;
  // A server's reason is not guaranteed UTF-8: replace, never throw.
  return internal::DumpJson(j, /*indent=*/1) + "\n";
}

}  // namespace internal

Status internal::ParseDeadRecord(std::string_view text, DeadEntry& out) {
  return ParseRecord(text, out);
}

std::string_view to_string(DeadKind kind) noexcept {
  switch (kind) {
    case DeadKind::kPoison: return "poison";
    case DeadKind::kHorizon: return "horizon";
  }
  return "unknown";
}

}  // namespace fwdsink
