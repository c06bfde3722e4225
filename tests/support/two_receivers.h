// SPDX-License-Identifier: Apache-2.0
// Helpers for the failover tests: a daemon forwarding to two fwdsink-central receivers
// (directly, or behind a load balancer), and the checks across the two.
//
// Threading: used by one test thread.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/central_process.h"
#include "support/daemon_process.h"

namespace fwdsink::test {

namespace fs = std::filesystem;

// Runs the daemon's generate command; returns the number of rows written.
inline std::uint64_t GenerateSpool(const fs::path& dir, const fs::path& spool,
                                   const std::string& bytes, const std::string& partitions) {
  DaemonProcess gen(dir, "generate",
                    {"generate", "--spool", spool.string(), "--bytes", bytes, "--partitions",
                     partitions, "--seed", "5"});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(std::chrono::seconds(60)) == 0);
  return std::stoull(gen.out());
}

// Returns the "seq" of every row stored (generate gives each row a unique one).
inline std::vector<std::uint64_t> Seqs(const std::vector<std::string>& rows) {
  std::vector<std::uint64_t> out;
  for (const std::string& row : rows) {
    const auto at = row.find("\"seq\":");
    REQUIRE(at != std::string::npos);
    out.push_back(std::stoull(row.substr(at + 6)));
  }
  return out;
}

// The keys a receiver stored (a 2xx that was no duplicate of a key it had already).
inline std::set<std::string> StoredKeys(const CentralProcess& c) {
  std::set<std::string> keys;
  for (const auto& e : c.request_log()) {
    const int status = e.value("status", 0);
    if (status >= 200 && status < 300 && e.value("reason", std::string()) != "duplicate") {
      keys.insert(e.value("key", std::string()));
    }
  }
  return keys;
}

// What two receivers hold together.
struct AcrossTwo {
  std::uint64_t distinct_rows = 0;   // distinct seqs stored at either
  std::uint64_t rows_at_both = 0;    // seqs stored at both
  std::uint64_t chunks_at_both = 0;  // keys stored at both
  std::uint64_t rows_a = 0, rows_b = 0;
};

inline AcrossTwo Across(const CentralProcess& a, const CentralProcess& b) {
  AcrossTwo r;
  const auto seqs_a = Seqs(a.received_rows());
  const auto seqs_b = Seqs(b.received_rows());
  r.rows_a = seqs_a.size();
  r.rows_b = seqs_b.size();
  std::set<std::uint64_t> in_a(seqs_a.begin(), seqs_a.end());
  std::set<std::uint64_t> all(in_a);
  for (std::uint64_t s : seqs_b) {
    all.insert(s);
    if (in_a.count(s) > 0) ++r.rows_at_both;
  }
  r.distinct_rows = all.size();
  const auto keys_a = StoredKeys(a);
  for (const std::string& k : StoredKeys(b)) r.chunks_at_both += keys_a.count(k);
  return r;
}

// Returns how many entries the spool's ready/ folder still holds.
inline std::size_t ReadyLeft(const fs::path& spool) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(spool / "ready", ec)) {
    (void)e;
    ++n;
  }
  return n;
}

// The daemon's last JSON line that is daemon.exit (null when there is none).
inline nlohmann::json ExitLine(const std::string& err) {
  nlohmann::json last;
  std::size_t start = 0;
  while (start < err.size()) {
    std::size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    auto j = nlohmann::json::parse(err.substr(start, end - start), nullptr, false);
    if (!j.is_discarded() && j.value("event", std::string()) == "daemon.exit") last = j;
    start = end + 1;
  }
  return last;
}

// Counts the JSON log lines whose event is `name`.
inline int CountEvents(const std::string& err, const std::string& name) {
  int n = 0;
  const std::string needle = "\"event\":\"" + name + "\"";
  for (std::size_t at = err.find(needle); at != std::string::npos; at = err.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace fwdsink::test
