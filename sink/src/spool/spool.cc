// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <utility>

#include "io/file_reader.h"
#include "spool/spool_io.h"
#include "spool/spool_records.h"

namespace fwdsink {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPartitionExt = ".ndjson";
constexpr std::string_view kCursorExt = ".cursor";

bool NameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Checks that `offset` and every journal boundary are within the partition and at a line
// start (a journal's last end may be the file's end). Returns OK, kCorrupt when the
// record is wrong for this partition, or kIo/kNotFound when the partition cannot be
// read (the message names it). @ref LLP 0020#cursor-v2
// The first bytes an identity's checksum covers. @ref LLP 0020#file-identity
constexpr std::uint64_t kIdentityHeadBytes = 4096;

// Which file `partition` is now (its device and inode, and the checksum of its first
// `head_bytes` bytes: all it has, up to kIdentityHeadBytes, when 0), and its size.
struct FoundFile {
  PartitionIdentity id;
  std::uint64_t size = 0;
};
Result<FoundFile> IdentityOf(const fs::path& partition, std::uint64_t head_bytes = 0) {
  Result<internal::FileReader> file = internal::FileReader::Open(partition);
  if (!file.ok()) return std::move(file).status();
  Result<internal::FileInfo> info = file->Stat();
  if (!info.ok()) return std::move(info).status();
  FoundFile found{.id = {.device = info->device, .inode = info->inode}, .size = info->size};
  PartitionIdentity& id = found.id;
  id.head_bytes = head_bytes > 0 ? head_bytes : std::min(info->size, kIdentityHeadBytes);
  if (info->size < id.head_bytes) {
    id.head_bytes = info->size;  // shorter than it was: the checksum cannot match
    return found;
  }
  std::string head(static_cast<std::size_t>(id.head_bytes), '\0');
  Result<std::size_t> got = file->ReadAt(0, head.data(), head.size());
  if (!got.ok()) return std::move(got).status();
  head.resize(*got);
  id.head_crc = spool_io::Crc32(head);
  return found;
}

// Says what changed between the file a record belongs to and the one there now; empty
// when it is the same file (an append is the same file), or when the file cannot be
// read (the offset check says so next). @ref LLP 0020#file-identity
std::string WhatChanged(const PartitionIdentity& was, const fs::path& partition,
                        std::uint64_t offset) {
  Result<FoundFile> found = IdentityOf(partition, was.head_bytes);
  if (!found.ok()) return {};
  const PartitionIdentity& now = found->id;
  const std::uint64_t size = found->size;
  if (was.device != now.device || was.inode != now.inode) {
    return "replaced: another file under the same name (device:inode " +
           std::to_string(was.device) + ":" + std::to_string(was.inode) + " then, " +
           std::to_string(now.device) + ":" + std::to_string(now.inode) + " now)";
  }
  if (size < offset || now.head_bytes < was.head_bytes) {
    return "truncated: " + std::to_string(size) + " bytes now, the cursor is at " +
           std::to_string(offset);
  }
  if (now.head_crc != was.head_crc) {
    return "rewritten: its first " + std::to_string(was.head_bytes) +
           " bytes are not the ones sent";
  }
  return {};
}

Status CheckOffsetAgainst(const fs::path& partition, std::uint64_t offset,
                          const std::vector<CursorRange>& ranges) {
  Result<internal::FileReader> file = internal::FileReader::Open(partition);
  if (!file.ok()) {
    if (file.status().code() != StatusCode::kNotFound) return std::move(file).status();
    return Status(StatusCode::kNotFound,
                  "cannot open partition " + partition.string() + ": " + std::strerror(ENOENT));
  }
  Result<internal::FileInfo> info = file->Stat();
  if (!info.ok()) return std::move(info).status();
  if (offset > info->size) {
    return Status(StatusCode::kCorrupt, "cursor offset " + std::to_string(offset) +
                                            " is beyond the partition size " +
                                            std::to_string(info->size));
  }
  Result<bool> at_line_start = file->AtLineStart(offset);
  if (!at_line_start.ok()) return std::move(at_line_start).status();
  if (!*at_line_start) {
    return Status(StatusCode::kCorrupt,
                  "cursor offset " + std::to_string(offset) + " is not at a line start");
  }
  // CheckJournal made the ranges gapless from the offset: each end is the next begin.
  for (const CursorRange& r : ranges) {
    const std::string shown = std::to_string(r.begin) + "-" + std::to_string(r.end);
    if (r.end > info->size) {
      return Status(StatusCode::kCorrupt, "cursor journal range " + shown +
                                              " ends beyond the partition size " +
                                              std::to_string(info->size));
    }
    if (r.end == info->size) continue;
    Result<bool> boundary = file->AtLineStart(r.end);
    if (!boundary.ok()) return std::move(boundary).status();
    if (!*boundary) {
      return Status(StatusCode::kCorrupt,
                    "cursor journal range " + shown + " does not end at a line start");
    }
  }
  return OkStatus();
}

}  // namespace

