// SPDX-License-Identifier: Apache-2.0
// The upkeep of dead letters once written: Spool::ListDead (with its search),
// Spool::Requeue, Spool::Purge and EnforceDeadCaps. What goes into dead/ is
// dead_letter_writes.cc; the record's format, dead_records.cc. @ref LLP 0020#dead-letters
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "fwdsink/dead_letters.h"
#include "fwdsink/spool.h"
#include "io/file_reader.h"
#include "spool/dead_records.h"
#include "spool/spool_io.h"
#include "spool/spool_records.h"

namespace fwdsink {
namespace fs = std::filesystem;

namespace {

// Records are small; a bigger .json is not one of ours.
constexpr std::size_t kMaxRecordBytes = 64 * 1024;

Status Corrupt(std::string message) { return Status(StatusCode::kCorrupt, std::move(message)); }

struct LoadedRecord {
  DeadEntry entry;
  std::string text;
};

Result<LoadedRecord> LoadRecord(const fs::path& dead_dir, std::string_view dead_name) {
  LoadedRecord r;
  r.entry.name = std::string(dead_name);
  r.entry.record_path = dead_dir / (r.entry.name + std::string(internal::kDeadRecordExt));
  r.entry.rows_path = dead_dir / (r.entry.name + std::string(internal::kDeadRowsExt));
  Result<std::string> text = spool_io::ReadSmallFile(r.entry.record_path, kMaxRecordBytes);
  if (!text) {
    const Status& st = text.status();
    if (st.code() == StatusCode::kNotFound) {
      return spool_io::Reworded(st, "no dead letter " + r.entry.name);
    }
    return st;
  }
  r.text = std::move(text).value();
  if (Status why = internal::ParseDeadRecord(r.text, r.entry); !why.ok()) {
    return Corrupt("dead-letter record " + r.entry.record_path.string() + ": " + why.message());
  }
  return r;
}

// Looks for `needle` in bytes [from, from + max) of `path`, across block boundaries.
bool FileContains(const fs::path& path, std::uint64_t from, std::string_view needle,
                  std::uint64_t max) {
  Result<internal::FileReader> file = internal::FileReader::Open(path);
  if (!file.ok()) return false;
  std::string window;  // the tail of the previous block + the current block
  std::string block(internal::kDeadReadBlock, '\0');
  std::uint64_t pos = from;
  std::uint64_t read_total = 0;
  bool found = false;
  while (!found && read_total < max) {
    const std::size_t want = static_cast<std::size_t>(
        std::min<std::uint64_t>(internal::kDeadReadBlock, max - read_total));
    const Result<std::size_t> n = file->ReadAt(pos, block.data(), want);
    if (!n.ok() || *n == 0) break;
    pos += *n;
    read_total += *n;
    window.append(block.data(), *n);
    found = window.find(needle) != std::string::npos;
    // Keep just enough to catch a match that straddles the next boundary.
    const std::size_t keep = needle.empty() ? 0 : needle.size() - 1;
    if (window.size() > keep) window.erase(0, window.size() - keep);
  }
  return found;
}

bool Matches(const LoadedRecord& r, const DeadFilter& f,
             std::chrono::system_clock::time_point now) {
  const DeadEntry& e = r.entry;
  if (f.reason && e.reason != *f.reason) return false;
  if (f.status && e.status != *f.status) return false;
  if (f.kind && e.kind != *f.kind) return false;
  if (f.older_than && !(e.dead_at <= now - *f.older_than)) return false;
  if (f.newer_than && !(e.dead_at > now - *f.newer_than)) return false;
  if (f.search) {
    const std::string_view record_part =
        std::string_view(r.text).substr(0, static_cast<std::size_t>(kDeadSearchMaxBytes));
    if (record_part.find(*f.search) == std::string_view::npos &&
        !FileContains(e.rows_path, e.data_offset, *f.search, kDeadSearchMaxBytes)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<DeadList> Spool::ListDead(const DeadFilter& filter,
                                 std::chrono::system_clock::time_point now) const {
  DeadList out;
  std::vector<DeadEntry> matches;
  std::error_code ec;
  fs::directory_iterator it(dead_dir(), ec);
  if (ec) return spool_io::IoError("cannot list", dead_dir(), ec);
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return spool_io::IoError("cannot list", dead_dir(), ec);
    const std::string file = it->path().filename().string();
    if (file.size() <= internal::kDeadRecordExt.size() || !file.ends_with(internal::kDeadRecordExt))
      continue;
    const std::string dead_name = file.substr(0, file.size() - internal::kDeadRecordExt.size());
    if (!internal::ValidateDeadName(dead_name).ok()) continue;  // temp files are dotfiles
    Result<LoadedRecord> r = LoadRecord(dead_dir(), dead_name);
    if (!r) {
      if (r.status().code() != StatusCode::kNotFound) out.unreadable.push_back(dead_name);
      continue;  // kNotFound: purged while we listed
    }
    if (Matches(r.value(), filter, now)) matches.push_back(std::move(r.value().entry));
  }
  if (ec) return spool_io::IoError("cannot list", dead_dir(), ec);
  std::sort(matches.begin(), matches.end(), [](const DeadEntry& a, const DeadEntry& b) {
    if (a.dead_at != b.dead_at) return a.dead_at < b.dead_at;
    return a.name < b.name;
  });
  std::sort(out.unreadable.begin(), out.unreadable.end());
  out.total = matches.size();
  const std::size_t first = std::min(filter.offset, matches.size());
  const std::size_t count =
      filter.limit == 0 ? matches.size() - first : std::min(filter.limit, matches.size() - first);
  out.entries.assign(
      std::make_move_iterator(matches.begin() + static_cast<std::ptrdiff_t>(first)),
      std::make_move_iterator(matches.begin() + static_cast<std::ptrdiff_t>(first + count)));
  return out;
}

Result<std::string> Spool::Requeue(std::string_view dead_name,
                                   std::chrono::system_clock::time_point now) {
  if (Status st = internal::ValidateDeadName(dead_name); !st.ok()) return st;
  Result<LoadedRecord> loaded = LoadRecord(dead_dir(), dead_name);
  if (!loaded) return loaded.status();
  DeadEntry& e = loaded.value().entry;

  // The new name starts with the old one, so it sorts with the data's original age.
  // @ref LLP 0020#requeue
  std::string new_name;
  for (std::uint32_t n = e.requeues + 1;; ++n) {
    new_name = e.name + ".requeued-" + std::to_string(n);
    std::error_code ec;
    if (!fs::exists(PartitionPath(new_name), ec) && !ec) break;
    if (ec) return spool_io::IoError("cannot check", PartitionPath(new_name), ec);
  }
  if (Status st = ValidatePartitionName(new_name); !st.ok()) {
    return Status(StatusCode::kInvalidName, "cannot requeue " + e.name + ": " + st.message());
  }

  Result<internal::FileReader> rows = internal::FileReader::Open(e.rows_path);
  if (!rows.ok()) {
    return spool_io::Reworded(rows.status(),
                              "cannot requeue " + e.name + ": " + rows.status().message());
  }
  spool_io::TempFile out;
  Status st = out.Create(incoming_dir() / (new_name + ".ndjson.tmp"));
  std::string block(internal::kDeadReadBlock, '\0');
  std::uint64_t pos = e.data_offset;
  const std::uint64_t stop = e.data_offset + (e.end - e.begin);
  while (st.ok() && pos < stop) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), stop - pos));
    const Result<std::size_t> n = rows->ReadAt(pos, block.data(), want);
    if (!n.ok()) {
      st = spool_io::Reworded(n.status(), "cannot requeue " + e.name + ": " + n.status().message());
    } else if (*n == 0) {
      st = Status(StatusCode::kCorrupt, "cannot requeue " + e.name + ": " + e.rows_path.string() +
                                            " is shorter than its record says");
    } else {
      st = out.Write(std::string_view(block.data(), *n));
      pos += *n;
    }
  }
  if (!st.ok()) return st;
  if (st = out.Commit(PartitionPath(new_name)); !st.ok()) return st;

