// SPDX-License-Identifier: Apache-2.0
// The spool directory: sealed partitions waiting to be forwarded, their persisted
// cursors, and the dead-letter area. File I/O only; no HTTP.
//
// Layout of a spool directory SPOOL:
//   SPOOL/incoming/  producers' open partitions (`*.ndjson.tmp`), never read here
//   SPOOL/ready/     sealed partitions `<name>.ndjson`, handed over by atomic rename
//   SPOOL/state/     one cursor record per partition, `<name>.cursor`
//   SPOOL/dead/      dead letters: `<dead name>.ndjson` (rows) + `<dead name>.json`
//
// @ref LLP 0020#layout
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fwdsink/cursor.h"
#include "fwdsink/dead_letters.h"
#include "fwdsink/partition_name.h"
#include "fwdsink/status.h"

namespace fwdsink {

// Spool operations report failures as fwdsink::Status / Result<T> (status.h): the
// codes used here are kInvalidName, kInvalidArgument, kNotFound, kCorrupt and kIo, with
// a message that names the path or entry involved.

// A sealed partition in SPOOL/ready/.
struct ReadyPartition {
  std::string name;            // without the ".ndjson" extension
  std::filesystem::path path;  // SPOOL/ready/<name>.ndjson
  std::uint64_t size = 0;      // bytes
  std::int64_t mtime_ns = 0;   // last modification, ns since the epoch, as the scan saw it
};

// An entry of ready/ that ScanReady() refuses to send.
struct RefusedEntry {
  std::string file;    // the entry's file name in ready/, as found (any bytes)
  std::string reason;  // "symlink", "hard_link", "not_regular", "bad_name"
  std::string detail;  // a sentence for an operator
};

struct ReadyScan {
  std::vector<ReadyPartition> ready;  // oldest first
  std::vector<RefusedEntry> refused;
};

// Holds an exclusive lock on a spool (flock on SPOOL/lock) for as long as it lives, so
// two daemons never forward one spool. Move-only; any thread. @ref LLP 0023#spool-lock
class SpoolLock {
 public:
  // Takes the lock without waiting and writes our pid into the lock file. kBusy with a
  // message naming the holder's pid when another process holds it; kIo otherwise.
  [[nodiscard]] static Result<SpoolLock> Acquire(const std::filesystem::path& spool_dir);
  SpoolLock(SpoolLock&& other) noexcept;
  SpoolLock& operator=(SpoolLock&& other) noexcept;
  SpoolLock(const SpoolLock&) = delete;
  SpoolLock& operator=(const SpoolLock&) = delete;
  ~SpoolLock();

 private:
  explicit SpoolLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// A spool directory opened by the forwarding side.
//
// Threads: all methods are meant to be called from one driver thread; the class holds
// no lock. Producers (SpoolWriter, or any process that renames `<name>.ndjson` into
// ready/) may run concurrently in other threads or processes: they only add files to
// ready/, which ListReady() picks up on its next call. Never throws for operational
// failures; every error comes back as a value.
class Spool {
 public:
  // Opens SPOOL, creating it and its ready/, state/, dead/ and incoming/ folders as
  // needed. The error message names the path that could not be created.
  [[nodiscard]] static Result<Spool> Open(std::filesystem::path dir);
  // Opens an existing SPOOL for reading and creates nothing: kNotFound naming the
  // folder when SPOOL, ready/, state/ or dead/ is not there (incoming/ is the
  // producers' and may be absent). For readers beside the daemon. @ref LLP 0025#status
  [[nodiscard]] static Result<Spool> OpenExisting(std::filesystem::path dir);

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::filesystem::path ready_dir() const { return dir_ / "ready"; }
  [[nodiscard]] std::filesystem::path state_dir() const { return dir_ / "state"; }
  [[nodiscard]] std::filesystem::path dead_dir() const { return dir_ / "dead"; }
  [[nodiscard]] std::filesystem::path incoming_dir() const { return dir_ / "incoming"; }
  // Where ScanReady()'s refused entries are moved. @ref LLP 0023#spool
  [[nodiscard]] std::filesystem::path quarantine_dir() const { return dir_ / "quarantine"; }