std::string_view to_string(CursorStatus status) noexcept {
  switch (status) {
    case CursorStatus::kMissing: return "missing";
    case CursorStatus::kOk: return "ok";
    case CursorStatus::kCorrupt: return "corrupt";
    case CursorStatus::kError: return "error";
    case CursorStatus::kChanged: return "changed";
  }
  return "unknown";
}

Status ValidatePartitionName(std::string_view name) {
  // Names become file names: keep them to a portable, shell-safe alphabet with no
  // path separators and no hidden or "."/".." entries. @ref LLP 0020#names
  auto bad = [&](std::string_view why) {
    std::string shown(name.substr(0, 64));
    for (char& c : shown) {
      if (!NameChar(c)) c = '?';
    }
    return Status(StatusCode::kInvalidName,
                  "invalid partition name \"" + shown + "\": " + std::string(why));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > kMaxPartitionNameLength) {
    return bad("longer than " + std::to_string(kMaxPartitionNameLength) + " bytes");
  }
  if (name.front() == '.') return bad("starts with '.'");
  if (!std::all_of(name.begin(), name.end(), NameChar)) {
    return bad("only A-Z a-z 0-9 . _ - are allowed");
  }
  return {};
}

Result<Spool> Spool::Open(fs::path dir) {
  if (dir.empty()) return Status(StatusCode::kInvalidArgument, "empty spool path");
  Spool spool(dir);
  for (const fs::path& sub :
       {spool.dir_, spool.ready_dir(), spool.state_dir(), spool.dead_dir(), spool.incoming_dir()}) {
    std::error_code ec;
    fs::create_directories(sub, ec);
    if (ec) return spool_io::IoError("cannot create spool folder", sub, ec);
    if (!fs::is_directory(sub, ec)) {
      return Status(StatusCode::kIo, "spool path " + sub.string() + " is not a folder");
    }
  }
  return spool;
}

Result<Spool> Spool::OpenExisting(fs::path dir) {
  if (dir.empty()) return Status(StatusCode::kInvalidArgument, "empty spool path");
  Spool spool(dir);
  for (const fs::path& sub : {spool.dir_, spool.ready_dir(), spool.state_dir(), spool.dead_dir()}) {
    std::error_code ec;
    if (!fs::is_directory(sub, ec)) {
      return Status(StatusCode::kNotFound, "no spool folder " + sub.string());
    }
  }
  return spool;
}

fs::path Spool::PartitionPath(std::string_view name) const {
  return ready_dir() / (std::string(name) + std::string(kPartitionExt));
}

fs::path Spool::CursorPath(std::string_view name) const {
  return state_dir() / (std::string(name) + std::string(kCursorExt));
}

Result<std::vector<ReadyPartition>> Spool::ListReady() const {
  Result<ReadyScan> scan = ScanReady();
  if (!scan.ok()) return std::move(scan).status();
  return std::move(scan->ready);
}

