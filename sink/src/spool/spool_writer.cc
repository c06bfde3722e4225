// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/spool_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "spool/spool_io.h"

namespace fwdsink {
namespace fs = std::filesystem;

namespace {

// Rows are collected in memory and written in blocks of about this size.
constexpr std::size_t kWriteBuffer = 64 * 1024;

// Process-wide, so two writers in one process never pick the same name.
std::atomic<std::uint64_t> g_partition_seq{0};

// "<UTC yyyymmddThhmmss.mmmZ>-<pid>-<seq>": sorts oldest first by name.
// @ref LLP 0020#names
std::string NewPartitionName(std::chrono::system_clock::time_point wall) {
  char tail[64];
  std::snprintf(tail, sizeof tail, "-%ld-%08llu", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(g_partition_seq.fetch_add(1) + 1));
  return spool_io::FormatCompactUtcMs(wall) + tail;
}

}  // namespace

struct SpoolWriter::Partition {
  std::string name;
  spool_io::TempFile file;
  std::string buffer;         // rows not yet written to `file`
  std::uint64_t bytes = 0;    // written + buffered
  std::uint64_t written = 0;  // bytes of whole rows in `file`
  bool torn = false;          // `file` may hold bytes past `written` (a cut-back failed)
  std::chrono::steady_clock::time_point opened_at;
};

Result<SpoolWriter> SpoolWriter::Open(fs::path spool_dir, SpoolWriterOptions options) {
  if (options.max_bytes == 0) {
    return Status(StatusCode::kInvalidArgument, "SpoolWriterOptions.max_bytes must be > 0");
  }
  if (options.max_age <= std::chrono::steady_clock::duration::zero()) {
    return Status(StatusCode::kInvalidArgument, "SpoolWriterOptions.max_age must be > 0");
  }
  if (!options.now) {
    return Status(StatusCode::kInvalidArgument, "SpoolWriterOptions.now is empty");
  }
  if (!options.wall_now) {
    return Status(StatusCode::kInvalidArgument, "SpoolWriterOptions.wall_now is empty");
  }
  if (options.max_ready_bytes &&
      (*options.max_ready_bytes == 0 || !options.sleep ||
       options.full_poll <= std::chrono::steady_clock::duration::zero())) {
    return Status(StatusCode::kInvalidArgument,
                  "SpoolWriterOptions.max_ready_bytes needs a cap > 0, a sleep function and a "
                  "positive full_poll");
  }
  // Spool::Open creates the folders with error messages that name them.
  Result<Spool> spool = Spool::Open(spool_dir);
  if (!spool) return spool.status();
  return SpoolWriter(std::move(spool_dir), std::move(options));
}

SpoolWriter::SpoolWriter(fs::path spool_dir, SpoolWriterOptions options)
    : dir_(std::move(spool_dir)), options_(std::move(options)) {}

SpoolWriter::SpoolWriter(SpoolWriter&& other) noexcept = default;

SpoolWriter& SpoolWriter::operator=(SpoolWriter&& other) noexcept {
  if (this != &other) {
    (void)Seal();
    dir_ = std::move(other.dir_);
    options_ = std::move(other.options_);
    sealed_ = std::move(other.sealed_);
    counters_ = other.counters_;
    open_ = std::move(other.open_);
  }
  return *this;
}

SpoolWriter::~SpoolWriter() {
  // Sealing loses nothing and leaves no orphan in incoming/; a failure here has no
  // one to report to.
  if (open_) (void)Seal();
}

Status SpoolWriter::Append(std::string_view row) {
  if (!row.empty() && row.back() == '\n') row.remove_suffix(1);
  if (row.empty()) return Status(StatusCode::kInvalidArgument, "empty row");
  if (row.find('\n') != std::string_view::npos) {
    // One row is one line: an embedded newline would split it into two rows that
    // the receiver would parse separately.
    return Status(StatusCode::kInvalidArgument, "row contains an embedded newline");
  }
  const std::uint64_t line_bytes = row.size() + 1;
  if (open_ && (open_->bytes + line_bytes > options_.max_bytes || open_->file.pending_rename() ||
                options_.now() - open_->opened_at >= options_.max_age)) {
    if (Result<std::optional<std::string>> r = Seal(); !r) return r.status();
  }
  if (!open_) {
    if (Status st = StartPartition(); !st.ok()) return st;
  }
  open_->buffer.append(row);
  open_->buffer.push_back('\n');
  open_->bytes += line_bytes;
  if (open_->buffer.size() >= kWriteBuffer) {
    if (Status st = Flush(); !st.ok()) {
      // An error means "this row was not taken": take it back out. The rows accepted
      // before it stay in the buffer for the next Flush. @ref LLP 0023#writer-enospc
      open_->buffer.resize(open_->buffer.size() - line_bytes);
      open_->bytes -= line_bytes;
      return st;
    }
  }
  if (open_->bytes >= options_.max_bytes) {
    // The row is in: a seal that fails now (ready/ full, a full disk) is retried, and
    // reported, by the next Append, Poll or Seal, which keep the partition open.
    (void)Seal();
  }
  return {};
}

Status SpoolWriter::Poll() {
  if (open_ && options_.now() - open_->opened_at >= options_.max_age) {
    if (Result<std::optional<std::string>> r = Seal(); !r) return r.status();
  }
  return {};
}

Result<std::optional<std::string>> SpoolWriter::Seal() {
  if (!open_) return std::optional<std::string>();
  if (Status st = MakeRoom(open_->bytes); !st.ok()) return st;
  if (Status st = Flush(); !st.ok()) return st;
  // fsync, then rename into ready/, then fsync both folders: the forwarder only ever
  // sees complete partitions. @ref LLP 0020#atomic-writes
  const fs::path final_path = dir_ / "ready" / (open_->name + ".ndjson");
  if (Status st = open_->file.Commit(final_path); !st.ok()) {
    // A failed rename keeps the synced file for the next Seal. A failed fsync removed
    // it: the kernel may have dropped its pages, so it cannot be trusted any more. The
    // one case where accepted rows are lost; the message says so. @ref LLP 0023#writer-enospc
    if (open_->file.pending_rename()) return st;
    st = spool_io::Reworded(st, "partition " + open_->name + " abandoned: " + st.message());
    open_.reset();
    return st;
  }
  std::string name = std::move(open_->name);
  open_.reset();
  sealed_.push_back(name);
  counters_.partitions_sealed += 1;
  return std::optional<std::string>(std::move(name));
}

Status SpoolWriter::StartPartition() {
  auto p = std::make_unique<Partition>();
  p->name = NewPartitionName(options_.wall_now());
  if (Status st = ValidatePartitionName(p->name); !st.ok()) return st;
  if (Status st = p->file.Create(dir_ / "incoming" / (p->name + ".ndjson.tmp")); !st.ok()) {
    return st;
  }
  p->opened_at = options_.now();
  open_ = std::move(p);
  return {};
}

// On a write error (ENOSPC, EFBIG, EIO) the file is cut back to its last whole row and
// the rows stay buffered: nothing accepted is lost, the partition stays open, and a
// later Append or Seal writes them once there is room. @ref LLP 0023#writer-enospc
Status SpoolWriter::Flush() {
  if (!open_) return {};
  Partition& p = *open_;
  if (p.torn) {
    if (Status st = p.file.TruncateTo(p.written); !st.ok()) return st;
    p.torn = false;
  }
  if (p.buffer.empty()) return {};
  if (p.file.pending_rename()) {
    return Status(StatusCode::kIo, "partition " + p.name + " is waiting for its seal: call Seal()");
  }
  Status st = p.file.Write(p.buffer);
  if (!st.ok()) {
    p.torn = !p.file.TruncateTo(p.written).ok();
    return spool_io::Reworded(st, "partition " + p.name + ": " + st.message() +
                                      " (the rows accepted so far are kept; the partition "
                                      "stays open)");
  }
  p.written += p.buffer.size();
  p.buffer.clear();
  return {};
}

namespace {

// The sealed partitions waiting in ready/, oldest first, and their bytes.
Result<std::vector<ReadyPartition>> ListReadyOf(const fs::path& dir, std::uint64_t& total) {
  Result<Spool> spool = Spool::Open(dir);
  if (!spool) return spool.status();
  Result<std::vector<ReadyPartition>> ready = spool->ListReady();
  total = 0;
  if (ready) {
    for (const ReadyPartition& p : *ready) total += p.size;
  }
  return ready;
}

bool Fits(std::uint64_t ready, std::uint64_t bytes, std::uint64_t cap) {
  // A partition bigger than the cap alone still goes through an empty ready/.
  return ready == 0 || ready + bytes <= cap;
}

}  // namespace

void SpoolWriter::Emit(Event e) const {
  if (options_.on_event) options_.on_event(e);
}

// @ref LLP 0025#caps
Status SpoolWriter::MakeRoom(std::uint64_t bytes) {
  if (!options_.max_ready_bytes) return {};
  return options_.when_full == SpoolWriterOptions::WhenFull::kBlock ? WaitForRoom(bytes)
                                                                    : DropOldest(bytes);
}

Status SpoolWriter::WaitForRoom(std::uint64_t bytes) {
  const std::uint64_t cap = *options_.max_ready_bytes;
  const auto start = options_.now();
  bool waiting = false;
  for (;;) {
    std::uint64_t ready = 0;
    if (auto listed = ListReadyOf(dir_, ready); !listed) return listed.status();
    if (Fits(ready, bytes, cap)) return {};
    const auto waited = options_.now() - start;
    const auto waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(waited);
    if (!waiting) {
      waiting = true;
      counters_.full_waits += 1;
      Emit({.name = events::kWriterFull,
            .partition = open_->name,
            .reason = "full",
            .message = "ready/ holds " + std::to_string(ready) + " bytes; max_ready_bytes is " +
                       std::to_string(cap) + ": waiting for the forwarder"});
    }
    if (waited >= options_.block_timeout) {
      counters_.full_timeouts += 1;
      Emit({.name = events::kWriterFull,
            .partition = open_->name,
            .reason = "timeout",
            .wait = waited_ms,
            .message = "ready/ still full after " + std::to_string(waited_ms.count()) + " ms"});
      return Status(StatusCode::kBusy, "ready/ is full (" + std::to_string(ready) +
                                           " bytes, max_ready_bytes " + std::to_string(cap) +
                                           "): partition " + open_->name + " kept open");
    }
    options_.sleep(std::min(options_.full_poll, options_.block_timeout - waited));
  }
}

Status SpoolWriter::DropOldest(std::uint64_t bytes) {
  const std::uint64_t cap = *options_.max_ready_bytes;
  std::uint64_t ready = 0;
  auto listed = ListReadyOf(dir_, ready);
  if (!listed) return listed.status();
  Result<Spool> spool = Spool::Open(dir_);
  if (!spool) return spool.status();
  for (const ReadyPartition& p : *listed) {
    if (Fits(ready, bytes, cap)) break;
    // The partition and its cursor go together, as after a delivery. kNotFound: the
    // forwarder delivered it meanwhile.
    const Status st = spool->MarkDelivered(p.name);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
    ready -= p.size;
    if (st.ok()) {
      counters_.dropped_partitions += 1;
      counters_.dropped_bytes += p.size;
      Emit({.name = events::kWriterDropOldest,
            .partition = p.name,
            .reason = "max_ready_bytes",
            .end = p.size,
            .message = "deleted the oldest ready partition (" + std::to_string(p.size) +
                       " bytes) to stay within max_ready_bytes " + std::to_string(cap)});
    }
  }
  return {};
}

}  // namespace fwdsink
