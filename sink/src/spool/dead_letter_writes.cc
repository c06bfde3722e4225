// SPDX-License-Identifier: Apache-2.0
// The spool's ways into dead/: a poisoned chunk, a row too long to send, a partition
// given up whole or less what the server acknowledged past a gap. Each writes its rows
// before the record that makes it visible. @ref LLP 0020#dead-letters
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>
#include <vector>

#include "fwdsink/dead_letters.h"
#include "fwdsink/spool.h"
#include "io/file_reader.h"
#include "spool/dead_records.h"
#include "spool/spool_io.h"

namespace fwdsink {
namespace fs = std::filesystem;

namespace {

std::uint64_t CountRows(std::string_view bytes) {
  std::uint64_t rows = static_cast<std::uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
  if (!bytes.empty() && bytes.back() != '\n') ++rows;  // a final row without newline
  return rows;
}

// What a dead letter of partition `name`'s bytes [begin, end) is, its files under
// `dead_dir`; the caller sets the rows. kInvalidName for a name dead/ cannot hold.
Result<DeadEntry> NewEntry(std::string_view name, std::uint64_t begin, std::uint64_t end,
                           DeadKind kind, int status, std::string_view reason,
                           std::chrono::system_clock::time_point when, std::uint64_t data_offset,
                           const fs::path& dead_dir) {
  DeadEntry e;
  e.name = internal::DeadName(name, begin, end);
  if (Status st = internal::ValidateDeadName(e.name); !st.ok()) return st;
  e.partition = std::string(name);
  e.begin = begin;
  e.end = end;
  e.status = status;
  e.reason = std::string(reason);
  e.kind = kind;
  e.dead_at = when;
  e.data_offset = data_offset;
  e.rows_path = dead_dir / (e.name + std::string(internal::kDeadRowsExt));
  e.record_path = dead_dir / (e.name + std::string(internal::kDeadRecordExt));
  return e;
}

// Removes the cursor record of a partition that was given up, durably.
Status RemoveCursorRecord(const fs::path& cursor, const fs::path& state_dir) {
  std::error_code ec;
  fs::remove(cursor, ec);
  if (ec) return spool_io::IoError("cannot remove cursor", cursor, ec);
  return spool_io::FsyncDir(state_dir);
}

// Counts rows in bytes [from, end of file) of an open file.
Result<std::uint64_t> CountRowsInFile(const internal::FileReader& file, std::uint64_t from) {
  std::string block(internal::kDeadReadBlock, '\0');
  std::uint64_t rows = 0;
  char last = '\n';
  std::uint64_t pos = from;
  for (;;) {
    const Result<std::size_t> n = file.ReadAt(pos, block.data(), block.size());
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    const std::string_view got(block.data(), *n);
    rows += static_cast<std::uint64_t>(std::count(got.begin(), got.end(), '\n'));
    last = got.back();
    pos += *n;
  }
  if (last != '\n') ++rows;
  return rows;
}

// The stretches of [from, size) outside the acknowledged ranges `skip` (each past
// `from`): what the server of partition `name` does not have. kInvalidArgument for an
// acknowledged range past the file's end. @ref LLP 0014#horizon-gaps
Result<std::vector<std::pair<std::uint64_t, std::uint64_t>>> Unacked(
    std::string_view name, std::uint64_t from, std::uint64_t size, std::vector<CursorRange> skip) {
  std::sort(skip.begin(), skip.end(),
            [](const CursorRange& a, const CursorRange& b) { return a.begin < b.begin; });
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::uint64_t at = from;
  for (const CursorRange& r : skip) {
    if (r.end > size) {
      return Status(StatusCode::kInvalidArgument,
                    "partition " + std::string(name) + ": acknowledged range " +
                        std::to_string(r.begin) + "-" + std::to_string(r.end) +
                        " is beyond its size " + std::to_string(size));
    }
    if (r.begin > at) out.emplace_back(at, r.begin);
    at = std::max(at, r.end);
  }
  if (at < size) out.emplace_back(at, size);
  return out;
}

// Copies bytes [e.begin, e.end) of `file` to e.rows_path through `temp` (fsynced,
// renamed), counting e.rows. kCorrupt when the file is shorter than e.end.
Status CopyStretch(const internal::FileReader& file, DeadEntry& e, const fs::path& temp) {
  spool_io::TempFile rows;
  if (Status st = rows.Create(temp); !st.ok()) return st;
  std::string block(internal::kDeadReadBlock, '\0');
  char last = '\n';
  for (std::uint64_t pos = e.begin; pos < e.end;) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), e.end - pos));
    const Result<std::size_t> n = file.ReadAt(pos, block.data(), want);
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return Status(StatusCode::kCorrupt, "partition " + e.partition + " is shorter than " +
                                              std::to_string(e.end) + " bytes");
    }
    const std::string_view got(block.data(), *n);
    e.rows += static_cast<std::uint64_t>(std::count(got.begin(), got.end(), '\n'));
    last = got.back();
    if (Status st = rows.Write(got); !st.ok()) return st;
    pos += *n;
  }
  if (last != '\n') ++e.rows;
  return rows.Commit(e.rows_path);
}

}  // namespace