namespace {

// What ready/<file> is, looked at without following a symlink: a partition to send
// (nullopt), or why not. Dotfiles and vanished entries are skipped (`skip`).
std::optional<RefusedEntry> Examine(const fs::directory_entry& entry, const std::string& file,
                                    ReadyPartition& found, bool& skip) {
  skip = false;
  if (file.starts_with(".")) {  // our own temp files, and "." / ".."
    skip = true;
    return std::nullopt;
  }
  struct stat st {};
  if (::lstat(entry.path().c_str(), &st) != 0) {
    skip = true;  // vanished between listing and stat: not ready any more
    return std::nullopt;
  }
  auto refuse = [&](std::string reason, std::string detail) {
    return RefusedEntry{file, std::move(reason), std::move(detail)};
  };
  if (file.size() <= kPartitionExt.size() || !file.ends_with(kPartitionExt)) {
    return refuse("bad_name", "not a <name>.ndjson partition");
  }
  const std::string name = file.substr(0, file.size() - kPartitionExt.size());
  if (Status bad = ValidatePartitionName(name); !bad.ok()) return refuse("bad_name", bad.message());
  if (S_ISLNK(st.st_mode)) return refuse("symlink", "a symlink (never followed)");
  if (!S_ISREG(st.st_mode)) return refuse("not_regular", "not a regular file");
  if (st.st_nlink != 1) {
    return refuse("hard_link", "a file with " + std::to_string(st.st_nlink) +
                                   " hard links (each name would be sent)");
  }
  found.size = static_cast<std::uint64_t>(st.st_size);
  found.mtime_ns = internal::MtimeNs(st);
  return std::nullopt;
}

}  // namespace

// @ref LLP 0023#spool
Result<ReadyScan> Spool::ScanReady() const {
  ReadyScan out;
  std::error_code ec;
  fs::directory_iterator it(ready_dir(), ec);
  if (ec) return spool_io::IoError("cannot list", ready_dir(), ec);
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return spool_io::IoError("cannot list", ready_dir(), ec);
    const std::string file = it->path().filename().string();
    ReadyPartition found;
    bool skip = false;
    std::optional<RefusedEntry> refused = Examine(*it, file, found, skip);
    if (skip) continue;
    if (refused) {
      out.refused.push_back(std::move(*refused));
      continue;
    }
    found.name = file.substr(0, file.size() - kPartitionExt.size());
    found.path = it->path();
    out.ready.push_back(std::move(found));
  }
  if (ec) return spool_io::IoError("cannot list", ready_dir(), ec);
  std::sort(out.ready.begin(), out.ready.end(),
            [](const ReadyPartition& a, const ReadyPartition& b) { return a.name < b.name; });
  return out;
}

Result<fs::path> Spool::Quarantine(const RefusedEntry& entry) const {
  std::error_code ec;
  fs::create_directories(quarantine_dir(), ec);
  if (ec) return spool_io::IoError("cannot create spool folder", quarantine_dir(), ec);
  const fs::path from = ready_dir() / entry.file;
  // A name too long to take a suffix keeps a short, safe one instead.
  const std::string base = entry.file.size() > 200 ? "entry" : entry.file;
  for (int n = 0; n < 1000; ++n) {
    const fs::path to = quarantine_dir() / (n == 0 ? base : base + "." + std::to_string(n));
    // renameat2(RENAME_NOREPLACE) semantics by hand: never overwrite an earlier one.
    if (::faccessat(AT_FDCWD, to.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) continue;
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return spool_io::IoError("cannot move to quarantine", from, errno);
    }
    (void)spool_io::FsyncDir(ready_dir());
    (void)spool_io::FsyncDir(quarantine_dir());
    return to;
  }
  return Status(StatusCode::kIo, "quarantine is full of copies of " + base);
}

Result<Spool::FileState> Spool::PartitionState(std::string_view name) const {
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  const fs::path path = PartitionPath(name);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status(StatusCode::kNotFound, "no partition " + path.string());
    return spool_io::IoError("cannot stat", path, errno);
  }
  return FileState{static_cast<std::uint64_t>(st.st_size), internal::MtimeNs(st)};
}

