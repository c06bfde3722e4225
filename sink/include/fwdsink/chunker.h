// SPDX-License-Identifier: Apache-2.0
// Chunker: streams a sealed NDJSON partition, from a byte offset, as chunks of whole lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fwdsink/status.h"

namespace fwdsink {
namespace internal {
class FileReader;  // sink/src/io/file_reader.h
}  // namespace internal

// Sizes of a chunk and of one line. A line's length counts its terminating '\n'.
struct ChunkerOptions {
  // Target upper bound of a chunk's body. Lines are packed until the next one would
  // overflow it; a single line longer than this travels alone in its own chunk.
  std::size_t chunk_bytes = std::size_t{1} << 20;
  // Hard limit on one line. A longer line is an error (kLineTooLong), never cut.
  // Must be >= chunk_bytes.
  std::size_t max_line_bytes = std::size_t{16} << 20;
};

// Checks `options`; returns OK, or a kInvalidConfig status naming the offending field
// ("chunk_bytes", "max_line_bytes") in field() and in its message.
[[nodiscard]] Status Validate(const ChunkerOptions& options);

// A run of whole lines [begin, end) of a partition file; `body` holds exactly those bytes.
struct Chunk {
  std::uint64_t begin = 0;  // file offset of the first byte
  std::uint64_t end = 0;    // file offset one past the last '\n'
  std::uint64_t rows = 0;   // number of lines (an empty line "\n" counts)
  std::string body;
};

enum class ChunkerError {
  kNone,
  kBadOptions,        // ChunkerOptions failed Validate()
  kOpenFailed,        // open(2)/fstat(2) failed
  kReadFailed,        // read(2) failed, or the file shrank under us
  kBadOffset,         // begin offset past the end of the file
  kNotAtLineStart,    // begin offset is inside a line
  kLineTooLong,       // a line exceeds max_line_bytes
  kUnterminatedLine,  // the last line has no '\n': a torn partition
};

// Returns a stable lower_snake name for `error` ("line_too_long", ...).
[[nodiscard]] std::string_view to_string(ChunkerError error);

enum class NextStatus { kChunk, kEnd, kError };

// Reads one partition file front to back from a starting offset and cuts it into
// chunks. Memory stays bounded by about one chunk plus one fixed read buffer, however
// big the file; the file is never loaded whole. It deliberately knows nothing about
// JSON: it splits on '\n' only, and passes every line (even an empty one) on unchanged.
// The partition is assumed sealed: bytes appended while reading are not expected.
//
// Threading: not thread-safe. One thread at a time may call any method; the object
// may be moved to another thread between calls.
class Chunker {
 public:
  // Opens `path` for chunking from byte `begin`, which must be 0, the file size, or
  // just after a '\n'. Never returns null-like: on failure the returned chunker is
  // in the error state (ok() false, error() says why) and Next() returns kError.
  [[nodiscard]] static Chunker Open(const std::filesystem::path& path, std::uint64_t begin,
                                    ChunkerOptions options = {});

  // Moves the open file and position; the moved-from chunker is left in the error state.
  Chunker(Chunker&& other) noexcept;
  Chunker& operator=(Chunker&& other) noexcept;
  Chunker(const Chunker&) = delete;
  Chunker& operator=(const Chunker&) = delete;
  ~Chunker();

  // Fills `out` with the next chunk and returns kChunk; returns kEnd once the file is
  // exhausted, kError on failure (sticky: every later call returns kError too).
  // Reuses out.body's capacity. On kEnd/kError `out` is left with an empty body.
  [[nodiscard]] NextStatus Next(Chunk& out);

  // Returns true while no error has happened.
  [[nodiscard]] bool ok() const { return error_ == ChunkerError::kNone; }
  // Returns the error that stopped the chunker, or kNone.
  [[nodiscard]] ChunkerError error() const { return error_; }
  // Returns the file offset the error refers to (the start of the offending line for
  // kLineTooLong and kUnterminatedLine; the begin offset for open-time errors).
  [[nodiscard]] std::uint64_t error_offset() const { return error_offset_; }
  // Returns a human-readable message naming the file and the offset; empty if ok().
  [[nodiscard]] const std::string& error_message() const { return error_message_; }
  // Returns the offset where the next chunk starts (the end of the last one returned).
  [[nodiscard]] std::uint64_t offset() const { return offset_; }
  // Returns the file's size when it was opened.
  [[nodiscard]] std::uint64_t file_size() const { return file_size_; }
  // Caps the chunks made from now on at `bytes` (at least 1; chunk_bytes stays the
  // ceiling). A chunk still holds at least one whole line, however long.
  // @ref LLP 0016#shrink
  void LimitChunkBytes(std::size_t bytes) { chunk_limit_ = bytes > 0 ? bytes : 1; }
  // Returns the file's modification time when it was opened (ns since the epoch).
  [[nodiscard]] std::int64_t file_mtime_ns() const { return file_mtime_ns_; }

 private:
  Chunker() = default;
  void Fail(ChunkerError error, std::uint64_t offset, std::string_view what);
  // Reads the buffer-full that follows the current one; buf_len_ == 0 afterwards means
  // end of file. Returns false (after Fail) on a read error.
  bool Refill();
  // Makes the next read start at `offset`, which must not lie after the read position.
  void RewindTo(std::uint64_t offset);
  void Close();
  // One chunk being assembled: body[0, committed) is whole lines; the line being
  // assembled began at file offset line_start.
  struct Assembly {
    std::size_t committed = 0;
    std::uint64_t line_start = 0;
  };
  enum class Step { kMore, kDone, kError };  // what Next() does after one step
  // At end of file: ends the chunk with the whole lines gathered, or fails on a torn
  // last line when there are none.
  Step AtEndOfFile(Chunk& out, const Assembly& line);
  // Appends the next segment of the read buffer (up to and including a '\n') to `out`,
  // or ends the chunk before a line that does not fit; fails on an over-long line.
  Step TakeSegment(Chunk& out, Assembly& line);

  std::filesystem::path path_;
  ChunkerOptions options_;
  std::unique_ptr<internal::FileReader> file_;  // null when closed or failed
  std::uint64_t file_size_ = 0;
  std::uint64_t offset_ = 0;                                // start of the next chunk
  std::size_t chunk_limit_ = static_cast<std::size_t>(-1);  // LimitChunkBytes()
  std::int64_t file_mtime_ns_ = 0;

  // Read buffer: buf_[0, buf_len_) holds the file bytes at [buf_off_, buf_off_ + buf_len_);
  // bytes before buf_pos_ have been consumed.
  std::unique_ptr<char[]> buf_;
  std::size_t buf_len_ = 0;
  std::size_t buf_pos_ = 0;
  std::uint64_t buf_off_ = 0;

  ChunkerError error_ = ChunkerError::kNone;
  std::uint64_t error_offset_ = 0;
  std::string error_message_;
};

// Splits a chunk of two or more rows in two at the line boundary nearest the middle of
// its body (used when the server answers 413). Returns nullopt for a chunk of fewer
// than two rows, which cannot be split without cutting a line.
[[nodiscard]] std::optional<std::pair<Chunk, Chunk>> SplitChunk(const Chunk& chunk);

}  // namespace fwdsink
