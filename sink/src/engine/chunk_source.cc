// SPDX-License-Identifier: Apache-2.0
#include "engine/chunk_source.h"

#include <algorithm>
#include <utility>

#include "fwdsink/check.h"

namespace fwdsink {

void ChunkBuffers::Reserve(std::size_t chunk_bytes, bool compressed) {
  // A buffer that grows mid-run leaves its old block behind. @ref LLP 0030#memory-step
  for (PreparedChunk* p : {&current, &ahead}) {
    p->chunk.body.reserve(chunk_bytes);
    if (compressed) p->wire.reserve(chunk_bytes / 2);
  }
}

ChunkSource::ChunkSource(const std::filesystem::path& path, std::uint64_t begin,
                         const ChunkerOptions& options, Encoder& encoder, ChunkBuffers& buffers,
                         SingleSlotWorker& worker,
                         std::deque<std::pair<std::uint64_t, std::uint64_t>> replay)
    : chunker_(Chunker::Open(path, begin, options)),
      encoder_(encoder),
      buffers_(buffers),
      worker_(worker),
      identity_(encoder.compression() == Compression::kIdentity),
      replay_(std::move(replay)),
      path_(path),
      options_(options) {}

ChunkSource::~ChunkSource() {
  // The job uses this object's chunker: it must end before the source does.
  if (read_ahead_running_) (void)WaitReadAhead();
}

SourceStatus ChunkSource::Next() {
  const NextStatus taken = Take();
  if (taken == NextStatus::kEnd) return SourceStatus::kEnd;
  if (taken == NextStatus::kError) return SourceStatus::kReadError;
  PreparedChunk& current = buffers_.current;
  // Split halves (and a chunk whose early encoding failed) are encoded here, before
  // a read-ahead starts: the encoder has one user at a time.
  if (!identity_ && !current.encoded) {
    current.encoded = encoder_.Encode(current.chunk.body, current.wire);
    if (!current.encoded) return SourceStatus::kEncodeError;
  }
  // Read and encode the next chunk while this one is on the wire. @ref LLP 0014#read-ahead
  if (!put_back_ && split_halves_.empty() && replay_.empty() && !held_back_ && chunker_.ok() &&
      chunker_.offset() < chunker_.file_size()) {
    StartReadAhead();
  }
  return SourceStatus::kChunk;
}

void ChunkSource::SplitCurrent() { (void)Split(buffers_.current.chunk); }

std::uint64_t ChunkSource::Split(const Chunk& chunk) {
  if (read_ahead_running_) held_back_ = WaitReadAhead();  // the halves go first
  auto halves = SplitChunk(chunk);
  FWDSINK_CHECK(halves.has_value());  // callers split chunks of two rows or more
  split_halves_.push_front(std::move(halves->second));
  const std::uint64_t mid = halves->first.end;
  split_halves_.push_front(std::move(halves->first));
  return mid;
}

void ChunkSource::PutBack() {
  FWDSINK_CHECK(!put_back_.has_value());
  if (read_ahead_running_) held_back_ = WaitReadAhead();  // it comes after this one
  put_back_ = buffers_.current.chunk;                     // copied: the buffer keeps its capacity
}

void ChunkSource::LimitChunkBytes(std::size_t bytes) {
  pending_limit_ = bytes;
  if (!read_ahead_running_) ApplyLimit();
}

// Sender thread, with no read-ahead running: the chunker has one user.
void ChunkSource::ApplyLimit() {
  FWDSINK_DCHECK(!read_ahead_running_);
  if (pending_limit_) chunker_.LimitChunkBytes(*pending_limit_);
  pending_limit_.reset();
}

std::string& ChunkSource::wire() {
  return identity_ ? buffers_.current.chunk.body : buffers_.current.wire;
}

// Copied, not moved: the current buffer keeps its reserved capacity.
void ChunkSource::TakeCopy(const Chunk& from, PreparedChunk& into) {
  into.chunk.begin = from.begin;
  into.chunk.end = from.end;
  into.chunk.rows = from.rows;
  into.chunk.body.assign(from.body);
  into.encoded = false;
}

// Takes the next chunk from the first place that has one: the split halves, the
// read-ahead (running or held back), or the chunker itself.
NextStatus ChunkSource::Take() {
  PreparedChunk& current = buffers_.current;
  if (put_back_) {
    TakeCopy(*put_back_, current);
    put_back_.reset();
    return NextStatus::kChunk;
  }
  if (!replay_.empty()) return Replay(current);
  if (!split_halves_.empty()) {
    TakeCopy(split_halves_.front(), current);
    split_halves_.pop_front();
    return NextStatus::kChunk;
  }
  if (held_back_ || read_ahead_running_) {
    const NextStatus st = held_back_ ? *held_back_ : WaitReadAhead();
    held_back_.reset();
    std::swap(current, buffers_.ahead);
    return st;
  }
  ApplyLimit();
  return Fetch(current);
}

// Cuts a journaled range again, exactly: a chunker opened at its begin and capped at its
// size gives the range's whole lines, or the file is not what it was (then the error is
// the source's, as a read error). The range's size is the cap whatever --chunk-bytes is
// now: a range cut at 8 KiB before a restart at 5 KiB is still one chunk under its own
// key. @ref LLP 0014#journal-any-size
NextStatus ChunkSource::Replay(PreparedChunk& into) {
  const auto [begin, end] = replay_.front();
  replay_.pop_front();
  const auto size = static_cast<std::size_t>(end - begin);
  ChunkerOptions exact = options_;
  exact.chunk_bytes = std::max(exact.chunk_bytes, size);
  exact.max_line_bytes = std::max(exact.max_line_bytes, size);
  Chunker once = Chunker::Open(path_, begin, exact);
  once.LimitChunkBytes(size);
  const NextStatus st = once.Next(into.chunk);
  into.encoded = false;  // Next() encodes it
  if (st == NextStatus::kChunk && into.chunk.end == end) return st;
  if (!once.ok()) {
    chunker_ = std::move(once);  // the error and its offset are the source's now
  } else {
    chunker_ = Chunker::Open(path_, end + 1, options_);  // not a line start: kNotAtLineStart
  }
  return NextStatus::kError;
}

NextStatus ChunkSource::Fetch(PreparedChunk& into) {
  const NextStatus st = chunker_.Next(into.chunk);
  into.encoded =
      st == NextStatus::kChunk && (identity_ || encoder_.Encode(into.chunk.body, into.wire));
  return st;
}

void ChunkSource::StartReadAhead() {
  FWDSINK_DCHECK(!read_ahead_running_);
  ApplyLimit();
  read_ahead_running_ = true;
  worker_.Post([this] { read_ahead_status_ = Fetch(buffers_.ahead); });
}

NextStatus ChunkSource::WaitReadAhead() {
  worker_.WaitIdle();
  read_ahead_running_ = false;
  return read_ahead_status_;
}

}  // namespace fwdsink