  // Keep the dead letter as the audit record of what was requeued and when.
  e.requeued_at = now;
  e.requeued_as = new_name;
  ++e.requeues;
  if (st = spool_io::WriteFileAtomic(e.record_path, internal::DumpDeadRecord(e)); !st.ok()) {
    return spool_io::Reworded(st, "requeued " + e.name + " as " + new_name +
                                      " but could not update its record: " + st.message());
  }
  return new_name;
}

Status Spool::Purge(std::string_view dead_name) {
  if (Status st = internal::ValidateDeadName(dead_name); !st.ok()) return st;
  const std::string name(dead_name);
  const fs::path record = dead_dir() / (name + std::string(internal::kDeadRecordExt));
  const fs::path rows = dead_dir() / (name + std::string(internal::kDeadRowsExt));
  std::error_code ec;
  // Record first: once it is gone the entry is no longer listed, whatever happens next.
  const bool had_record = fs::remove(record, ec);
  if (ec) return spool_io::IoError("cannot purge " + name + ": remove", record, ec);
  const bool had_rows = fs::remove(rows, ec);
  if (ec) return spool_io::IoError("cannot purge " + name + ": remove", rows, ec);
  if (!had_record && !had_rows) return Status(StatusCode::kNotFound, "no dead letter " + name);
  return spool_io::FsyncDir(dead_dir());
}

