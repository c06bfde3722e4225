// SPDX-License-Identifier: Apache-2.0
// ReadRegularFile: the one way the library and the daemon read a small file whole (the
// --config file, the token, header and Basic-auth files, cursors, dead-letter records,
// pack manifests, the spool's last error and lock). It refuses what is not a regular
// file and what is larger than the caller's cap, and it never blocks in open(). A file
// read in parts at offsets (a partition, a dead letter's rows) is the library's private
// FileReader's (sink/src/io/file_reader.h); both read through its pread loop.
// @ref LLP 0023#regular-files
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "fwdsink/status.h"

namespace fwdsink {

// Caps on the files read whole. @ref LLP 0023#regular-files
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;       // --config
inline constexpr std::size_t kMaxCredentialFileBytes = std::size_t{64} << 10;  // token, headers

struct ReadFileOptions {
  // Refuse the file when it holds more than this many bytes.
  std::size_t max_bytes = kMaxCredentialFileBytes;
  // Follow a symlink (a credential mounted by Kubernetes is one); the spool's own files
  // are opened with O_NOFOLLOW (false).
  bool follow_symlinks = true;
};

// Reads the whole of `path`. It is opened with O_NONBLOCK (a FIFO cannot hang the
// open) and checked with fstat: anything but a regular file is refused before a byte
// is read, so a folder, a FIFO or /dev/zero costs neither time nor memory.
// Errors, each naming the path: kNotFound "no such file P"; kIo "P is a directory, not
// a regular file" (or a FIFO, a character device, ...) and "cannot open/read P:
// <reason>"; kCorrupt "P is larger than N bytes" (also when it grows while read).
// Any thread; never throws for a file system error.
[[nodiscard]] Result<std::string> ReadRegularFile(const std::filesystem::path& path,
                                                  ReadFileOptions options = {});

// Returns "a directory", "a FIFO", "a character device", ... for st_mode's file type.
[[nodiscard]] std::string_view FileTypeName(unsigned mode) noexcept;

}  // namespace fwdsink
