// SPDX-License-Identifier: Apache-2.0
// A spool for the daemon under test, and the daemon run over it: the spool's folders
// made, partitions sealed through SpoolWriter, the `forward` arguments, one `--once`
// pass, and what the spool holds afterwards (its dead letters, the entries of a folder).
//
//   const fs::path spool = MakeSpool(dir);  // DIR/spool/{ready,state,dead,incoming}
//   SealRows(spool, 3, 1);                  // {"tag":1,"i":0} ... {"tag":1,"i":2}
//   DaemonProcess d(dir, "run", Forward(spool, Url(central), {"--once"}));
//   std::string log;
//   CHECK(Once(dir, "again", spool, Url(central), {}, &log) == 0);
//   CHECK(DeadLetters(spool).empty());
//
// Threading: plain functions, called on the test's own thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <doctest/doctest.h>

#include "fwdsink/spool.h"
#include "fwdsink/spool_writer.h"
#include "support/daemon_process.h"

namespace fwdsink::test {

// How long Once() lets a `--once` pass run before it is killed.
inline constexpr auto kOnceTimeout = std::chrono::seconds(20);

// A spool with its folders, under a fresh scratch dir: DIR/spool.
inline std::filesystem::path MakeSpool(const std::filesystem::path& dir) {
  const std::filesystem::path spool = dir / "spool";
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    std::filesystem::create_directories(spool / sub);
  return spool;
}

// The daemon's arguments to forward `spool` to `url` with a JSON log, then `extra`.
inline std::vector<std::string> Forward(const std::filesystem::path& spool, const std::string& url,
                                        std::vector<std::string> extra) {
  std::vector<std::string> args = {"forward", "--spool", spool.string(),
                                   "--url",   url,       "--log-json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// One `fwdsink forward --once` pass with the log at debug level; returns its exit code
// (-1 if it did not finish within `timeout`) and keeps what it wrote in `log`.
inline int Once(const std::filesystem::path& dir, const std::string& tag,
                const std::filesystem::path& spool, const std::string& url,
                std::vector<std::string> extra, std::string* log,
                std::chrono::milliseconds timeout = kOnceTimeout) {
  std::vector<std::string> args = {"forward", "--once",     "--spool",     spool.string(), "--url",
                                   url,       "--log-json", "--log-level", "debug"};
  args.insert(args.end(), extra.begin(), extra.end());
  DaemonProcess d(dir, tag, args);
  const auto code = d.Wait(timeout);
  *log = d.out() + d.err();
  return code.value_or(-1);
}

// Seals one partition of `rows` (good JSON unless told otherwise) through SpoolWriter;
// returns its name.
inline std::string SealRows(const std::filesystem::path& spool,
                            const std::vector<std::string>& rows) {
  auto w = fwdsink::SpoolWriter::Open(spool);
  REQUIRE(w.ok());
  for (const auto& r : rows) REQUIRE(w->Append(r).ok());
  auto sealed = w->Seal();
  REQUIRE(sealed.ok());
  REQUIRE(sealed->has_value());
  return **sealed;
}

// Seals one partition of `rows` small rows {"tag":TAG,"i":N} through SpoolWriter; returns
// its name.
inline std::string SealRows(const std::filesystem::path& spool, int rows, int tag) {
  std::vector<std::string> lines;
  for (int i = 0; i < rows; ++i) {
    lines.push_back("{\"tag\":" + std::to_string(tag) + ",\"i\":" + std::to_string(i) + "}");
  }
  return SealRows(spool, lines);
}

// Returns every dead letter in `spool`, as the spool lists them (no limit).
inline std::vector<fwdsink::DeadEntry> DeadLetters(const std::filesystem::path& spool) {
  auto s = fwdsink::Spool::Open(spool);
  REQUIRE(s.ok());
  fwdsink::DeadFilter all;
  all.limit = 0;
  auto list = s->ListDead(all, std::chrono::system_clock::now());
  REQUIRE(list.ok());
  return list->entries;
}

// Returns how many entries `dir` holds (0 when it does not exist).
inline std::size_t Entries(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return 0;
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                                std::filesystem::directory_iterator{}));
}

// Returns how many partitions (.ndjson files) wait in SPOOL/ready.
inline std::size_t CountReady(const std::filesystem::path& spool) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(spool / "ready")) {
    if (e.path().extension() == ".ndjson") ++n;
  }
  return n;
}

}  // namespace fwdsink::test
