// SPDX-License-Identifier: Apache-2.0
// FileReader: a file read in parts, at offsets, through a descriptor held open; and
// beneath it and ReadRegularFile (read_file.cc) the owned descriptor and the one pread
// loop. @ref LLP 0020#reads
#include "io/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace fwdsink::internal {
namespace fs = std::filesystem;

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() { Reset(); }

void UniqueFd::Reset() noexcept {
  // Linux releases the descriptor even when close() fails with EINTR: retrying could
  // close a descriptor another thread just opened.
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

ssize_t ReadFullAt(int fd, char* dst, std::size_t n, std::uint64_t offset, PreadFn pread_fn) {
  // One policy everywhere: EINTR is retried, a short read is continued, 0 is the end.
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = pread_fn(fd, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

Status IoError(std::string_view what, const fs::path& path, int err) {
  std::string msg(what);
  msg.append(" ").append(path.string()).append(": ").append(std::strerror(err));
  return Status(StatusCode::kIo, std::move(msg));
}

Result<FileReader> FileReader::Open(fs::path path, PreadFn pread_fn) {
  // @ref LLP 0023#spool: a symlink planted in the spool is refused (ELOOP), and a FIFO
  // does not hang the sender waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status(StatusCode::kNotFound, "no such file " + path.string());
    return IoError("cannot open", path, err);
  }
  return FileReader(UniqueFd(fd), std::move(path), pread_fn);
}

Result<FileInfo> FileReader::Stat() const {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return IoError("cannot stat", path_, errno);
  return FileInfo{static_cast<std::uint64_t>(st.st_size),  S_ISREG(st.st_mode),
                  static_cast<std::uint64_t>(st.st_nlink), MtimeNs(st),
                  static_cast<std::uint64_t>(st.st_dev),   static_cast<std::uint64_t>(st.st_ino)};
}

Result<std::size_t> FileReader::ReadAt(std::uint64_t offset, char* dst, std::size_t n) const {
  const ssize_t r = ReadFullAt(fd_.get(), dst, n, offset, pread_);
  if (r < 0) return IoError("cannot read", path_, errno);
  return static_cast<std::size_t>(r);
}

Result<bool> FileReader::AtLineStart(std::uint64_t offset) const {
  // A cursor only ever points just after a '\n'; anything else means the cursor and
  // the partition disagree, and resuming there would send half a row.
  // @ref LLP 0010#resume-offsets
  if (offset == 0) return true;
  char prev = 0;
  Result<std::size_t> got = ReadAt(offset - 1, &prev, 1);
  if (!got.ok()) return std::move(got).status();
  return *got == 1 && prev == '\n';
}

}  // namespace fwdsink::internal
