// SPDX-License-Identifier: Apache-2.0
#include "spool/spool_io.h"

#include "fwdsink/read_file.h"
#include "io/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <utility>

#include <zlib.h>

namespace fwdsink::spool_io {
namespace fs = std::filesystem;

namespace {

int CloseRetryFree(int fd) {
  // Linux closes the descriptor even when close() reports EINTR: never retry.
  return ::close(fd);
}

}  // namespace

Status IoError(std::string_view what, const fs::path& path, int err) {
  return internal::IoError(what, path, err);
}

Status IoError(std::string_view what, const fs::path& path, const std::error_code& ec) {
  std::string msg(what);
  msg += " ";
  msg += path.string();
  msg += ": ";
  msg += ec.message();
  return Status(StatusCode::kIo, std::move(msg));
}

Status FsyncDir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open folder", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  CloseRetryFree(fd);
  if (rc != 0) return IoError("cannot fsync folder", dir, err);
  return {};
}

TempFile::TempFile(TempFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), temp_(std::move(other.temp_)) {}

TempFile& TempFile::operator=(TempFile&& other) noexcept {
  if (this != &other) {
    Abandon();
    fd_ = std::exchange(other.fd_, -1);
    temp_ = std::move(other.temp_);
  }
  return *this;
}

TempFile::~TempFile() { Abandon(); }

Status TempFile::Create(fs::path temp_path) {
  Abandon();
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create", temp_path, errno);
  fd_ = fd;
  temp_ = std::move(temp_path);
  return {};
}

Status TempFile::Write(std::string_view data) {
  if (fd_ < 0) return Status(StatusCode::kIo, "write to a closed temp file");
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write", temp_, errno);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status TempFile::TruncateTo(std::uint64_t size) {
  if (fd_ < 0) return Status(StatusCode::kIo, "truncate of a closed temp file");
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    return IoError("cannot truncate", temp_, errno);
  if (::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0)
    return IoError("cannot seek", temp_, errno);
  return {};
}

Status TempFile::Commit(const fs::path& final_path) {
  if (fd_ < 0 && temp_.empty()) return Status(StatusCode::kIo, "commit of a closed temp file");
  // Data first, then the name: after a crash the final name holds either the old
  // content or the complete new one, never a torn file. @ref LLP 0020#atomic-writes
  if (fd_ >= 0) {
    if (::fsync(fd_) != 0) {
      Status st = IoError("cannot fsync", temp_, errno);
      Abandon();
      return st;
    }
    const int fd = std::exchange(fd_, -1);
    if (CloseRetryFree(fd) != 0) {
      Status st = IoError("cannot close", temp_, errno);
      ::unlink(temp_.c_str());
      temp_.clear();
      return st;
    }
  }
  if (::rename(temp_.c_str(), final_path.c_str()) != 0) {
    // Synced and closed: kept for a retried Commit(); Abandon() (or the destructor)
    // removes it. @ref LLP 0023#writer-enospc
    return IoError("cannot rename " + temp_.string() + " to", final_path, errno);
  }
  const fs::path from_dir = temp_.parent_path();
  const fs::path to_dir = final_path.parent_path();
  temp_.clear();
  if (Status st = FsyncDir(to_dir); !st.ok()) return st;
  if (from_dir != to_dir) return FsyncDir(from_dir);
  return {};
}

void TempFile::Abandon() noexcept {
  if (fd_ >= 0) CloseRetryFree(std::exchange(fd_, -1));
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

Status WriteFileAtomic(const fs::path& final_path, std::string_view data) {
  // Built with append(): GCC 12 -O3 reports a false -Wrestrict on "." + s + ".tmp".
  std::string temp_name = ".";
  temp_name.append(final_path.filename().string()).append(".tmp");
  fs::path temp = final_path.parent_path() / temp_name;
  TempFile file;
  if (Status st = file.Create(std::move(temp)); !st.ok()) return st;
  if (Status st = file.Write(data); !st.ok()) return st;
  return file.Commit(final_path);
}

Result<std::string> ReadSmallFile(const fs::path& path, std::size_t max_bytes) {
  // The spool's own files: never through a symlink. @ref LLP 0023#regular-files
  return ReadRegularFile(path, {.max_bytes = max_bytes, .follow_symlinks = false});
}

std::uint32_t Crc32(std::string_view data) noexcept {
  // zlib's CRC-32 (the gzip codec links zlib anyway). @ref LLP 0020#cursor-format
  return static_cast<std::uint32_t>(
      ::crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

}  // namespace fwdsink::spool_io