  // Returns the path of ready/<name>.ndjson (no check that it exists).
  [[nodiscard]] std::filesystem::path PartitionPath(std::string_view name) const;

  // Lists the sealed partitions, oldest first (by name, which encodes the seal time).
  // Ignores anything that is not a regular `<valid name>.ndjson` file: temp files,
  // dotfiles, other extensions, folders.
  [[nodiscard]] Result<std::vector<ReadyPartition>> ListReady() const;

  // Lists ready/ like ListReady(), and also what it refuses to send: symlinks, hard
  // links (a file with more than one link would be sent once per name), FIFOs, devices,
  // folders, and `*` names outside the allowed set. Dotfiles (temp files) are neither.
  // Never follows a symlink. @ref LLP 0023#spool
  [[nodiscard]] Result<ReadyScan> ScanReady() const;

  // Moves a refused entry of ready/ into quarantine/ (created as needed) under its own
  // name, or with ".<n>" appended when that is taken; returns where it went.
  [[nodiscard]] Result<std::filesystem::path> Quarantine(const RefusedEntry& entry) const;

  // Returns the size and modification time (ns) of ready/<name>.ndjson, not following
  // a symlink; kNotFound when it is gone.
  struct FileState {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
  };
  [[nodiscard]] Result<FileState> PartitionState(std::string_view name) const;

  // Recreates the spool's folders when they have vanished (`rm -rf SPOOL/ready` while
  // running). Returns the folders recreated (usually none); kIo if one cannot be.
  [[nodiscard]] Result<std::vector<std::filesystem::path>> EnsureFolders() const;

  // Reads the cursor of partition `name` (a v1 or v2 record) and checks it against the
  // partition file: the offset and every journal boundary within the file and at a
  // line start. A torn or invalid record yields kCorrupt with offset 0, no journal and
  // no failure history (LLP 0020#corrupt-cursor).
  [[nodiscard]] CursorState LoadCursor(std::string_view name) const;
  // The partitions that have a cursor record in state/ (LoadCursor would not say
  // kMissing), from one listing of the folder; kIo "cannot list <dir>: <reason>".
  [[nodiscard]] Result<std::unordered_set<std::string>> CursorNames() const;

  // Persists `offset` (the end of the contiguous acknowledged prefix) and the journal
  // `ranges` (CursorState::ranges' rules; none: nothing in flight) atomically as a v2
  // record, keeping the recorded failure history. kInvalidArgument (nothing written)
  // for ranges that break the rules or a record past the size limit.
  // @ref LLP 0020#cursor-v2
  [[nodiscard]] Status SaveCursor(std::string_view name, std::uint64_t offset,
                                  std::span<const CursorRange> ranges = {});

  // Records one failure of partition `name` at wall-clock time `now`: the failure
  // count goes up, the first failure time is set only if there is none yet. The
  // offset and the journal are kept.
  [[nodiscard]] Status RecordFailure(std::string_view name,
                                     std::chrono::system_clock::time_point now);

  // Forgets the failure history of partition `name` (no first failure, zero
  // failures), keeping its offset and journal. Called when a partition made progress.
  [[nodiscard]] Status ClearFailures(std::string_view name);

  // Removes a fully delivered partition and its cursor. kNotFound if the partition
  // file was already gone (its cursor is removed anyway).
  [[nodiscard]] Status MarkDelivered(std::string_view name);

  // ---- Dead letters (written in dead_letter_writes.cc; listed, requeued and purged in
  // dead_letter_upkeep.cc) ----