Result<DeadEntry> Spool::DeadLetterChunk(std::string_view name, std::uint64_t begin,
                                         std::uint64_t end, std::string_view body_bytes, int status,
                                         std::string_view reason,
                                         std::chrono::system_clock::time_point when) {
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  if (end <= begin || end - begin != body_bytes.size()) {
    return Status(StatusCode::kInvalidArgument,
                  "dead letter " + internal::DeadName(name, begin, end) + ": range holds " +
                      std::to_string(end >= begin ? end - begin : 0) + " bytes but the body has " +
                      std::to_string(body_bytes.size()));
  }
  Result<DeadEntry> made =
      NewEntry(name, begin, end, DeadKind::kPoison, status, reason, when, 0, dead_dir());
  if (!made.ok()) return made.status();
  DeadEntry e = std::move(made).value();
  e.rows = CountRows(body_bytes);
  // Rows first, record last: the record is what makes a dead letter visible, so a
  // crash in between leaves at most an unlisted rows file that the retry overwrites.
  if (Status st = spool_io::WriteFileAtomic(e.rows_path, body_bytes); !st.ok()) return st;
  if (Status st = spool_io::WriteFileAtomic(e.record_path, internal::DumpDeadRecord(e)); !st.ok())
    return st;
  return e;
}

// A row too long to send goes to dead/ alone, copied block by block (it may be far
// larger than memory should hold); the rows after it stay to be sent.
// @ref LLP 0023#row-too-long
Result<DeadEntry> Spool::DeadLetterLongRow(std::string_view name, std::uint64_t begin,
                                           std::uint64_t longer_than, std::string_view reason,
                                           std::chrono::system_clock::time_point when) {
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  Result<internal::FileReader> file = internal::FileReader::Open(PartitionPath(name));
  if (!file.ok()) return file.status();
  if (Result<bool> at = file->AtLineStart(begin); !at.ok() || !*at) {
    return at.ok() ? Status(StatusCode::kInvalidArgument,
                            "offset " + std::to_string(begin) + " is not at a row start")
                   : at.status();
  }
  DeadEntry e;
  e.partition = std::string(name);
  e.begin = begin;
  e.rows = 1;
  e.reason = std::string(reason);
  e.kind = DeadKind::kPoison;
  e.dead_at = when;
  spool_io::TempFile out;
  const fs::path temp = dead_dir() / ("." + std::string(name) + ".long-row.tmp");
  if (Status st = out.Create(temp); !st.ok()) return st;
  std::string block(internal::kDeadReadBlock, '\0');
  for (std::uint64_t pos = begin;;) {
    const Result<std::size_t> n = file->ReadAt(pos, block.data(), block.size());
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return Status(StatusCode::kCorrupt, "the row at " + std::to_string(begin) + " of " +
                                              std::string(name) + " has no end (a torn tail)");
    }
    const std::string_view got(block.data(), *n);
    const std::size_t nl = got.find('\n');
    if (Status st = out.Write(got.substr(0, nl == std::string_view::npos ? got.size() : nl + 1));
        !st.ok()) {
      return st;
    }
    if (nl != std::string_view::npos) {
      e.end = pos + nl + 1;
      break;
    }
    pos += *n;
  }
  if (e.end - e.begin <= longer_than) {
    // Not the long row the caller expected (the file changed under us): leave it.
    return Status(StatusCode::kInvalidArgument,
                  "the row at " + std::to_string(begin) + " is " + std::to_string(e.end - e.begin) +
                      " bytes, not longer than " + std::to_string(longer_than));
  }
  e.name = internal::DeadName(name, e.begin, e.end);
  if (Status st = internal::ValidateDeadName(e.name); !st.ok()) return st;
  e.rows_path = dead_dir() / (e.name + std::string(internal::kDeadRowsExt));
  e.record_path = dead_dir() / (e.name + std::string(internal::kDeadRecordExt));
  // Rows first, record last, as for a poisoned chunk (DeadLetterChunk).
  if (Status st = out.Commit(e.rows_path); !st.ok()) return st;
  if (Status st = spool_io::WriteFileAtomic(e.record_path, internal::DumpDeadRecord(e)); !st.ok())
    return st;
  return e;
}

