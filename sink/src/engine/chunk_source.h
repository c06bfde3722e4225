// SPDX-License-Identifier: Apache-2.0
// The chunks of one partition, ready to send. Internal to the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "fwdsink/chunker.h"
#include "fwdsink/codec.h"
#include "io/single_slot_worker.h"

namespace fwdsink {

// A chunk and its encoded body.
struct PreparedChunk {
  Chunk chunk{};
  std::string wire{};    // chunk.body encoded (unused with identity)
  bool encoded = false;  // wire holds chunk.body encoded
};

// The sink's two chunk buffers, kept across partitions. They are swapped, never
// reallocated, so their capacity is reserved once (LLP 0030#memory-step).
struct ChunkBuffers {
  PreparedChunk current;  // the chunk being sent (sender thread)
  PreparedChunk ahead;    // the next one (the read-ahead job's while it runs)
  // Reserves both buffers for chunks of `chunk_bytes`; pages not yet written cost no RSS.
  void Reserve(std::size_t chunk_bytes, bool compressed);
};

enum class SourceStatus {
  kChunk,        // chunk() and wire() hold the next chunk
  kEnd,          // the file is exhausted
  kReadError,    // the chunker failed: chunker() says why and where
  kEncodeError,  // compressing the chunk failed: encode_error() says why
};

// Every chunk one ForwardPartition call sends, in file order, behind one Next(): the
// chunker's chunks, encoded once, read and encoded one ahead on the worker while the
// current chunk is on the wire, and the halves of a split chunk before anything after
// it. It knows nothing of HTTP or of what a response means.
// @ref LLP 0014#core @ref LLP 0014#read-ahead
//
// Threads: the sender thread only. While a read-ahead runs, the job is the only code
// touching the chunker, the encoder and buffers.ahead; every method that needs them
// waits for it first, and so does the destructor. The encoder, buffers and worker are
// not owned and must outlive the source.
class ChunkSource {
 public:
  // `replay`: ranges to send first, each exactly as it was cut before (a journal's
  // unacknowledged ranges after a restart, in order); the chunker then starts at
  // `begin`. @ref LLP 0014#journal
  ChunkSource(const std::filesystem::path& path, std::uint64_t begin, const ChunkerOptions& options,
              Encoder& encoder, ChunkBuffers& buffers, SingleSlotWorker& worker,
              std::deque<std::pair<std::uint64_t, std::uint64_t>> replay = {});
  ~ChunkSource();
  ChunkSource(const ChunkSource&) = delete;
  ChunkSource& operator=(const ChunkSource&) = delete;

  // Makes the next chunk current, encoded, and starts reading the one after it.
  [[nodiscard]] SourceStatus Next();
  // Replaces the current chunk (two rows or more) by its two halves, sent next.
  void SplitCurrent();
  // Queues the two halves of `chunk` (two rows or more; a chunk taken from this source
  // earlier), sent next, before anything after them. @ref LLP 0014#window
  // Returns where the halves meet.
  std::uint64_t Split(const Chunk& chunk);
  // Gives the current chunk back: the next Next() returns it again (re-encoded), before
  // anything else. For a chunk that has no room in the in-flight budget yet.
  // @ref LLP 0014#inflight-cap
  void PutBack();
  // Whether split halves come next.
  [[nodiscard]] bool splitting() const { return !split_halves_.empty(); }
  // Caps the raw size of chunks read from now on (the chunk being read ahead keeps its
  // size; the current chunk keeps its bytes and key). @ref LLP 0016#shrink
  void LimitChunkBytes(std::size_t bytes);

  // The current chunk, and the bytes to put on the wire for it (its own body with
  // identity: no copy). Valid after Next() returned kChunk.
  [[nodiscard]] const Chunk& chunk() const { return buffers_.current.chunk; }
  [[nodiscard]] std::string& wire();
  [[nodiscard]] std::uint64_t file_size() const { return chunker_.file_size(); }
  [[nodiscard]] const Chunker& chunker() const { return chunker_; }
  [[nodiscard]] std::string encode_error() const { return encoder_.error(); }

 private:
  NextStatus Take();
  static void TakeCopy(const Chunk& from, PreparedChunk& into);
  NextStatus Replay(PreparedChunk& into);
  NextStatus Fetch(PreparedChunk& into);
  void StartReadAhead();
  NextStatus WaitReadAhead();

  Chunker chunker_;
  Encoder& encoder_;          // Not owned.
  ChunkBuffers& buffers_;     // Not owned.
  SingleSlotWorker& worker_;  // Not owned.
  const bool identity_;
  std::optional<Chunk> put_back_;   // sent before anything
  std::deque<Chunk> split_halves_;  // sent before the chunker's next chunk
  std::deque<std::pair<std::uint64_t, std::uint64_t>> replay_;  // sent before anything
  std::filesystem::path path_;
  ChunkerOptions options_;
  bool read_ahead_running_ = false;
  std::optional<NextStatus> held_back_;  // a read-ahead's result held behind split halves
  NextStatus read_ahead_status_ = NextStatus::kEnd;  // the job's, read after WaitIdle()
  std::optional<std::size_t> pending_limit_;         // applied to the chunker while the job is idle
  void ApplyLimit();
};

}  // namespace fwdsink