  // Writes the poisoned chunk [begin, end) of partition `name` as
  // dead/<name>.<begin>-<end>.ndjson plus its record (kind "poison"), each atomically.
  // The partition itself is untouched: the caller moves its cursor past the chunk.
  [[nodiscard]] Result<DeadEntry> DeadLetterChunk(std::string_view name, std::uint64_t begin,
                                                  std::uint64_t end, std::string_view body_bytes,
                                                  int status, std::string_view reason,
                                                  std::chrono::system_clock::time_point when);

  // Copies the one row of partition `name` that starts at `begin` into dead/ (kind
  // "poison", status 0, `reason`), reading it in blocks however long it is, and returns
  // its entry (end: just past the row's '\n'). Refuses (kInvalidArgument) an offset
  // that is not a row start or a row of at most `longer_than` bytes, and (kCorrupt) a
  // row with no '\n' after it. The partition and its cursor are untouched: the caller
  // moves the cursor past the row. @ref LLP 0023#row-too-long
  [[nodiscard]] Result<DeadEntry> DeadLetterLongRow(std::string_view name, std::uint64_t begin,
                                                    std::uint64_t longer_than,
                                                    std::string_view reason,
                                                    std::chrono::system_clock::time_point when);

  // Moves the whole partition `name` into dead/ (kind "horizon"), recording that the
  // dead rows start at `from_offset`, and removes its cursor.
  [[nodiscard]] Result<DeadEntry> DeadLetterPartition(std::string_view name,
                                                      std::uint64_t from_offset,
                                                      std::string_view reason, int status,
                                                      std::chrono::system_clock::time_point when);
  // Gives partition `name` up from `from_offset` (kind "horizon") leaving out the ranges
  // of `acked` (acknowledged past a gap, from its journal: the server has them): each
  // stretch of [from_offset, size) between them is copied into dead/ as a dead letter of
  // its own (data_offset 0), then the partition and its cursor are removed. With no
  // acked range past from_offset it is DeadLetterPartition (one entry, the file moved).
  // Returns the entries, in order. A crash before the partition is removed leaves it in
  // ready/ and rewrites the same entries next time. @ref LLP 0014#horizon-gaps
  [[nodiscard]] Result<std::vector<DeadEntry>> DeadLetterUnacked(
      std::string_view name, std::uint64_t from_offset, const std::vector<CursorRange>& acked,
      std::string_view reason, int status, std::chrono::system_clock::time_point when);

  // Lists dead letters matching `filter`, oldest first, one page of them, plus the
  // number of matches in all. `now` anchors the age filters.
  [[nodiscard]] Result<DeadList> ListDead(const DeadFilter& filter,
                                          std::chrono::system_clock::time_point now) const;

  // Copies the dead rows of `dead_name` into ready/ as a new partition named
  // `<dead name>.requeued-<n>` and marks the record requeued_at/requeued_as; the dead
  // letter stays in dead/ as an audit record. Returns the new partition's name.
  [[nodiscard]] Result<std::string> Requeue(std::string_view dead_name,
                                            std::chrono::system_clock::time_point now);

  // Deletes one dead letter (its record and its rows).
  [[nodiscard]] Status Purge(std::string_view dead_name);

  // Deletes every dead letter matching `filter` (paging fields ignored). Returns how
  // many were deleted.
  [[nodiscard]] Result<std::size_t> Purge(const DeadFilter& filter,
                                          std::chrono::system_clock::time_point now);

 private:
  explicit Spool(std::filesystem::path dir) : dir_(std::move(dir)) {}

  [[nodiscard]] std::filesystem::path CursorPath(std::string_view name) const;
  // The one read-modify-write path of a cursor record: reads it (a missing or
  // unreadable record starts fresh), applies `change`, writes it back atomically.
  [[nodiscard]] Status UpdateCursor(std::string_view name,
                                    const std::function<void(CursorState&)>& change);

  std::filesystem::path dir_;  // immutable after Open
};

}  // namespace fwdsink
