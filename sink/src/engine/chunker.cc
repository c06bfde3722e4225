// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/chunker.h"

#include <algorithm>
#include <cstring>
#include <system_error>

#include "io/file_reader.h"

namespace fwdsink {
namespace {

// One fixed read buffer per chunker: big enough that a 1 MiB chunk costs four reads,
// small enough to be noise next to the chunk itself.
constexpr std::size_t kReadBufferBytes = 256 * 1024;

}  // namespace

Status Validate(const ChunkerOptions& options) {
  if (options.chunk_bytes == 0) {
    return Status::Config("chunk_bytes", "chunk_bytes must be greater than 0");
  }
  if (options.max_line_bytes < options.chunk_bytes) {
    return Status::Config("max_line_bytes", "max_line_bytes (" +
                                                std::to_string(options.max_line_bytes) +
                                                ") must be >= chunk_bytes (" +
                                                std::to_string(options.chunk_bytes) + ")");
  }
  return OkStatus();
}

std::string_view to_string(ChunkerError error) {
  switch (error) {
    case ChunkerError::kNone: return "none";
    case ChunkerError::kBadOptions: return "bad_options";
    case ChunkerError::kOpenFailed: return "open_failed";
    case ChunkerError::kReadFailed: return "read_failed";
    case ChunkerError::kBadOffset: return "bad_offset";
    case ChunkerError::kNotAtLineStart: return "not_at_line_start";
    case ChunkerError::kLineTooLong: return "line_too_long";
    case ChunkerError::kUnterminatedLine: return "unterminated_line";
  }
  return "unknown";
}

Chunker Chunker::Open(const std::filesystem::path& path, std::uint64_t begin,
                      ChunkerOptions options) {
  Chunker c;
  c.path_ = path;
  c.options_ = options;
  c.offset_ = begin;
  c.buf_off_ = begin;
  if (Status problem = Validate(options); !problem.ok()) {
    c.Fail(ChunkerError::kBadOptions, begin, problem.message());
    return c;
  }
  Result<internal::FileReader> file = internal::FileReader::Open(path);
  if (!file.ok()) {
    c.Fail(ChunkerError::kOpenFailed, begin, file.status().message());
    return c;
  }
  const Result<internal::FileInfo> info = file->Stat();
  if (!info.ok()) {
    c.Fail(ChunkerError::kOpenFailed, begin, info.status().message());
    return c;
  }
  if (!info->regular) {
    c.Fail(ChunkerError::kOpenFailed, begin, "not a regular file");
    return c;
  }
  c.file_ = std::make_unique<internal::FileReader>(std::move(file).value());
  c.file_size_ = info->size;
  c.file_mtime_ns_ = info->mtime_ns;
  if (begin > c.file_size_) {
    c.Fail(ChunkerError::kBadOffset, begin,
           "begin offset is past the end of the file (size " + std::to_string(c.file_size_) + ")");
    return c;
  }
  const Result<bool> at_line_start = c.file_->AtLineStart(begin);
  if (!at_line_start.ok()) {
    c.Fail(ChunkerError::kReadFailed, begin, at_line_start.status().message());
    return c;
  }
  if (!*at_line_start) {
    c.Fail(ChunkerError::kNotAtLineStart, begin, "begin offset is not at a line start");
    return c;
  }
  c.buf_ = std::make_unique_for_overwrite<char[]>(kReadBufferBytes);
  return c;
}

Chunker::Chunker(Chunker&& other) noexcept { *this = std::move(other); }

Chunker& Chunker::operator=(Chunker&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    options_ = other.options_;
    chunk_limit_ = other.chunk_limit_;
    file_ = std::move(other.file_);
    file_size_ = other.file_size_;
    file_mtime_ns_ = other.file_mtime_ns_;
    offset_ = other.offset_;
    buf_ = std::move(other.buf_);
    buf_len_ = std::exchange(other.buf_len_, 0);
    buf_pos_ = std::exchange(other.buf_pos_, 0);
    buf_off_ = other.buf_off_;
    error_ = other.error_;
    error_offset_ = other.error_offset_;
    error_message_ = std::move(other.error_message_);
    // A moved-from chunker has no file; make it say so instead of failing a read.
    other.error_ = ChunkerError::kOpenFailed;
    other.error_message_ = "chunker was moved from";
  }
  return *this;
}

Chunker::~Chunker() { Close(); }

void Chunker::Close() { file_.reset(); }

void Chunker::Fail(ChunkerError error, std::uint64_t offset, std::string_view what) {
  error_ = error;
  error_offset_ = offset;
  error_message_ = path_.string() + ": " + std::string(what) + " at offset " +
                   std::to_string(offset) + " (" + std::string(to_string(error)) + ")";
  Close();
  buf_.reset();
  buf_len_ = buf_pos_ = 0;
}

bool Chunker::Refill() {
  const std::uint64_t next = buf_off_ + buf_len_;
  buf_off_ = next;
  buf_pos_ = 0;
  buf_len_ = 0;
  const Result<std::size_t> r = file_->ReadAt(next, buf_.get(), kReadBufferBytes);
  if (!r.ok()) {
    Fail(ChunkerError::kReadFailed, next, r.status().message());
    return false;
  }
  buf_len_ = *r;
  return true;
}

