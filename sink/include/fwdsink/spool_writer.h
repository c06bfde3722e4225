// SPDX-License-Identifier: Apache-2.0
// SpoolWriter: how a producer hands rows to the forwarder. Rows are appended to an
// open partition in SPOOL/incoming/, which is sealed (fsync + atomic rename into
// SPOOL/ready/ + fsync of the folder) when it reaches a size or an age.
// @ref LLP 0020#writer
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fwdsink/spool.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

struct SpoolWriterOptions {
  // Seal a partition before a row would take it past this many bytes. A single row
  // bigger than this gets a partition of its own (rows are never split).
  std::uint64_t max_bytes = 64ull << 20;
  // Seal a partition once its first row is this old (checked on Append and Poll).
  std::chrono::steady_clock::duration max_age = std::chrono::seconds(60);
  // Monotonic time for max_age; tests inject a fake.
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
  // Wall-clock time for partition names only (they sort oldest first by it).
  std::function<std::chrono::system_clock::time_point()> wall_now = std::chrono::system_clock::now;

  // ---- Disk cap on ready/ (@ref LLP 0025#caps). Unset: no cap.
  // Seal a partition only while ready/ (the sealed partitions waiting to be forwarded,
  // by any producer) plus the partition would stay within this many bytes. A partition
  // bigger than the cap alone is sealed when ready/ is empty.
  std::optional<std::uint64_t> max_ready_bytes{};
  enum class WhenFull {
    // Seal() waits (polling every full_poll) for the forwarder to make room, up to
    // block_timeout; then it fails with kBusy and keeps the partition open (no row is
    // lost: Append/Seal may be called again).
    kBlock,
    // Seal() deletes the oldest ready partitions (and their cursors) until there is
    // room, each with a writer.drop_oldest event: newest data wins.
    kDropOldest,
  };
  WhenFull when_full = WhenFull::kBlock;
  std::chrono::steady_clock::duration block_timeout = std::chrono::seconds(30);
  std::chrono::steady_clock::duration full_poll = std::chrono::milliseconds(200);
  // How the producer waits when ready/ is full (tests inject a fake that advances `now`).
  std::function<void(std::chrono::steady_clock::duration)> sleep = [](auto d) {
    std::this_thread::sleep_for(d);
  };
  // Receives writer.full and writer.drop_oldest, on the producer's thread. Default: none.
  EventCallback on_event{};
};

// Writes rows into sealed partitions of one spool directory.
//
// Threads: one thread at a time (the producer's); not internally synchronised. Any
// number of writers, in this or other processes, may share a spool: partition names
// carry the pid and a process-wide sequence number, so they never collide.
// Rows are buffered in memory until the partition is sealed or the buffer fills; an
// unsealed partition is not visible to the forwarder. The destructor seals what is
// open (errors are dropped there, and the open partition's rows with them: call Seal()
// until it succeeds first to keep them).
class SpoolWriter {
 public:
  // Opens a writer on spool directory `spool_dir`, creating its folders as needed.
  // Rejects max_bytes == 0, a non-positive max_age and empty clock functions.
  [[nodiscard]] static Result<SpoolWriter> Open(std::filesystem::path spool_dir,
                                                SpoolWriterOptions options = {});

  SpoolWriter(SpoolWriter&& other) noexcept;
  SpoolWriter& operator=(SpoolWriter&& other) noexcept;
  SpoolWriter(const SpoolWriter&) = delete;
  SpoolWriter& operator=(const SpoolWriter&) = delete;
  ~SpoolWriter();

  // Appends one row (one line). Adds the '\n' if the row lacks it; rejects a row
  // with an embedded '\n' (kInvalidArgument) and an empty row. Seals the open
  // partition first when the row would not fit or the partition is too old.
  //
  // What an error means (@ref LLP 0023#writer-enospc): OK means the row is accepted:
  // it will be in the partition when that is sealed. An error means this row was NOT
  // accepted (append it again to keep it) and changes nothing for the rows accepted
  // before it: they stay in the open partition — the file is cut back to its last
  // whole row after a failed write (ENOSPC, EFBIG, EIO) — and a later Append or Seal
  // writes and seals them once the disk has room. A seal due after an accepted row
  // (max_bytes reached) that fails is not reported by that Append but by the next call.
  [[nodiscard]] Status Append(std::string_view row);

  // Seals the open partition if it has reached max_age. Call it periodically so a
  // quiet producer still hands its rows over. An error is Seal()'s.
  [[nodiscard]] Status Poll();

  // Seals the open partition now, if it holds any row. Returns the sealed name. On an
  // error nothing is sealed and every accepted row stays in the open partition (call
  // Seal() again once the cause is gone: kBusy when ready/ is full, kIo for a write or
  // rename that failed), with one exception: when fsync fails the partition is
  // abandoned (the kernel may have dropped its pages; the message says "abandoned")
  // and its rows are lost to the spool.
  [[nodiscard]] Result<std::optional<std::string>> Seal();

  // Returns the writer's counters (FWDSINK_WRITER_COUNTERS). Producer thread.
  [[nodiscard]] const WriterCounters& counters() const noexcept { return counters_; }

  // Returns the names sealed so far by this writer, oldest first.
  [[nodiscard]] const std::vector<std::string>& sealed() const noexcept { return sealed_; }

 private:
  struct Partition;  // the partition being written
  SpoolWriter(std::filesystem::path spool_dir, SpoolWriterOptions options);

  [[nodiscard]] Status StartPartition();
  // Waits for, or makes, room in ready/ for `bytes` more, per when_full.
  [[nodiscard]] Status MakeRoom(std::uint64_t bytes);
  [[nodiscard]] Status WaitForRoom(std::uint64_t bytes);
  [[nodiscard]] Status DropOldest(std::uint64_t bytes);
  void Emit(Event e) const;
  [[nodiscard]] Status Flush();

  std::filesystem::path dir_;
  SpoolWriterOptions options_;
  std::vector<std::string> sealed_;
  WriterCounters counters_;
  // The open partition, if any.
  std::unique_ptr<Partition> open_;
};

}  // namespace fwdsink
