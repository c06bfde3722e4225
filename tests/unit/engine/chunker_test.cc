// SPDX-License-Identifier: Apache-2.0
// Chunker: packing whole lines, edge sizes, torn and oversize lines, resuming, memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fwdsink/chunker.h"
#include "support/test_files.h"

namespace {

using fwdsink::Chunk;
using fwdsink::Chunker;
using fwdsink::ChunkerError;
using fwdsink::ChunkerOptions;
using fwdsink::NextStatus;

constexpr std::uint32_t kSeed = 20261130;
constexpr std::size_t kSmallChunk = 10;
constexpr std::size_t kSmallMaxLine = 20;
constexpr std::size_t kPropertyChunk = 4096;
constexpr std::size_t kPropertyMaxLine = 16384;
constexpr std::size_t kPropertyFileBytes = 2 << 20;  // crosses many 256 KiB read buffers
constexpr std::size_t kMemoryChunk = 64 * 1024;
constexpr std::size_t kMemoryFileBytes = 20 << 20;
constexpr std::size_t kMemoryBodyBound = 2 * kMemoryChunk;

std::filesystem::path TmpDir() {
  auto dir = std::filesystem::path(FWDSINK_TEST_TMP) / "chunker_test";
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes `content` to the chunker's scratch folder as `name` and returns the path.
std::filesystem::path WriteFile(const std::string& name, const std::string& content) {
  const auto path = TmpDir() / name;
  REQUIRE(fwdsink::test::WriteFile(path, content));
  return path;
}

struct Drained {
  std::vector<Chunk> chunks;
  NextStatus last = NextStatus::kEnd;
};

// Calls Next() until kEnd or kError (bounded by the file size, so a bug cannot spin).
Drained Drain(Chunker& c) {
  Drained d;
  for (std::uint64_t i = 0; i <= c.file_size() + 1; ++i) {
    Chunk chunk;
    d.last = c.Next(chunk);
    if (d.last != NextStatus::kChunk) return d;
    d.chunks.push_back(std::move(chunk));
  }
  FAIL("chunker did not terminate");
  return d;
}

Drained DrainFile(const std::filesystem::path& path, std::uint64_t begin, ChunkerOptions o) {
  Chunker c = Chunker::Open(path, begin, o);
  REQUIRE_MESSAGE(c.ok(), c.error_message());
  return Drain(c);
}

std::vector<std::string> Bodies(const Drained& d) {
  std::vector<std::string> out;
  for (const auto& c : d.chunks) out.push_back(c.body);
  return out;
}

// Random NDJSON-ish lines, including empty ones and some longer than chunk_bytes.
std::string RandomLines(std::mt19937& rng, std::size_t total, std::size_t max_len) {
  std::uniform_int_distribution<std::size_t> len(0, max_len);
  std::uniform_int_distribution<int> ch('a', 'z');
  std::string out;
  while (out.size() < total) {
    const std::size_t n = len(rng) % 7 == 0 ? 0 : len(rng);
    for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<char>(ch(rng)));
    out.push_back('\n');
  }
  return out;
}

// Checks every invariant a chunk sequence must hold for the file `content` from `begin`.
void CheckChunks(const Drained& d, const std::string& content, std::uint64_t begin,
                 std::size_t chunk_bytes) {
  REQUIRE(d.last == NextStatus::kEnd);
  std::string joined;
  std::uint64_t at = begin;
  for (std::size_t i = 0; i < d.chunks.size(); ++i) {
    const Chunk& c = d.chunks[i];
    REQUIRE(c.begin == at);
    REQUIRE(c.end - c.begin == c.body.size());
    REQUIRE(!c.body.empty());
    REQUIRE(c.body.back() == '\n');
    REQUIRE(c.rows == static_cast<std::uint64_t>(std::count(c.body.begin(), c.body.end(), '\n')));
    // Over the target only when a single line is itself longer.
    if (c.body.size() > chunk_bytes) REQUIRE(c.rows == 1);
    // Greedy: the next chunk's first line would not have fitted behind this one.
    if (i + 1 < d.chunks.size()) {
      const std::string& next = d.chunks[i + 1].body;
      const std::size_t first_line = next.find('\n') + 1;
      REQUIRE(c.body.size() + first_line > chunk_bytes);
    }
    joined += c.body;
    at = c.end;
  }
  REQUIRE(at == content.size());
  REQUIRE(joined == content.substr(begin));
}

}  // namespace

