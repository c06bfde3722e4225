// SPDX-License-Identifier: Apache-2.0
// File helpers shared by the tests that work on real folders (spool, dead letters, spool
// writer, chunker, forward sink, driver, the daemon): a fresh scratch folder per test,
// whole-file reads and writes, and the rows a spool's ready/ or dead/ holds.
//
//   const fs::path dir = FreshDir("spool_test", "open");  // FWDSINK_TEST_TMP/spool_test/open
//   WriteFile(dir / "a.ndjson", "{}\n");
//   CHECK(ReadFile(dir / "a.ndjson") == "{}\n");
//   CHECK(FileNames(dir) == std::vector<std::string>{"a.ndjson"});
//
// Threading: plain functions, called on the test's own thread; tests that run in parallel
// (separate executables) stay apart because each suite keeps its own folder.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace fwdsink::test {

// Returns FWDSINK_TEST_TMP/<suite>/<tag>, emptied and created. `suite` names the test file
// (one folder per executable) and `tag` the test case, so no two tests share a folder.
inline std::filesystem::path FreshDir(std::string_view suite, std::string_view tag) {
  const std::filesystem::path dir = std::filesystem::path(FWDSINK_TEST_TMP) / suite / tag;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Replaces `path` with exactly `bytes`; returns whether every byte was written.
inline bool WriteFile(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

// Returns the bytes of `path`, or "" when it cannot be opened.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Returns the lines of `path` without their '\n' (none when it cannot be opened).
inline std::vector<std::string> ReadLines(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Returns the .ndjson files directly in `dir`, sorted by name.
inline std::vector<std::filesystem::path> RowsFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".ndjson") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Returns the rows files of the dead letters in SPOOL/dead, sorted by name.
inline std::vector<std::filesystem::path> DeadRowFiles(const std::filesystem::path& spool) {
  return RowsFiles(spool / "dead");
}

// Returns the rows of every .ndjson file directly in `dir`, the files in name order.
inline std::vector<std::string> RowsIn(const std::filesystem::path& dir) {
  std::vector<std::string> rows;
  for (const auto& f : RowsFiles(dir)) {
    for (auto& r : ReadLines(f)) rows.push_back(std::move(r));
  }
  return rows;
}

// Returns the rows of every dead letter's .ndjson file in `dead` (a spool's dead/), the
// files in name order.
inline std::vector<std::string> DeadRows(const std::filesystem::path& dead) { return RowsIn(dead); }

// Returns every row sealed in SPOOL/ready, the partitions in name order.
inline std::vector<std::string> ReadyRows(const std::filesystem::path& spool) {
  return RowsIn(spool / "ready");
}

// Returns the names of the entries directly in `dir`, sorted, so that tests can compare
// folder contents with a literal list.
inline std::vector<std::string> FileNames(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace fwdsink::test
