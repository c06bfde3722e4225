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
#include <vector>

#include "fwdsink/spool.h"

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
};

// Writes rows into sealed partitions of one spool directory.
//
// Threads: one thread at a time (the producer's); not internally synchronised. Any
// number of writers, in this or other processes, may share a spool: partition names
// carry the pid and a process-wide sequence number, so they never collide.
// Rows are buffered in memory until the partition is sealed or the buffer fills; an
// unsealed partition is not visible to the forwarder. The destructor seals what is
// open (errors are dropped there: call Seal() first to see them).
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
  [[nodiscard]] Status Append(std::string_view row);

  // Seals the open partition if it has reached max_age. Call it periodically so a
  // quiet producer still hands its rows over.
  [[nodiscard]] Status Poll();

  // Seals the open partition now, if it holds any row. Returns the sealed name.
  [[nodiscard]] Result<std::optional<std::string>> Seal();

  // Returns the names sealed so far by this writer, oldest first.
  [[nodiscard]] const std::vector<std::string>& sealed() const noexcept { return sealed_; }

 private:
  struct Partition;  // the partition being written
  SpoolWriter(std::filesystem::path spool_dir, SpoolWriterOptions options);

  [[nodiscard]] Status StartPartition();
  [[nodiscard]] Status Flush();

  std::filesystem::path dir_;
  SpoolWriterOptions options_;
  std::vector<std::string> sealed_;
  // The open partition, if any.
  std::unique_ptr<Partition> open_;
};

}  // namespace fwdsink
