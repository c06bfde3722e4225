// SPDX-License-Identifier: Apache-2.0
// The library's one file reader: RAII descriptor, one pread loop, one line-start check.
#include <doctest/doctest.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "io/file_reader.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using fwdsink::Result;
using fwdsink::StatusCode;
using fwdsink::internal::FileReader;
using fwdsink::test::FreshDir;
using fwdsink::test::WriteFile;

namespace {

constexpr std::string_view kRows = "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n";
constexpr std::size_t kMaxBytesPerCall = 3;

// A pread that is interrupted before every real read and then returns at most
// kMaxBytesPerCall bytes: what a signal-heavy process on a slow device may see.
int g_calls = 0;
ssize_t InterruptingPread(int fd, void* buf, std::size_t count, off_t offset) {
  if (g_calls++ % 2 == 0) {
    errno = EINTR;
    return -1;
  }
  return ::pread(fd, buf, std::min(count, kMaxBytesPerCall), offset);
}

// A pread that fails with EIO: an error other than EINTR is not retried.
ssize_t FailingPread(int, void*, std::size_t, off_t) {
  errno = EIO;
  return -1;
}

std::string ReadAll(const FileReader& file, std::size_t n) {
  std::string out(n, '\0');
  const Result<std::size_t> got = file.ReadAt(0, out.data(), n);
  REQUIRE_MESSAGE(got.ok(), got.status().ToString());
  out.resize(*got);
  return out;
}

}  // namespace

TEST_CASE("ReadAt reads the whole range through EINTR and short reads") {
  const fs::path path = FreshDir("file_reader_test", "eintr") / "p.ndjson";
  REQUIRE(WriteFile(path, kRows));
  g_calls = 0;
  Result<FileReader> file = FileReader::Open(path, InterruptingPread);
  REQUIRE(file.ok());
  CHECK(ReadAll(*file, kRows.size()) == kRows);
  CHECK(g_calls > static_cast<int>(kRows.size() / kMaxBytesPerCall));  // it did loop
  SUBCASE("twin: any other error is reported, not retried") {
    Result<FileReader> failing = FileReader::Open(path, FailingPread);
    REQUIRE(failing.ok());
    char c = 0;
    const Result<std::size_t> got = failing->ReadAt(0, &c, 1);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kIo);
  }
}

TEST_CASE("ReadAt stops short only at the end of the file") {
  const fs::path path = FreshDir("file_reader_test", "short") / "p.ndjson";
  REQUIRE(WriteFile(path, kRows));
  Result<FileReader> file = FileReader::Open(path);
  REQUIRE(file.ok());
  CHECK(ReadAll(*file, kRows.size() + 100) == kRows);
  std::string tail(10, '\0');
  const Result<std::size_t> past_end = file->ReadAt(kRows.size() + 5, tail.data(), tail.size());
  REQUIRE(past_end.ok());
  CHECK(*past_end == 0);
  const Result<fwdsink::internal::FileInfo> info = file->Stat();
  REQUIRE(info.ok());
  CHECK(info->size == kRows.size());
  CHECK(info->regular);
}

TEST_CASE("Errors name the path") {
  const fs::path dir = FreshDir("file_reader_test", "errors");
  SUBCASE("a missing file is kNotFound") {
    const Result<FileReader> file = FileReader::Open(dir / "absent.ndjson");
    REQUIRE_FALSE(file.ok());
    CHECK(file.status().code() == StatusCode::kNotFound);
    CHECK(file.status().message().find("absent.ndjson") != std::string::npos);
  }
  SUBCASE("reading a folder is kIo with the path") {
    Result<FileReader> file = FileReader::Open(dir);  // open(2) allows O_RDONLY on a folder
    REQUIRE(file.ok());
    char c = 0;
    const Result<std::size_t> got = file->ReadAt(0, &c, 1);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kIo);
    CHECK(got.status().message().find(dir.string()) != std::string::npos);
  }
}

TEST_CASE("AtLineStart accepts 0 and offsets just after a newline only") {
  const fs::path path = FreshDir("file_reader_test", "line_start") / "p.ndjson";
  REQUIRE(WriteFile(path, kRows));
  Result<FileReader> file = FileReader::Open(path);
  REQUIRE(file.ok());
  CHECK(*file->AtLineStart(0));
  CHECK(*file->AtLineStart(8));             // after {"a":1}\n
  CHECK(*file->AtLineStart(kRows.size()));  // the end of a sealed partition
  CHECK_FALSE(*file->AtLineStart(1));
  CHECK_FALSE(*file->AtLineStart(7));                 // on the '\n' itself
  CHECK_FALSE(*file->AtLineStart(kRows.size() + 1));  // past the end
}
