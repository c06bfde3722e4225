// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the chunker over arbitrary file contents, with small chunks. Chunks are
// contiguous, end at a '\n', stay within the limits; split halves rebuild the chunk.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fwdsink/chunker.h"

namespace {

// One scratch file per process, rewritten for every input.
const std::string& ScratchPath() {
  static const std::string path = [] {
    char name[] = "/tmp/fwdsink-fuzz-chunker-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd >= 0) ::close(fd);
    return std::string(name);
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = ScratchPath();
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  fwdsink::ChunkerOptions options;
  options.chunk_bytes = 64;
  options.max_line_bytes = 128;
  fwdsink::Chunker chunker = fwdsink::Chunker::Open(path, 0, options);
  fwdsink::Chunk chunk;
  std::uint64_t expect_begin = 0;
  while (chunker.Next(chunk) == fwdsink::NextStatus::kChunk) {
    if (chunk.begin != expect_begin || chunk.end <= chunk.begin) __builtin_trap();
    if (chunk.body.size() != chunk.end - chunk.begin || chunk.body.back() != '\n') __builtin_trap();
    if (chunk.rows >= 2) {
      const auto halves = fwdsink::SplitChunk(chunk);
      if (!halves || halves->first.body + halves->second.body != chunk.body) __builtin_trap();
      if (halves->first.rows + halves->second.rows != chunk.rows) __builtin_trap();
    }
    expect_begin = chunk.end;
  }
  return 0;
}