Result<std::size_t> Spool::Purge(const DeadFilter& filter,
                                 std::chrono::system_clock::time_point now) {
  DeadFilter all = filter;
  all.offset = 0;
  all.limit = 0;
  Result<DeadList> list = ListDead(all, now);
  if (!list) return list.status();
  std::size_t purged = 0;
  for (const DeadEntry& e : list.value().entries) {
    if (Status st = Purge(e.name); !st.ok()) {
      return spool_io::Reworded(st,
                                st.message() + " (after purging " + std::to_string(purged) + ")");
    }
    ++purged;
  }
  return purged;
}

namespace {

// The bytes a dead letter holds on disk: its rows file and its record.
std::uint64_t DeadBytes(const DeadEntry& e) {
  std::uint64_t total = 0;
  for (const fs::path& p : {e.rows_path, e.record_path}) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    if (!ec) total += size;
  }
  return total;
}

}  // namespace

// Oldest first, age before bytes: an old letter goes for its age whatever the total,
// and the bytes cap then takes the oldest of what is left. @ref LLP 0025#caps
Result<std::vector<PurgedDeadLetter>> EnforceDeadCaps(Spool& spool, const DeadCaps& caps,
                                                      std::chrono::system_clock::time_point now) {
  std::vector<PurgedDeadLetter> purged;
  if (!caps.any()) return purged;
  DeadFilter all;
  all.limit = 0;
  Result<DeadList> list = spool.ListDead(all, now);
  if (!list) return list.status();
  std::vector<std::uint64_t> sizes;
  std::uint64_t total = 0;
  for (const DeadEntry& e : list.value().entries) {
    sizes.push_back(DeadBytes(e));
    total += sizes.back();
  }
  const auto& entries = list.value().entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const DeadEntry& e = entries[i];
    std::string_view cap;
    if (caps.max_age && e.dead_at <= now - *caps.max_age) {
      cap = "max_dead_age";
    } else if (caps.max_bytes && total > *caps.max_bytes) {
      cap = "max_dead_bytes";
    } else {
      break;  // the rest are younger and the total fits
    }
    if (Status st = spool.Purge(e.name); !st.ok() && st.code() != StatusCode::kNotFound) {
      return st;
    }
    total -= sizes[i];
    purged.push_back({.entry = e, .bytes = sizes[i], .cap = cap});
  }
  return purged;
}

}  // namespace fwdsink