TEST_CASE("ChunkerOptions validation names the field") {
  SUBCASE("defaults are valid") { CHECK(fwdsink::Validate(ChunkerOptions{}).ok()); }
  SUBCASE("chunk_bytes of zero") {
    const fwdsink::Status st = fwdsink::Validate(ChunkerOptions{.chunk_bytes = 0});
    REQUIRE_FALSE(st.ok());
    CHECK(st.field() == "chunk_bytes");
    CHECK(st.message().find("chunk_bytes") != std::string::npos);
  }
  SUBCASE("max_line_bytes below chunk_bytes") {
    const fwdsink::Status st =
        fwdsink::Validate(ChunkerOptions{.chunk_bytes = 100, .max_line_bytes = 99});
    REQUIRE_FALSE(st.ok());
    CHECK(st.field() == "max_line_bytes");
    CHECK(st.message().find("max_line_bytes") != std::string::npos);
  }
  SUBCASE("max_line_bytes equal to chunk_bytes is fine") {
    CHECK(fwdsink::Validate(ChunkerOptions{.chunk_bytes = 100, .max_line_bytes = 100}).ok());
  }
  SUBCASE("Open refuses bad options") {
    const auto path = WriteFile("bad_options.ndjson", "a\n");
    Chunker c = Chunker::Open(path, 0, ChunkerOptions{.chunk_bytes = 0});
    CHECK(c.error() == ChunkerError::kBadOptions);
    Chunk out;
    CHECK(c.Next(out) == NextStatus::kError);
  }
}

TEST_CASE("Chunker open errors") {
  SUBCASE("missing file") {
    Chunker c = Chunker::Open(TmpDir() / "does-not-exist.ndjson", 0);
    CHECK(c.error() == ChunkerError::kOpenFailed);
    CHECK(c.error_message().find("does-not-exist.ndjson") != std::string::npos);
  }
  SUBCASE("a directory") {
    Chunker c = Chunker::Open(TmpDir(), 0);
    CHECK(c.error() == ChunkerError::kOpenFailed);
  }
  SUBCASE("to_string is stable") {
    CHECK(fwdsink::to_string(ChunkerError::kLineTooLong) == "line_too_long");
    CHECK(fwdsink::to_string(ChunkerError::kUnterminatedLine) == "unterminated_line");
    CHECK(fwdsink::to_string(ChunkerError::kNotAtLineStart) == "not_at_line_start");
  }
}

TEST_CASE("Chunker on an empty file ends at once") {
  const auto empty = WriteFile("empty.ndjson", "");
  Chunker c = Chunker::Open(empty, 0);
  REQUIRE(c.ok());
  Chunk out;
  CHECK(c.Next(out) == NextStatus::kEnd);
  CHECK(out.body.empty());
  CHECK(c.offset() == 0);
  CHECK(c.file_size() == 0);
  CHECK(c.ok());

  SUBCASE("twin: a one-line file yields a chunk") {
    const auto one = WriteFile("one.ndjson", "{}\n");
    auto d = DrainFile(one, 0, {});
    REQUIRE(d.chunks.size() == 1);
    CHECK(d.chunks[0].body == "{}\n");
    CHECK(d.chunks[0].rows == 1);
  }
}

TEST_CASE("Chunker packs whole lines up to chunk_bytes") {
  const ChunkerOptions o{.chunk_bytes = kSmallChunk, .max_line_bytes = kSmallMaxLine};
  SUBCASE("two lines that fit exactly share a chunk") {
    const auto p = WriteFile("exact_fit.ndjson", "aaaa\nbbbb\ncc\n");
    auto d = DrainFile(p, 0, o);
    CHECK(Bodies(d) == std::vector<std::string>{"aaaa\nbbbb\n", "cc\n"});
    CHECK(d.chunks[0].rows == 2);
    CHECK(d.chunks[1].begin == 10);
  }
  SUBCASE("twin: one byte more and the second line moves on") {
    const auto p = WriteFile("one_over.ndjson", "aaaa\nbbbbb\ncc\n");
    auto d = DrainFile(p, 0, o);
    CHECK(Bodies(d) == std::vector<std::string>{"aaaa\n", "bbbbb\ncc\n"});
  }
  SUBCASE("empty lines are lines") {
    const auto p = WriteFile("empty_lines.ndjson", "\n\na\n\n");
    auto d = DrainFile(p, 0, o);
    REQUIRE(d.chunks.size() == 1);
    CHECK(d.chunks[0].rows == 4);
    CHECK(d.chunks[0].end == 5);
  }
}