Result<DeadEntry> Spool::DeadLetterPartition(std::string_view name, std::uint64_t from_offset,
                                             std::string_view reason, int status,
                                             std::chrono::system_clock::time_point when) {
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  const fs::path partition = PartitionPath(name);
  Result<internal::FileReader> file = internal::FileReader::Open(partition);
  if (!file.ok()) {
    if (file.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kNotFound, "no partition " + partition.string());
    }
    return file.status();
  }
  const Result<internal::FileInfo> info = file->Stat();
  if (!info.ok()) return info.status();
  const std::uint64_t size = info->size;
  if (from_offset > size) {
    return Status(StatusCode::kInvalidArgument, "partition " + std::string(name) +
                                                    ": from_offset " + std::to_string(from_offset) +
                                                    " is beyond its size " + std::to_string(size));
  }
  Result<std::uint64_t> rows = from_offset == size ? Result<std::uint64_t>(std::uint64_t{0})
                                                   : CountRowsInFile(*file, from_offset);
  if (!rows) return rows.status();

  // The whole file moves; the dead rows start at from_offset in it.
  Result<DeadEntry> made = NewEntry(name, from_offset, size, DeadKind::kHorizon, status, reason,
                                    when, from_offset, dead_dir());
  if (!made.ok()) return made.status();
  DeadEntry e = std::move(made).value();
  e.rows = rows.value();
  // Record first, then the move: a crash in between leaves the partition in ready/
  // (it is simply dead-lettered again), never rows in dead/ with no record to list
  // them. @ref LLP 0020#dead-letters
  if (Status st = spool_io::WriteFileAtomic(e.record_path, internal::DumpDeadRecord(e)); !st.ok())
    return st;
  if (::rename(partition.c_str(), e.rows_path.c_str()) != 0) {
    return spool_io::IoError("cannot move partition into dead/: rename", partition, errno);
  }
  if (Status st = spool_io::FsyncDir(dead_dir()); !st.ok()) return st;
  if (Status st = spool_io::FsyncDir(ready_dir()); !st.ok()) return st;
  if (Status st = RemoveCursorRecord(CursorPath(name), state_dir()); !st.ok()) return st;
  return e;
}

// @ref LLP 0014#horizon-gaps
Result<std::vector<DeadEntry>> Spool::DeadLetterUnacked(
    std::string_view name, std::uint64_t from_offset, const std::vector<CursorRange>& acked,
    std::string_view reason, int status, std::chrono::system_clock::time_point when) {
  std::vector<CursorRange> skip;
  for (const CursorRange& r : acked) {
    if (r.acked && r.begin >= from_offset && r.end > r.begin) skip.push_back(r);
  }
  if (skip.empty()) {
    Result<DeadEntry> whole = DeadLetterPartition(name, from_offset, reason, status, when);
    if (!whole.ok()) return whole.status();
    return std::vector<DeadEntry>{std::move(whole).value()};
  }
  if (Status st = ValidatePartitionName(name); !st.ok()) return st;
  const fs::path partition = PartitionPath(name);
  Result<internal::FileReader> file = internal::FileReader::Open(partition);
  if (!file.ok()) return file.status();
  const Result<internal::FileInfo> info = file->Stat();
  if (!info.ok()) return info.status();
  const auto stretches = Unacked(name, from_offset, info->size, std::move(skip));
  if (!stretches.ok()) return stretches.status();
  std::vector<DeadEntry> out;
  for (const auto& [begin, end] : *stretches) {
    // A copy of the stretch alone: its rows start at 0.
    Result<DeadEntry> made =
        NewEntry(name, begin, end, DeadKind::kHorizon, status, reason, when, 0, dead_dir());
    if (!made.ok()) return made.status();
    DeadEntry e = std::move(made).value();
    // Rows first, record last, as for a poisoned chunk (DeadLetterChunk).
    if (Status st = CopyStretch(*file, e, dead_dir() / ("." + e.name + ".tmp")); !st.ok()) {
      return st;
    }
    if (Status st = spool_io::WriteFileAtomic(e.record_path, internal::DumpDeadRecord(e));
        !st.ok()) {
      return st;
    }
    out.push_back(std::move(e));
  }
  // Every stretch is in dead/ (durable: Commit and WriteFileAtomic fsync): the partition
  // and its cursor go.
  if (::unlink(partition.c_str()) != 0) {
    return spool_io::IoError("cannot remove the partition given up: unlink", partition, errno);
  }
  if (Status st = spool_io::FsyncDir(ready_dir()); !st.ok()) return st;
  if (Status st = RemoveCursorRecord(CursorPath(name), state_dir()); !st.ok()) return st;
  return out;
}

}  // namespace fwdsink
