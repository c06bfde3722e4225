// SPDX-License-Identifier: Apache-2.0
// ChunkSource: chunker, encoder, read-ahead and split halves behind one Next().
#include <doctest/doctest.h>

#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "engine/chunk_source.h"
#include "support/test_files.h"

using fwdsink::ChunkBuffers;
using fwdsink::ChunkSource;
using fwdsink::Compression;
using fwdsink::SourceStatus;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;

namespace {

constexpr std::string_view kSuite = "chunk_source_test";
constexpr std::size_t kChunkBytes = 64;  // three 21-byte rows per chunk

std::filesystem::path WriteRows(const std::string& name, int rows, bool torn_tail = false) {
  const auto path = FreshDir(kSuite, name) / "p.ndjson";
  std::string text;
  for (int i = 0; i < rows; ++i) text += "{\"i\":" + std::to_string(100 + i) + ",\"pad\":\"xx\"}\n";
  if (torn_tail) text += "{\"torn\":";
  REQUIRE(WriteFile(path, text));
  return path;
}

// A sink's worth of collaborators for one source.
struct Parts {
  explicit Parts(Compression c) : encoder(c) {
    buffers.Reserve(kChunkBytes, c != Compression::kIdentity);
  }
  fwdsink::Encoder encoder;
  ChunkBuffers buffers;
  fwdsink::SingleSlotWorker worker;
};

fwdsink::ChunkerOptions Options() { return {.chunk_bytes = kChunkBytes, .max_line_bytes = 1024}; }

}  // namespace

TEST_CASE("ChunksComeInFileOrderEncodedOnceWithTheBuffersReused") {
  const auto path = WriteRows("order", 20);
  Parts parts(Compression::kZstd);
  const std::set<const char*> reserved = {parts.buffers.current.chunk.body.data(),
                                          parts.buffers.ahead.chunk.body.data()};
  ChunkSource source(path, 0, Options(), parts.encoder, parts.buffers, parts.worker);
  std::string all;
  std::set<const char*> seen;
  while (source.Next() == SourceStatus::kChunk) {
    CHECK(source.chunk().begin == all.size());
    all += source.chunk().body;
    const std::string& wire = source.wire();
    REQUIRE(wire.size() >= 4);
    CHECK(std::memcmp(wire.data(), "\x28\xb5\x2f\xfd", 4) == 0);  // a zstd frame
    seen.insert(source.chunk().body.data());
  }
  CHECK(all == ReadFile(path));
  // Swapped, never reallocated: every chunk sat in one of the two reserved buffers.
  CHECK(seen == reserved);
}

TEST_CASE("SplitHalvesGoOutBeforeTheChunkAfterThem") {
  const auto path = WriteRows("split", 20);
  Parts parts(Compression::kIdentity);
  ChunkSource source(path, 0, Options(), parts.encoder, parts.buffers, parts.worker);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  const auto next = [&] {
    REQUIRE(source.Next() == SourceStatus::kChunk);
    ranges.emplace_back(source.chunk().begin, source.chunk().end);
    CHECK(&source.wire() == &source.chunk().body);  // identity sends the chunk's own buffer
  };
  next();
  next();  // the second chunk: three rows, a read-ahead of the third in flight
  const auto second = ranges.back();
  REQUIRE(source.chunk().rows >= 2);
  SUBCASE("split: its two halves come next, then the third chunk") {
    source.SplitCurrent();
    next();
    next();
    next();
    CHECK(ranges[2].first == second.first);
    CHECK(ranges[2].second == ranges[3].first);
    CHECK(ranges[3].second == second.second);
    CHECK(ranges[4].first == second.second);
    CHECK(ranges[4].second > ranges[4].first);
  }
  SUBCASE("twin: no split, the third chunk comes next") {
    next();
    CHECK(ranges[2].first == second.second);
    CHECK(ranges[2].second - ranges[2].first == second.second - second.first);
  }
}

TEST_CASE("ATornTailIsAReadErrorAfterTheWholeLines") {
  const auto path = WriteRows("torn", 5, /*torn_tail=*/true);
  Parts parts(Compression::kIdentity);
  ChunkSource source(path, 0, Options(), parts.encoder, parts.buffers, parts.worker);
  std::uint64_t rows = 0;
  SourceStatus st;
  while ((st = source.Next()) == SourceStatus::kChunk) rows += source.chunk().rows;
  CHECK(rows == 5);
  CHECK(st == SourceStatus::kReadError);
  CHECK(source.chunker().error() == fwdsink::ChunkerError::kUnterminatedLine);
  SUBCASE("twin: a whole file ends with kEnd") {
    const auto whole = WriteRows("whole", 5);
    ChunkSource clean(whole, 0, Options(), parts.encoder, parts.buffers, parts.worker);
    while ((st = clean.Next()) == SourceStatus::kChunk) {
    }
    CHECK(st == SourceStatus::kEnd);
  }
}

// A journal's ranges are re-sent exactly as they were cut, whatever the chunk size is
// now: smaller (a range wider than the new chunks), larger, or another encoding.
// @ref LLP 0014#journal
TEST_CASE("AJournaledRangeIsCutAgainExactlyAtAnyChunkSize") {
  const auto path = WriteRows("replay", 30);
  const std::string text = ReadFile(path);
  // Ranges cut at 128 bytes: six 21-byte rows each. Then at 8 and 1024 bytes now.
  const std::deque<std::pair<std::uint64_t, std::uint64_t>> journal = {{0, 126}, {126, 252}};
  for (const std::size_t now : {std::size_t{8}, std::size_t{1024}}) {
    CAPTURE(now);
    for (const Compression c : {Compression::kIdentity, Compression::kZstd}) {
      Parts parts(c);
      fwdsink::ChunkerOptions options{.chunk_bytes = now, .max_line_bytes = 1024};
      ChunkSource source(path, 252, options, parts.encoder, parts.buffers, parts.worker, journal);
      for (const auto& [begin, end] : journal) {
        REQUIRE(source.Next() == SourceStatus::kChunk);
        CHECK(source.chunk().begin == begin);
        CHECK(source.chunk().end == end);
        CHECK(source.chunk().rows == 6);
        CHECK(source.chunk().body == text.substr(begin, end - begin));
      }
      // Then the chunker goes on at the journal's end, at the chunk size of now.
      REQUIRE(source.Next() == SourceStatus::kChunk);
      CHECK(source.chunk().begin == 252);
    }
  }
}

TEST_CASE("AJournaledRangeThatNoLongerEndsAtALineEndIsAReadError") {
  // The twin: the file was cut short inside the journaled range (torn at the boundary).
  const auto path = WriteRows("replay_torn", 8, /*torn_tail=*/true);  // 168 bytes + a torn row
  Parts parts(Compression::kIdentity);
  fwdsink::ChunkerOptions options{.chunk_bytes = 8, .max_line_bytes = 1024};
  ChunkSource source(path, 200, options, parts.encoder, parts.buffers, parts.worker, {{126, 200}});
  CHECK(source.Next() == SourceStatus::kReadError);
  CHECK(!source.chunker().ok());
}
