// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/spool_stats.h"

#include <system_error>

#include "fwdsink/time_format.h"
#include "spool/spool_io.h"

namespace fwdsink {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxLastErrorBytes = 64 * 1024;

// Sealed partitions only: dotfiles are a producer's temp files, other names are not
// ours (the driver quarantines them).
bool IsPartitionFile(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  std::error_code ec;
  return !name.starts_with(".") && name.ends_with(".ndjson") && e.is_regular_file(ec);
}

Status MeasureReady(const fs::path& ready, SpoolUsage& u) {
  std::error_code ec;
  fs::directory_iterator it(ready, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return Status(StatusCode::kNotFound,
                  "no spool at " + ready.parent_path().string() + " (no ready/ folder)");
  }
  if (ec) return spool_io::IoError("cannot list", ready, ec);
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return spool_io::IoError("cannot list", ready, ec);
    if (!IsPartitionFile(*it)) continue;
    std::error_code size_ec, time_ec;
    const auto size = it->file_size(size_ec);
    const auto mtime = it->last_write_time(time_ec);
    if (size_ec || time_ec) continue;  // delivered while we listed
    u.ready_partitions += 1;
    u.ready_bytes += size;
    const auto sys = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
        std::chrono::file_clock::to_sys(mtime));
    if (!u.oldest_ready || sys < *u.oldest_ready) u.oldest_ready = sys;
  }
  return {};
}

Status MeasureDead(const fs::path& dead, SpoolUsage& u) {
  std::error_code ec;
  fs::directory_iterator it(dead, ec);
  if (ec == std::errc::no_such_file_or_directory) return {};
  if (ec) return spool_io::IoError("cannot list", dead, ec);
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return spool_io::IoError("cannot list", dead, ec);
    const std::string name = it->path().filename().string();
    std::error_code size_ec;
    if (name.starts_with(".") || !it->is_regular_file(size_ec)) continue;
    const auto size = it->file_size(size_ec);
    if (size_ec) continue;
    u.dead_bytes += size;
    if (name.ends_with(".json")) u.dead_letters += 1;
  }
  return {};
}

}  // namespace

Result<SpoolUsage> MeasureSpool(const fs::path& spool_dir) {
  SpoolUsage u;
  if (Status st = MeasureReady(spool_dir / "ready", u); !st.ok()) return st;
  if (Status st = MeasureDead(spool_dir / "dead", u); !st.ok()) return st;
  return u;
}

std::uint64_t CountReadyPartitions(const fs::path& spool_dir) {
  std::uint64_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(spool_dir / "ready", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (IsPartitionFile(*it)) ++n;
  }
  return n;
}

fs::path LastErrorPath(const fs::path& spool_dir) { return spool_dir / "last_error.json"; }

bool IsRecordedError(std::string_view name) {
  namespace ev = events;
  for (const std::string_view e :
       {ev::kForwardAuthFailed, ev::kForwardTlsError, ev::kForwardConfigError, ev::kForwardError,
        ev::kForwardGiveUp, ev::kForwardRequestRefused, ev::kDriverPermanentError,
        ev::kDriverSpoolError, ev::kDriverHorizonGiveUp, ev::kDriverDeadLetter}) {
    if (name == e) return true;
  }
  return false;
}

Status WriteLastError(const fs::path& spool_dir, const Event& event,
                      std::chrono::system_clock::time_point when) {
  JsonObject line;
  line.Add("ts", FormatRfc3339(when)).Append(ToJsonObject(event));
  return spool_io::WriteFileAtomic(LastErrorPath(spool_dir), line.Dump() + "\n");
}

Result<std::optional<std::string>> ReadLastError(const fs::path& spool_dir) {
  Result<std::string> text = spool_io::ReadSmallFile(LastErrorPath(spool_dir), kMaxLastErrorBytes);
  if (!text) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return text.status();
  }
  std::string line = std::move(*text);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return std::optional<std::string>(std::move(line));
}

}  // namespace fwdsink
