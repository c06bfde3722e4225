// SPDX-License-Identifier: Apache-2.0
// `fwdsink status --spool DIR [--json]`: one screen for an operator without metrics —
// the backlog, each partition's cursor and failure state, dead letters by reason, the
// last error recorded. Read-only: it takes no lock and writes nothing, so it runs beside
// a daemon that forwards the spool. @ref LLP 0025#status
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "fwdsink/pack_manifest.h"
#include "fwdsink/read_file.h"
#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/time_format.h"

namespace fwdsink_cli {
namespace {

namespace fs = std::filesystem;
using SysTime = std::chrono::system_clock::time_point;

// Partitions listed on the human screen (all of them with --json).
constexpr std::size_t kScreenPartitions = 40;

struct PartitionRow {
  fwdsink::ReadyPartition p;
  fwdsink::CursorState cursor;
};

struct DeadGroup {
  std::uint64_t count = 0;
  std::uint64_t rows = 0;
};
// (reason, status, kind) -> count and rows.
using DeadGroups = std::map<std::tuple<std::string, int, std::string>, DeadGroup>;

struct Snapshot {
  fs::path spool;
  std::optional<long> lock_pid;  // the pid in SPOOL/lock, if any
  bool lock_pid_alive = false;
  fwdsink::SpoolUsage usage;
  std::vector<PartitionRow> partitions;
  DeadGroups dead;
  std::uint64_t dead_total = 0;
  std::vector<std::string> dead_unreadable;
  std::optional<std::string> last_error;     // JSON text
  std::vector<fwdsink::PackManifest> packs;  // manifests in flight @ref LLP 0027#manifest
};

std::string Iso(SysTime t) { return fwdsink::FormatRfc3339(t, fwdsink::TimePrecision::kSeconds); }

std::int64_t AgeSeconds(SysTime then, SysTime now) {
  return std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::seconds>(now - then).count());
}

// The pid the last lock holder wrote, and whether that process still exists. Reading
// the file takes no lock (flock is advisory), so a running daemon is not disturbed.
void ReadLockPid(Snapshot& s) {
  // @ref LLP 0023#regular-files
  const fwdsink::Result<std::string> text =
      fwdsink::ReadRegularFile(s.spool / "lock", {.max_bytes = 64, .follow_symlinks = false});
  long pid = 0;
  if (text && std::sscanf(text->c_str(), "%ld", &pid) == 1 && pid > 0) {
    s.lock_pid = pid;
    s.lock_pid_alive = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
  }
}

fwdsink::Status Collect(Snapshot& s, SysTime now) {
  for (const char* sub : {"ready", "state", "dead"}) {
    if (!fs::is_directory(s.spool / sub)) {
      return fwdsink::Status(fwdsink::StatusCode::kNotFound,
                             "no spool at " + s.spool.string() + " (no " + sub + "/ folder)");
    }
  }
  auto usage = fwdsink::MeasureSpool(s.spool);
  if (!usage) return usage.status();
  s.usage = *usage;
  // Not Spool::Open, which would create a missing incoming/. @ref LLP 0025#status
  auto spool = fwdsink::Spool::OpenExisting(s.spool);
  if (!spool) return spool.status();
  auto ready = spool->ListReady();
  if (!ready) return ready.status();
  for (fwdsink::ReadyPartition& p : *ready) {
    fwdsink::CursorState cursor = spool->LoadCursor(p.name);
    s.partitions.push_back({std::move(p), std::move(cursor)});
  }
  fwdsink::DeadFilter all;
  all.limit = 0;
  auto dead = spool->ListDead(all, now);
  if (!dead) return dead.status();
  s.dead_total = dead->total;
  s.dead_unreadable = dead->unreadable;
  for (const fwdsink::DeadEntry& e : dead->entries) {
    DeadGroup& g = s.dead[{e.reason, e.status, std::string(fwdsink::to_string(e.kind))}];
    g.count += 1;
    g.rows += e.rows;
  }
  auto last = fwdsink::ReadLastError(s.spool);
  if (last) s.last_error = *last;
  auto packs = fwdsink::ListPackManifests(s.spool);
  if (packs) s.packs = std::move(packs->manifests);
  ReadLockPid(s);
  return {};
}

fwdsink::JsonObject PartitionJson(const PartitionRow& r) {
  fwdsink::JsonObject j;
  j.Add("name", r.p.name)
      .Add("bytes", r.p.size)
      .Add("cursor", r.cursor.offset)
      .Add("cursor_state", fwdsink::to_string(r.cursor.status))
      .Add("failures", r.cursor.failures);
  if (r.cursor.first_failure) j.Add("first_failure", Iso(*r.cursor.first_failure));
  if (!r.cursor.message.empty()) j.Add("message", r.cursor.message);
  return j;
}

std::string JsonText(const Snapshot& s, SysTime now) {
  std::vector<fwdsink::JsonObject> parts, dead;
  for (const PartitionRow& r : s.partitions) parts.push_back(PartitionJson(r));
  for (const auto& [key, g] : s.dead) {
    fwdsink::JsonObject d;
    d.Add("reason", std::get<0>(key)).Add("status", std::get<1>(key)).Add("kind", std::get<2>(key));
    dead.push_back(d.Add("count", g.count).Add("rows", g.rows));
  }
  fwdsink::JsonObject backlog;
  backlog.Add("partitions", s.usage.ready_partitions)
      .Add("bytes", s.usage.ready_bytes)
      .Add("oldest_age_s", s.usage.oldest_ready ? AgeSeconds(*s.usage.oldest_ready, now) : 0);
  fwdsink::JsonObject dead_obj;
  dead_obj.Add("total", s.dead_total)
      .Add("bytes", s.usage.dead_bytes)
      .Add("by_reason", dead)
      .Add("unreadable", s.dead_unreadable);
  fwdsink::JsonObject out;
  out.Add("spool", s.spool.string());
  if (s.lock_pid) out.Add("lock_pid", *s.lock_pid).Add("lock_pid_alive", s.lock_pid_alive);
  std::vector<fwdsink::JsonObject> packs;
  for (const fwdsink::PackManifest& m : s.packs) {
    fwdsink::JsonObject p;
    std::vector<std::string> names;
    for (const fwdsink::ManifestMember& x : m.members) names.push_back(x.name);
    packs.push_back(
        p.Add("key", m.key).Add("state", m.acked ? "acknowledged" : "sent").Add("members", names));
  }
  out.Add("backlog", backlog).Add("partitions", parts).Add("packs_in_flight", packs);
  out.Add("dead", dead_obj);
  std::string text = out.Dump();
  // last_error is already JSON: splice it in as an object (or null), not as a string.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  j["last_error"] = nullptr;
  if (s.last_error) {
    auto parsed = nlohmann::ordered_json::parse(*s.last_error, nullptr, false);
    j["last_error"] = parsed.is_discarded() ? nlohmann::ordered_json(*s.last_error) : parsed;
  }
  return j.dump();
}

std::string HumanBytes(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1ull << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

void PrintPartitions(const Snapshot& s) {
  if (s.partitions.empty()) return;
  std::printf("  %-44s %10s %10s %5s %-8s %8s  %s\n", "PARTITION", "BYTES", "CURSOR", "DONE",
              "STATE", "FAILURES", "FIRST_FAILURE");
  for (std::size_t i = 0; i < s.partitions.size() && i < kScreenPartitions; ++i) {
    const PartitionRow& r = s.partitions[i];
    const double done =
        r.p.size ? 100.0 * static_cast<double>(r.cursor.offset) / static_cast<double>(r.p.size) : 0;
    std::printf("  %-44s %10llu %10llu %4.0f%% %-8s %8u  %s\n", r.p.name.c_str(),
                static_cast<unsigned long long>(r.p.size),
                static_cast<unsigned long long>(r.cursor.offset), done,
                std::string(fwdsink::to_string(r.cursor.status)).c_str(), r.cursor.failures,
                r.cursor.first_failure ? Iso(*r.cursor.first_failure).c_str() : "-");
  }
  if (s.partitions.size() > kScreenPartitions) {
    std::printf("  ... and %zu more (--json lists them all)\n",
                s.partitions.size() - kScreenPartitions);
  }
}

void PrintScreen(const Snapshot& s, SysTime now) {
  std::printf("spool %s", s.spool.string().c_str());
  if (s.lock_pid) {
    std::printf("  (lock: pid %ld, %s)", *s.lock_pid, s.lock_pid_alive ? "running" : "gone");
  }
  std::printf("\nbacklog: %llu partitions, %s",
              static_cast<unsigned long long>(s.usage.ready_partitions),
              HumanBytes(s.usage.ready_bytes).c_str());
  if (s.usage.oldest_ready) {
    std::printf(", oldest %llds", static_cast<long long>(AgeSeconds(*s.usage.oldest_ready, now)));
  }
  std::printf("\n");
  PrintPartitions(s);
  for (const fwdsink::PackManifest& m : s.packs) {
    std::printf("pack in flight: %s (%zu partitions, %s)\n", m.key.c_str(), m.members.size(),
                m.acked ? "acknowledged, members being removed" : "sent, not yet acknowledged");
  }
  std::printf("dead letters: %llu (%s)\n", static_cast<unsigned long long>(s.dead_total),
              HumanBytes(s.usage.dead_bytes).c_str());
  if (!s.dead.empty())
    std::printf("  %-24s %6s %-8s %8s %10s\n", "REASON", "STATUS", "KIND", "COUNT", "ROWS");
  for (const auto& [key, g] : s.dead) {
    std::printf("  %-24s %6d %-8s %8llu %10llu\n", std::get<0>(key).c_str(), std::get<1>(key),
                std::get<2>(key).c_str(), static_cast<unsigned long long>(g.count),
                static_cast<unsigned long long>(g.rows));
  }
  for (const std::string& bad : s.dead_unreadable)
    std::printf("  unreadable record: %s\n", bad.c_str());
  std::printf("last error: %s\n", s.last_error ? s.last_error->c_str() : "none recorded");
}

}  // namespace

Parsed<StatusConfig> ParseStatus(const std::vector<std::string>& args) {
  StatusConfig c;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      c.help = true;
    } else if (a == "--json") {
      c.json = true;
    } else if (a == "--spool" && i + 1 < args.size()) {
      c.spool = args[++i];
    } else if (a.starts_with("--spool=")) {
      c.spool = a.substr(8);
    } else if (a == "--spool") {
      return {std::nullopt, {"--spool", "needs a value"}};
    } else {
      return {std::nullopt,
              {a, a.starts_with("-") ? "unknown option (see --help)" : "unexpected argument"}};
    }
  }
  if (c.help) return {c, {}};
  if (c.spool.empty()) return {std::nullopt, {"--spool", "is required"}};
  return {c, {}};
}

std::string StatusUsage() {
  return R"(usage: fwdsink status --spool DIR [--json]

Shows a spool at a glance: the backlog in ready/ (partitions, bytes, the oldest one's
age), each partition's cursor and failure state, the dead letters by reason, and the
last error the daemon recorded (SPOOL/last_error.json). Read-only: it takes no lock
and may run while a daemon forwards the spool. --json prints one JSON object.
Exit 0, 66 when DIR is not a spool, 74 when it cannot be read.
)";
}

int RunStatus(const StatusConfig& config) {
  Snapshot s;
  s.spool = config.spool;
  const SysTime now = std::chrono::system_clock::now();
  if (const fwdsink::Status st = Collect(s, now); !st.ok()) {
    std::cerr << "fwdsink: status: " << st.message() << "\n";
    return st.code() == fwdsink::StatusCode::kNotFound ? kExitNoInput : kExitIoErr;
  }
  if (config.json) {
    std::cout << JsonText(s, now) << "\n";
  } else {
    PrintScreen(s, now);
  }
  return kExitOk;
}

}  // namespace fwdsink_cli