void Chunker::RewindTo(std::uint64_t offset) {
  if (offset >= buf_off_) {
    buf_pos_ = static_cast<std::size_t>(offset - buf_off_);
  } else {
    buf_off_ = offset;
    buf_len_ = buf_pos_ = 0;
  }
}

NextStatus Chunker::Next(Chunk& out) {
  out.body.clear();
  out.rows = 0;
  out.begin = out.end = offset_;
  if (!ok()) return NextStatus::kError;

  // Greedy packing from a line start, so chunking is a pure function of the start
  // offset (@ref LLP 0010#chunk-shape). Bytes are copied from the read buffer straight
  // into the body: body[0, committed) is whole lines, body[committed, size) is the
  // start of the line being assembled, which began at file offset line_start.
  Assembly line{.committed = 0, .line_start = offset_};
  for (;;) {
    Step step = Step::kMore;
    if (buf_pos_ == buf_len_) {
      if (!Refill()) {
        step = Step::kError;
      } else if (buf_len_ == 0) {
        step = AtEndOfFile(out, line);
      }
    }
    if (step == Step::kMore) step = TakeSegment(out, line);
    if (step == Step::kError) {
      out.body.clear();
      out.rows = 0;
      return NextStatus::kError;
    }
    if (step == Step::kDone) break;
  }
  if (out.rows == 0) return NextStatus::kEnd;
  out.end = out.begin + line.committed;
  offset_ = out.end;
  return NextStatus::kChunk;
}

Chunker::Step Chunker::AtEndOfFile(Chunk& out, const Assembly& line) {
  if (out.body.size() == line.committed) return Step::kDone;
  // A sealed partition ends with '\n'. Bytes after the last one are a torn write:
  // report them rather than drop or send half a row, but only once the whole lines
  // before them have been handed out. @ref LLP 0010#torn-tail
  if (out.rows > 0) {
    out.body.resize(line.committed);
    RewindTo(line.line_start);
    return Step::kDone;
  }
  Fail(ChunkerError::kUnterminatedLine, line.line_start,
       "last line has no terminating newline (" + std::to_string(out.body.size() - line.committed) +
           " bytes)");
  return Step::kError;
}

Chunker::Step Chunker::TakeSegment(Chunk& out, Assembly& line) {
  const std::size_t limit = std::min(options_.chunk_bytes, chunk_limit_);
  const char* seg_begin = buf_.get() + buf_pos_;
  const std::size_t avail = buf_len_ - buf_pos_;
  const char* newline = static_cast<const char*>(std::memchr(seg_begin, '\n', avail));
  const std::size_t seg =
      newline != nullptr ? static_cast<std::size_t>(newline - seg_begin) + 1 : avail;
  const std::size_t line_len = (out.body.size() - line.committed) + seg;
  if (out.rows > 0 && line.committed + line_len > limit) {
    // The line does not fit behind the ones we have: end the chunk before it and
    // rewind so the next chunk starts with it. Usually the line began in the current
    // buffer and this is free; otherwise it is re-read, at most once.
    // @ref LLP 0010#bounded-memory
    out.body.resize(line.committed);
    RewindTo(line.line_start);
    return Step::kDone;
  }
  // Checked on the partial line too, so an endless line fails without buffering it.
  // Reached only for a line that starts a chunk: the lines before it went out first.
  if (line_len > options_.max_line_bytes) {
    Fail(ChunkerError::kLineTooLong, line.line_start,
         "line longer than max_line_bytes (" + std::to_string(options_.max_line_bytes) + ")");
    return Step::kError;
  }
  if (out.body.capacity() < options_.chunk_bytes) out.body.reserve(options_.chunk_bytes);
  out.body.append(seg_begin, seg);
  buf_pos_ += seg;
  if (newline == nullptr) return Step::kMore;
  line.committed = out.body.size();
  ++out.rows;
  line.line_start = buf_off_ + buf_pos_;
  return line.committed >= limit ? Step::kDone : Step::kMore;
}

std::optional<std::pair<Chunk, Chunk>> SplitChunk(const Chunk& chunk) {
  // @ref LLP 0010#split-chunk
  if (chunk.rows < 2) return std::nullopt;
  const std::string_view body = chunk.body;
  const std::size_t mid = body.size() / 2;
  // A boundary is the position just after a '\n', strictly inside the body.
  std::optional<std::size_t> best;
  if (mid > 0) {
    const std::size_t before = body.rfind('\n', mid - 1);
    if (before != std::string_view::npos && before + 1 < body.size()) best = before + 1;
  }
  const std::size_t after = body.find('\n', mid);
  if (after != std::string_view::npos && after + 1 < body.size()) {
    const std::size_t cut = after + 1;
    if (!best || cut - mid < mid - *best) best = cut;
  }
  if (!best) return std::nullopt;
  const std::size_t cut = *best;
  Chunk first;
  first.begin = chunk.begin;
  first.end = chunk.begin + cut;
  first.body.assign(body.substr(0, cut));
  first.rows = static_cast<std::uint64_t>(std::count(first.body.begin(), first.body.end(), '\n'));
  Chunk second;
  second.begin = first.end;
  second.end = chunk.end;
  second.body.assign(body.substr(cut));
  second.rows = chunk.rows - first.rows;
  return std::make_pair(std::move(first), std::move(second));
}

}  // namespace fwdsink