Result<std::vector<fs::path>> Spool::EnsureFolders() const {
  std::vector<fs::path> made;
  for (const fs::path& sub : {dir_, ready_dir(), state_dir(), dead_dir(), incoming_dir()}) {
    std::error_code ec;
    // Only what has vanished is recreated; something else in the way is a spool
    // error that the operation needing the folder reports.
    if (fs::exists(fs::symlink_status(sub, ec))) continue;
    if (!fs::create_directories(sub, ec) && ec) {
      return spool_io::IoError("cannot create spool folder", sub, ec);
    }
    if (!fs::is_directory(sub, ec)) {
      return Status(StatusCode::kIo, "spool path " + sub.string() + " is not a folder");
    }
    made.push_back(sub);
  }
  return made;
}

Result<SpoolLock> SpoolLock::Acquire(const fs::path& spool_dir) {
  const fs::path path = spool_dir / "lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return spool_io::IoError("cannot open the spool lock", path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) return spool_io::IoError("cannot lock", path, err);
    std::string holder(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Status(StatusCode::kBusy, "spool " + spool_dir.string() +
                                         " is locked by another fwdsink (pid " +
                                         (holder.empty() ? std::string("unknown") : holder) +
                                         ", lock file " + path.string() + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    const int err = errno;
    ::close(fd);
    return spool_io::IoError("cannot write the spool lock", path, err);
  }
  return SpoolLock(fd);
}

SpoolLock::SpoolLock(SpoolLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

SpoolLock& SpoolLock::operator=(SpoolLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

// Closing the descriptor releases the flock; the file stays (removing it would race
// with a daemon that just opened it).
SpoolLock::~SpoolLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unordered_set<std::string>> Spool::CursorNames() const {
  std::unordered_set<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(state_dir(), ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() > kCursorExt.size() && file.ends_with(kCursorExt)) {
      names.insert(file.substr(0, file.size() - kCursorExt.size()));
    }
  }
  if (ec) return spool_io::IoError("cannot list", state_dir(), ec);
  return names;
}

CursorState Spool::LoadCursor(std::string_view name) const {
  CursorState state;
  if (Status st = ValidatePartitionName(name); !st.ok()) {
    state.status = CursorStatus::kError;
    state.message = st.message();
    return state;
  }
  const fs::path path = CursorPath(name);
  Result<std::string> text = spool_io::ReadSmallFile(path, internal::kMaxCursorFileBytes);
  if (!text) {
    if (text.status().code() == StatusCode::kNotFound) {
      state.status = CursorStatus::kMissing;
    } else if (text.status().code() == StatusCode::kCorrupt) {
      state.status = CursorStatus::kCorrupt;
      state.message = text.status().message();
    } else {
      state.status = CursorStatus::kError;
      state.message = text.status().message();
    }
    return state;
  }
  CursorState parsed;
  if (Status why = internal::ParseCursorRecord(text.value(), parsed); !why.ok()) {
    // Torn or garbage: nothing in it can be trusted. Resending from 0 is safe because
    // chunk keys are byte ranges of the same partition. @ref LLP 0020#corrupt-cursor
    state.status = CursorStatus::kCorrupt;
    state.message = path.string() + ": " + why.message();
    return state;
  }
  // A record of another file is neither resumed (its rows past the cursor would be
  // skipped) nor restarted (its rows before it would go twice). @ref LLP 0020#file-identity
  if (parsed.identity) {
    if (std::string changed = WhatChanged(*parsed.identity, PartitionPath(name), parsed.offset);
        !changed.empty()) {
      parsed.status = CursorStatus::kChanged;
      parsed.message = "partition " + std::string(name) + " " + changed;
      return parsed;
    }
  }
  if (Status why = CheckOffsetAgainst(PartitionPath(name), parsed.offset, parsed.ranges);
      !why.ok()) {
    if (why.code() != StatusCode::kCorrupt) {
      state.status = CursorStatus::kError;
      state.message = why.message();
      return state;
    }
    // The checksum held, so the failure history is genuine; only the offset (or the
    // journal) is not.
    parsed.offset = 0;
    parsed.ranges.clear();
    parsed.status = CursorStatus::kCorrupt;
    parsed.message = path.string() + ": " + why.message();
    return parsed;
  }
  parsed.status = CursorStatus::kOk;
  return parsed;
}

Status Spool::UpdateCursor(std::string_view name, const std::function<void(CursorState&)>& change) {
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  CursorState state;
  // Keep what the record says; an unreadable record simply starts a fresh one.
  if (Result<std::string> text =
          spool_io::ReadSmallFile(CursorPath(name), internal::kMaxCursorFileBytes)) {
    (void)internal::ParseCursorRecord(text.value(), state);
  }
  change(state);
  // The first record names the file it belongs to; later ones keep it. A partition that
  // is not there (or not readable) gets none, and is checked as before.
  // @ref LLP 0020#file-identity
  if (!state.identity) {
    if (Result<FoundFile> found = IdentityOf(PartitionPath(name)); found.ok()) {
      state.identity = found->id;
    }
  }
  // @ref LLP 0020#atomic-writes
  return spool_io::WriteFileAtomic(CursorPath(name), internal::FormatCursorRecord(state));
}

Status Spool::SaveCursor(std::string_view name, std::uint64_t offset,
                         std::span<const CursorRange> ranges) {
  // Refused before anything is written: a journal LoadCursor would call corrupt must
  // never replace a good record. @ref LLP 0020#cursor-v2
  if (Status bad = internal::CheckJournal(offset, ranges); !bad.ok()) {
    return Status(StatusCode::kInvalidArgument, "cannot save the cursor of partition " +
                                                    std::string(name) + ": " + bad.message());
  }
  return UpdateCursor(name, [offset, ranges](CursorState& state) {
    state.offset = offset;
    state.ranges.assign(ranges.begin(), ranges.end());
  });
}

Status Spool::RecordFailure(std::string_view name, std::chrono::system_clock::time_point now) {
  return UpdateCursor(name, [now](CursorState& state) {
    // The give-up horizon runs from the first failure: a later failure, or progress in
    // between, must not push it back. @ref LLP 0020#failure-horizon
    if (!state.first_failure) state.first_failure = now;
    if (state.failures < UINT32_MAX) ++state.failures;
  });
}

Status Spool::ClearFailures(std::string_view name) {
  return UpdateCursor(name, [](CursorState& state) {
    // Progress restarts the give-up horizon: keep the offset, forget the failures.
    // @ref LLP 0020#failure-horizon
    state.first_failure.reset();
    state.failures = 0;
  });
}

Status Spool::MarkDelivered(std::string_view name) {
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  Status result;
  const fs::path partition = PartitionPath(name);
  std::error_code ec;
  if (!fs::remove(partition, ec)) {
    result = ec ? spool_io::IoError("cannot remove partition", partition, ec)
                : Status(StatusCode::kNotFound, "no partition " + partition.string());
  }
  // The cursor goes after the partition: a crash in between leaves an orphan cursor,
  // never a partition without its cursor (which would be re-sent from 0).
  const fs::path cursor = CursorPath(name);
  const bool had_cursor = fs::remove(cursor, ec);
  if (ec && result.ok()) result = spool_io::IoError("cannot remove cursor", cursor, ec);
  if (Status st = spool_io::FsyncDir(ready_dir()); !st.ok() && result.ok()) result = st;
  // state/ changed only if there was a cursor to remove (a one-chunk partition never
  // has one: the driver does not save the cursor of a partition's final chunk).
  if (had_cursor) {
    if (Status st = spool_io::FsyncDir(state_dir()); !st.ok() && result.ok()) result = st;
  }
  return result;
}

}  // namespace fwdsink