TEST_CASE("Chunker sizes at the chunk_bytes edge") {
  const ChunkerOptions o{.chunk_bytes = kSmallChunk, .max_line_bytes = kSmallMaxLine};
  SUBCASE("a line exactly chunk_bytes long is a chunk of its own") {
    const auto p = WriteFile("line_exact.ndjson", "x\n123456789\ny\n");
    auto d = DrainFile(p, 0, o);
    CHECK(Bodies(d) == std::vector<std::string>{"x\n", "123456789\n", "y\n"});
  }
  SUBCASE("a line of chunk_bytes + 1 travels alone") {
    const auto p = WriteFile("line_plus_one.ndjson", "x\n1234567890\ny\n");
    auto d = DrainFile(p, 0, o);
    CHECK(Bodies(d) == std::vector<std::string>{"x\n", "1234567890\n", "y\n"});
    CHECK(d.chunks[1].rows == 1);
    CHECK(d.chunks[1].begin == 2);
    CHECK(d.chunks[1].end == 13);
  }
}

TEST_CASE("Chunker refuses a line longer than max_line_bytes") {
  const ChunkerOptions o{.chunk_bytes = kSmallChunk, .max_line_bytes = kSmallMaxLine};
  const std::string long_line = std::string(kSmallMaxLine, 'L') + "\n";  // 21 bytes
  const auto p = WriteFile("too_long.ndjson", "ab\n" + long_line + "c\n");
  Chunker c = Chunker::Open(p, 0, o);
  auto d = Drain(c);
  CHECK(Bodies(d) == std::vector<std::string>{"ab\n"});  // what came before is delivered
  REQUIRE(d.last == NextStatus::kError);
  CHECK(c.error() == ChunkerError::kLineTooLong);
  CHECK(c.error_offset() == 3);
  CHECK(c.error_message().find("too_long.ndjson") != std::string::npos);
  CHECK(c.error_message().find("offset 3") != std::string::npos);
  CHECK(c.offset() == 3);  // the cursor stays before the bad line
  Chunk again;
  CHECK(c.Next(again) == NextStatus::kError);  // sticky

  SUBCASE("twin: a line of exactly max_line_bytes passes") {
    const std::string max_line = std::string(kSmallMaxLine - 1, 'L') + "\n";
    const auto ok = WriteFile("max_line_ok.ndjson", "ab\n" + max_line + "c\n");
    auto d2 = DrainFile(ok, 0, o);
    CHECK(Bodies(d2) == std::vector<std::string>{"ab\n", max_line, "c\n"});
  }
}

TEST_CASE("Chunker reports a final line without newline") {
  const ChunkerOptions o{.chunk_bytes = kSmallChunk, .max_line_bytes = kSmallMaxLine};
  const auto p = WriteFile("torn.ndjson", "a\nb\nccc");
  Chunker c = Chunker::Open(p, 0, o);
  auto d = Drain(c);
  CHECK(Bodies(d) == std::vector<std::string>{"a\nb\n"});
  REQUIRE(d.last == NextStatus::kError);
  CHECK(c.error() == ChunkerError::kUnterminatedLine);
  CHECK(c.error_offset() == 4);
  CHECK(c.error_message().find("offset 4") != std::string::npos);

  SUBCASE("twin: with its newline the same file ends cleanly") {
    const auto whole = WriteFile("not_torn.ndjson", "a\nb\nccc\n");
    auto d2 = DrainFile(whole, 0, o);
    CHECK(d2.last == NextStatus::kEnd);
    CHECK(Bodies(d2) == std::vector<std::string>{"a\nb\nccc\n"});
  }
  SUBCASE("a file that is one torn line") {
    const auto only = WriteFile("only_torn.ndjson", "abc");
    Chunker c2 = Chunker::Open(only, 0, o);
    Chunk out;
    CHECK(c2.Next(out) == NextStatus::kError);
    CHECK(c2.error() == ChunkerError::kUnterminatedLine);
    CHECK(c2.error_offset() == 0);
  }
}

