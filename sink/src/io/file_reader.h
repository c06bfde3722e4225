// SPDX-License-Identifier: Apache-2.0
// Private: reading a file in parts, at offsets, through a descriptor held open:
// FileReader, for the files read in blocks however big they are (partitions, a pack's
// members, dead letters' rows), with the one "offset is at a line start" check. A small
// file read whole goes through ReadRegularFile (fwdsink/read_file.h) instead; beneath
// both lie the owned descriptor (UniqueFd) and the one pread(2) loop with its one EINTR
// policy (ReadFullAt), declared here. Not installed. @ref LLP 0020#reads
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "fwdsink/status.h"

namespace fwdsink::internal {

// An owned file descriptor, closed on destruction. Close is never retried: Linux
// closes the descriptor even when close(2) reports EINTR. Move-only; one thread at a
// time.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  // Closes the descriptor now (no-op when there is none).
  void Reset() noexcept;

 private:
  int fd_ = -1;
};

// The signature of pread(2); tests pass a fake that interrupts and shortens reads.
using PreadFn = ssize_t (*)(int fd, void* buf, std::size_t count, off_t offset);

// Reads up to `n` bytes at `offset` into `dst`: retries on EINTR and after short
// reads until `n` bytes are in or the file ends. Returns the bytes read (fewer than `n`
// only at end of file), or -1 with errno set on any other error. Thread-safe (pread
// has no shared file position).
[[nodiscard]] ssize_t ReadFullAt(int fd, char* dst, std::size_t n, std::uint64_t offset,
                                 PreadFn pread_fn = ::pread);

// A stat(2) result's modification time, in ns since the epoch: the one form the spool
// keeps (scan, partition state, manifests, FileInfo).
[[nodiscard]] inline std::int64_t MtimeNs(const struct stat& st) noexcept {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Metadata of an open file, from fstat(2).
struct FileInfo {
  std::uint64_t size = 0;
  bool regular = false;       // a regular file (not a folder, FIFO, device)
  std::uint64_t links = 1;    // hard links to it
  std::int64_t mtime_ns = 0;  // last modification, ns since the epoch
  std::uint64_t device = 0;   // st_dev and st_ino: which file this is
  std::uint64_t inode = 0;
};

// A file opened read-only for positional reads. Errors name the path. Reads do not
// move a shared position, so const methods may run from several threads at once;
// moving or destroying it needs the one owner.
class FileReader {
 public:
  // Opens `path` read-only, never through a symlink (O_NOFOLLOW) and without blocking
  // on a FIFO (O_NONBLOCK). kNotFound "no such file <path>" when it does not exist,
  // kIo "cannot open <path>: <reason>" otherwise. `pread_fn` is for tests.
  [[nodiscard]] static Result<FileReader> Open(std::filesystem::path path,
                                               PreadFn pread_fn = ::pread);

  // Returns the file's size and type; kIo "cannot stat <path>: <reason>" on failure.
  [[nodiscard]] Result<FileInfo> Stat() const;
  // Reads up to `n` bytes at `offset` into `dst`; returns the bytes read (fewer than
  // `n` only at end of file), or kIo "cannot read <path>: <reason>".
  [[nodiscard]] Result<std::size_t> ReadAt(std::uint64_t offset, char* dst, std::size_t n) const;
  // Returns whether `offset` is at a line start: 0, or just after a '\n'. An offset
  // past the end of the file is not (false); a read error is kIo.
  [[nodiscard]] Result<bool> AtLineStart(std::uint64_t offset) const;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  FileReader(UniqueFd fd, std::filesystem::path path, PreadFn pread_fn)
      : fd_(std::move(fd)), path_(std::move(path)), pread_(pread_fn) {}

  UniqueFd fd_;
  std::filesystem::path path_;
  PreadFn pread_ = ::pread;
};

// Returns a kIo status "<what> <path>: <strerror(err)>".
[[nodiscard]] Status IoError(std::string_view what, const std::filesystem::path& path, int err);

}  // namespace fwdsink::internal
