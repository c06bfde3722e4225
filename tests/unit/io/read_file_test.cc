// SPDX-License-Identifier: Apache-2.0
// ReadRegularFile (fwdsink/read_file.h): folders, FIFOs and devices are refused before a
// byte is read, the size is capped, and it is the one way the library and the daemon read
// a file whole: a source scan fails on any other reader. Its callers (the config file, the
// credential files) are tested with the settings, in unit/ops/settings_test.cc.
// @ref LLP 0023#regular-files
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "fwdsink/read_file.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using fwdsink::ReadRegularFile;
using fwdsink::StatusCode;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadLines;
using fwdsink::test::WriteFile;

namespace {

constexpr std::string_view kSuite = "read_file_test";

bool Has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("ReadRegularFile: folders, FIFOs and devices are refused at once, sizes capped") {
  const fs::path dir = FreshDir(kSuite, "kinds");
  SUBCASE("a folder") {
    auto r = ReadRegularFile(dir);
    REQUIRE_FALSE(r.ok());
    CHECK(Has(r.status().message(), dir.string() + " is a directory, not a regular file"));
  }
  SUBCASE("a FIFO with no writer: refused, not waited on") {
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = ReadRegularFile(dir / "fifo");
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));  // "did not hang"
    REQUIRE_FALSE(r.ok());
    CHECK(Has(r.status().message(), "is a FIFO, not a regular file"));
  }
  SUBCASE("/dev/zero: refused, not read until memory runs out") {
    auto r = ReadRegularFile("/dev/zero", {.max_bytes = fwdsink::kMaxConfigFileBytes});
    REQUIRE_FALSE(r.ok());
    CHECK(Has(r.status().message(), "/dev/zero is a character device, not a regular file"));
  }
  SUBCASE("over the cap") {
    REQUIRE(WriteFile(dir / "big", std::string(fwdsink::kMaxCredentialFileBytes + 1, 'x')));
    auto r = ReadRegularFile(dir / "big");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kCorrupt);
    CHECK(Has(r.status().message(), "is larger than 65536 bytes"));
  }
  SUBCASE("missing") {
    auto r = ReadRegularFile(dir / "nope");
    CHECK(r.status().code() == StatusCode::kNotFound);
  }
  SUBCASE("twin: a regular file at the cap, and through a symlink unless refused") {
    const std::string text(fwdsink::kMaxCredentialFileBytes, 't');
    REQUIRE(WriteFile(dir / "ok", text));
    auto r = ReadRegularFile(dir / "ok");
    REQUIRE(r.ok());
    CHECK(*r == text);
    fs::create_symlink(dir / "ok", dir / "link");
    CHECK(ReadRegularFile(dir / "link").ok());
    CHECK_FALSE(ReadRegularFile(dir / "link", {.follow_symlinks = false}).ok());
  }
}

// The one-function rule as a test: any other way to open a file for reading in the
// library or the daemon fails here. file_reader.cc (the partition reader, which checks
// the type with fstat itself) and read_file.cc are the two places that may.
TEST_CASE("Source scan: nothing in sink/src or examples/fwdsink reads a file another way") {
  const fs::path root = FWDSINK_SOURCE_DIR;
  const std::regex forbidden(
      R"(std::ifstream|std::fstream|\bifstream\b|fopen\([^)]*"r|::open\([^;]*O_RDONLY)");
  const std::regex allowed_line(R"(O_DIRECTORY)");  // fsync of a folder
  std::vector<std::string> offenders;
  std::size_t files = 0;
  for (const char* sub : {"sink/src", "examples/fwdsink"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / sub)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cc" && ext != ".h") continue;
      const std::string name = e.path().filename().string();
      if (name == "file_reader.cc" || name == "read_file.cc") continue;
      ++files;
      int n = 0;
      for (const std::string& line : ReadLines(e.path())) {
        ++n;
        if (std::regex_search(line, forbidden) && !std::regex_search(line, allowed_line)) {
          offenders.push_back(e.path().lexically_relative(root).string() + ":" + std::to_string(n) +
                              ": " + line);
        }
      }
    }
  }
  CHECK(files > 40);  // the scan did look at the sources
  for (const std::string& o : offenders) MESSAGE(o);
  CHECK(offenders.empty());
}