TEST_CASE("Chunker resumes from a saved offset") {
  std::mt19937 rng(kSeed);
  const ChunkerOptions o{.chunk_bytes = 200, .max_line_bytes = 1000};
  const std::string content = RandomLines(rng, 5000, 120);
  const auto p = WriteFile("resume.ndjson", content);
  const auto all = DrainFile(p, 0, o);
  REQUIRE(all.chunks.size() > 10);

  SUBCASE("from every chunk boundary, exactly the suffix chunks") {
    for (std::size_t i = 0; i < all.chunks.size(); ++i) {
      auto rest = DrainFile(p, all.chunks[i].begin, o);
      REQUIRE(rest.chunks.size() == all.chunks.size() - i);
      for (std::size_t j = 0; j < rest.chunks.size(); ++j) {
        CHECK(rest.chunks[j].begin == all.chunks[i + j].begin);
        CHECK(rest.chunks[j].end == all.chunks[i + j].end);
        CHECK(rest.chunks[j].body == all.chunks[i + j].body);
      }
    }
  }
  SUBCASE("from any line start inside a chunk") {
    const std::uint64_t line_start = all.chunks[3].body.find('\n') + 1 + all.chunks[3].begin;
    auto rest = DrainFile(p, line_start, o);
    CheckChunks(rest, content, line_start, o.chunk_bytes);
  }
  SUBCASE("from the middle of a line: error") {
    std::uint64_t mid = all.chunks[2].begin + 1;
    while (content[mid - 1] == '\n') ++mid;  // make sure it is really mid-line
    Chunker c = Chunker::Open(p, mid, o);
    CHECK(c.error() == ChunkerError::kNotAtLineStart);
    CHECK(c.error_offset() == mid);
    Chunk out;
    CHECK(c.Next(out) == NextStatus::kError);
  }
  SUBCASE("from the end of the file: nothing left") {
    Chunker c = Chunker::Open(p, content.size(), o);
    REQUIRE(c.ok());
    Chunk out;
    CHECK(c.Next(out) == NextStatus::kEnd);
  }
  SUBCASE("past the end of the file: error") {
    Chunker c = Chunker::Open(p, content.size() + 1, o);
    CHECK(c.error() == ChunkerError::kBadOffset);
  }
}

TEST_CASE("Chunker bodies concatenate to the file, byte for byte") {
  std::mt19937 rng(kSeed);
  const ChunkerOptions o{.chunk_bytes = kPropertyChunk, .max_line_bytes = kPropertyMaxLine};
  // Lines up to 1.5x chunk_bytes: some travel alone, many straddle read buffers.
  const std::string content = RandomLines(rng, kPropertyFileBytes, kPropertyChunk * 3 / 2);
  const auto p = WriteFile("property.ndjson", content);
  auto d = DrainFile(p, 0, o);
  CheckChunks(d, content, 0, o.chunk_bytes);
  std::uint64_t rows = 0;
  for (const auto& c : d.chunks) rows += c.rows;
  CHECK(rows == static_cast<std::uint64_t>(std::count(content.begin(), content.end(), '\n')));
}

TEST_CASE("Chunker memory stays bounded by the chunk size") {
  std::mt19937 rng(kSeed);
  const ChunkerOptions o{.chunk_bytes = kMemoryChunk};
  const auto p = WriteFile("memory.ndjson", RandomLines(rng, kMemoryFileBytes, 2000));
  Chunker c = Chunker::Open(p, 0, o);
  REQUIRE(c.ok());
  Chunk out;  // reused, as the sink does
  std::size_t max_capacity = 0;
  std::uint64_t chunks = 0;
  while (c.Next(out) == NextStatus::kChunk) {
    max_capacity = std::max(max_capacity, out.body.capacity());
    ++chunks;
  }
  REQUIRE(c.ok());
  CHECK(chunks >= kMemoryFileBytes / kMemoryChunk);
  CHECK(max_capacity <= kMemoryBodyBound);

  SUBCASE("twin: a single long line does grow the body past the bound") {
    const auto big =
        WriteFile("memory_long_line.ndjson", std::string(3 * kMemoryChunk, 'x') + "\n");
    Chunker c2 = Chunker::Open(big, 0, o);
    Chunk one;
    REQUIRE(c2.Next(one) == NextStatus::kChunk);
    CHECK(one.body.capacity() > kMemoryBodyBound);
  }
}

