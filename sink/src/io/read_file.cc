// SPDX-License-Identifier: Apache-2.0
// ReadRegularFile (fwdsink/read_file.h): a small file read whole, refused unless it is a
// regular file within its cap. Reads in parts of a file held open are FileReader's
// (file_reader.cc), whose descriptor and pread loop this uses. @ref LLP 0020#reads
#include "fwdsink/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/file_reader.h"

namespace fwdsink {

std::string_view FileTypeName(unsigned mode) noexcept {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symlink";
    default: return "not a regular file";
  }
}

// @ref LLP 0023#regular-files
Result<std::string> ReadRegularFile(const std::filesystem::path& path, ReadFileOptions options) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (options.follow_symlinks ? 0 : O_NOFOLLOW);
  internal::UniqueFd fd(::open(path.c_str(), flags));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT) return Status(StatusCode::kNotFound, "no such file " + path.string());
    return internal::IoError("cannot open", path, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return internal::IoError("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kIo, path.string() + " is " + std::string(FileTypeName(st.st_mode)) +
                                       ", not a regular file");
  }
  const auto too_large = [&] {
    return Status(StatusCode::kCorrupt, path.string() + " is larger than " +
                                            std::to_string(options.max_bytes) + " bytes");
  };
  if (static_cast<std::uint64_t>(st.st_size) > options.max_bytes) return too_large();
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = internal::ReadFullAt(fd.get(), buf, sizeof buf, out.size());
    if (n < 0) return internal::IoError("cannot read", path, errno);
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > options.max_bytes) return too_large();
    out.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < sizeof buf) break;  // ReadFullAt stops short at the end
  }
  return out;
}

}  // namespace fwdsink
