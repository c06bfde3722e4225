// SPDX-License-Identifier: Apache-2.0
// Private file helpers shared by the spool, its writer and the dead letters: durable
// atomic file replacement (temp, fsync, rename, fsync dir), CRC32 (times are base/unix_time.h's).
// Stateless functions plus TempFile, which one thread owns at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "base/unix_time.h"
#include "fwdsink/status.h"

namespace fwdsink::spool_io {

// Returns a kIo status "<what> <path>: <strerror(err)>".
[[nodiscard]] Status IoError(std::string_view what, const std::filesystem::path& path, int err);
[[nodiscard]] Status IoError(std::string_view what, const std::filesystem::path& path,
                             const std::error_code& ec);

// Returns `status` with its code and field kept and its message replaced.
[[nodiscard]] inline Status Reworded(const Status& status, std::string message) {
  return Status(status.code(), std::move(message), status.field());
}

// Flushes a directory's entries (the renames and unlinks in it) to disk.
[[nodiscard]] Status FsyncDir(const std::filesystem::path& dir);

// A file being written under a temporary name, made durable and visible under its
// final name by Commit(). Destroying an uncommitted TempFile removes the temp file.
class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&& other) noexcept;
  TempFile& operator=(TempFile&& other) noexcept;
  ~TempFile();

  // Creates (truncating) `temp_path` for writing.
  [[nodiscard]] Status Create(std::filesystem::path temp_path);
  // Writes all of `data` at the file's position. On an error part of it may be in the
  // file: TruncateTo() cuts it back.
  [[nodiscard]] Status Write(std::string_view data);
  // Cuts the file back to `size` bytes and puts the position there (shrinking needs no
  // space, so this works on a full file system). @ref LLP 0023#writer-enospc
  [[nodiscard]] Status TruncateTo(std::uint64_t size);
  // fsyncs and closes the file, renames it to `final_path` and fsyncs the folder(s).
  // When the fsync fails the temp file is removed (its pages may be lost: Linux reports a
  // writeback error once); when only the rename fails it is kept, synced and closed, and
  // a second Commit() retries the rename (pending_rename() says so).
  [[nodiscard]] Status Commit(const std::filesystem::path& final_path);
  // Closes and removes the temp file (no-op when nothing is open).
  void Abandon() noexcept;

  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  // Returns whether the file is synced and closed, waiting for a retried rename.
  [[nodiscard]] bool pending_rename() const noexcept { return fd_ < 0 && !temp_.empty(); }
  [[nodiscard]] const std::filesystem::path& temp_path() const noexcept { return temp_; }

 private:
  int fd_ = -1;
  std::filesystem::path temp_;
};

// Writes `data` to `final_path` atomically through a dotfile temp in the same folder.
[[nodiscard]] Status WriteFileAtomic(const std::filesystem::path& final_path,
                                     std::string_view data);

// Reads a whole (small) file. kNotFound if it does not exist.
[[nodiscard]] Result<std::string> ReadSmallFile(const std::filesystem::path& path,
                                                std::size_t max_bytes);

// CRC-32 (IEEE 802.3, the zlib/PNG polynomial).
[[nodiscard]] std::uint32_t Crc32(std::string_view data) noexcept;

// The time helpers of base/unix_time.h, under the names the spool has always used.
using unix_time::FormatCompactUtcMs;
using unix_time::FromUnixMs;
using unix_time::ToUnixMs;

}  // namespace fwdsink::spool_io