TEST_CASE("SplitChunk cuts at the line boundary nearest the middle") {
  auto make = [](std::uint64_t begin, std::string body) {
    Chunk c;
    c.begin = begin;
    c.end = begin + body.size();
    c.rows = static_cast<std::uint64_t>(std::count(body.begin(), body.end(), '\n'));
    c.body = std::move(body);
    return c;
  };
  SUBCASE("one row cannot be split") { CHECK_FALSE(fwdsink::SplitChunk(make(7, "abc\n"))); }
  SUBCASE("an empty chunk cannot be split") { CHECK_FALSE(fwdsink::SplitChunk(Chunk{})); }
  SUBCASE("two rows split into one and one") {
    auto halves = fwdsink::SplitChunk(make(100, "ab\ncdef\n"));
    REQUIRE(halves);
    CHECK(halves->first.body == "ab\n");
    CHECK(halves->first.begin == 100);
    CHECK(halves->first.end == 103);
    CHECK(halves->first.rows == 1);
    CHECK(halves->second.body == "cdef\n");
    CHECK(halves->second.begin == 103);
    CHECK(halves->second.end == 108);
    CHECK(halves->second.rows == 1);
  }
  SUBCASE("two empty lines") {
    auto halves = fwdsink::SplitChunk(make(0, "\n\n"));
    REQUIRE(halves);
    CHECK(halves->first.body == "\n");
    CHECK(halves->second.body == "\n");
  }
  SUBCASE("three equal rows: the nearer boundary wins") {
    auto halves = fwdsink::SplitChunk(make(0, "aa\nbb\ncc\n"));  // middle 4: cuts at 3 and 6
    REQUIRE(halves);
    CHECK(halves->first.body == "aa\n");
    CHECK(halves->first.rows == 1);
    CHECK(halves->second.body == "bb\ncc\n");
    CHECK(halves->second.rows == 2);
  }
  SUBCASE("twin: the boundary after the middle wins when it is nearer") {
    auto halves = fwdsink::SplitChunk(make(0, "a\nbbbb\ncc\n"));  // middle 5: cuts 2 and 7
    REQUIRE(halves);
    CHECK(halves->first.body == "a\nbbbb\n");
    CHECK(halves->first.rows == 2);
    CHECK(halves->second.body == "cc\n");
    CHECK(halves->second.rows == 1);
  }
  SUBCASE("halves of a real chunk cover it exactly") {
    std::mt19937 rng(kSeed);
    const std::string content = RandomLines(rng, 3000, 80);
    const auto p = WriteFile("split.ndjson", content);
    auto d = DrainFile(p, 0, ChunkerOptions{.chunk_bytes = 1000, .max_line_bytes = 1000});
    for (const auto& c : d.chunks) {
      auto halves = fwdsink::SplitChunk(c);
      if (c.rows < 2) {
        CHECK_FALSE(halves);
        continue;
      }
      REQUIRE(halves);
      CHECK(halves->first.body + halves->second.body == c.body);
      CHECK(halves->first.rows + halves->second.rows == c.rows);
      CHECK(halves->first.rows >= 1);
      CHECK(halves->second.rows >= 1);
      CHECK(halves->first.end == halves->second.begin);
    }
  }
}

TEST_CASE("A moved chunker carries on where it was") {
  const auto p = WriteFile("moved.ndjson", "a\nb\n");
  Chunker c = Chunker::Open(p, 0, ChunkerOptions{.chunk_bytes = 2, .max_line_bytes = 2});
  Chunk out;
  REQUIRE(c.Next(out) == NextStatus::kChunk);
  Chunker moved = std::move(c);
  REQUIRE(moved.Next(out) == NextStatus::kChunk);
  CHECK(out.body == "b\n");
  CHECK(moved.Next(out) == NextStatus::kEnd);
  CHECK(c.Next(out) == NextStatus::kError);  // NOLINT(bugprone-use-after-move): defined state
}
