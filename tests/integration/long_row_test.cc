// SPDX-License-Identifier: Apache-2.0
// A row longer than the line limit, against the real daemon and the reference receiver
// on 127.0.0.1: it goes to dead/ alone, with its event, and the rows after it are sent,
// in a partition and in a requeued dead letter that holds one; the twin, a 100 KiB row
// under the limit, is sent like any other. @ref LLP 0023#row-too-long
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fwdsink/spool.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ReadFile;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 60s;
constexpr int kExitDataErr = 65;
constexpr std::size_t kLongRow = (17u << 20);  // over the 16 MiB default line limit

fs::path MakeSpool(const fs::path& dir) {
  const fs::path spool = dir / "spool";
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  return spool;
}

std::string Url(const CentralProcess& c) {
  return "http://127.0.0.1:" + std::to_string(c.port()) + "/ingest";
}

std::vector<std::string> Forward(const fs::path& spool, const std::string& url,
                                 std::vector<std::string> extra) {
  std::vector<std::string> args = {"forward", "--spool", spool.string(),
                                   "--url",   url,       "--log-json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Rows "{"k":"<tag>-<i>"}", n of them.
std::vector<std::string> Rows(const std::string& tag, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("{\"k\":\"" + tag + "-" + std::to_string(i) + "\"}");
  return out;
}

std::string BigRow(std::size_t bytes, char fill) {
  std::string row = "{\"big\":\"";
  row.append(bytes - row.size() - 2, fill);
  return row + "\"}";
}

void Append(const fs::path& path, const std::vector<std::string>& rows) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  for (const std::string& r : rows) out << r << '\n';
}

std::vector<fwdsink::DeadEntry> DeadLetters(const fs::path& spool) {
  auto s = fwdsink::Spool::Open(spool);
  REQUIRE(s.ok());
  fwdsink::DeadFilter all;
  all.limit = 0;
  auto list = s->ListDead(all, std::chrono::system_clock::now());
  REQUIRE(list.ok());
  return list->entries;
}

}  // namespace

// Issue 25 item 2: one row over the line limit used to dead-letter every later row of
// its partition (kind horizon), and a requeue did the same again.
TEST_CASE("A row over the line limit goes to dead/ alone; the rows after it are sent") {
  const fs::path dir = CentralProcess::ScratchDir("long_row");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  const std::vector<std::string> before = Rows("before", 10);
  const std::vector<std::string> after = Rows("after", 1000);
  const std::string long_row = BigRow(kLongRow, 'L');
  // Twin: a 100 KiB row under the limit is sent like any other.
  const std::string wide_row = BigRow(100 << 10, 'w');
  const fs::path part = spool / "ready" / "p.ndjson";
  Append(part, before);
  Append(part, {long_row});
  Append(part, after);
  Append(part, {wide_row});

  SUBCASE("a partition") {
    DaemonProcess run(dir, "once", Forward(spool, Url(central), {"--once"}));
    REQUIRE(run.started());
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(kExitDataErr));  // a row went to dead/
    const std::vector<std::string> got = central.received_rows();
    CHECK(got.size() == before.size() + after.size() + 1);
    const std::set<std::string> got_set(got.begin(), got.end());
    CHECK(got_set.count(after.back()) == 1);
    CHECK(got_set.count(wide_row) == 1);
    CHECK(got_set.count(long_row) == 0);
    const auto dead = DeadLetters(spool);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].reason == "row_too_long");
    CHECK(dead[0].rows == 1);
    CHECK(dead[0].end - dead[0].begin == long_row.size() + 1);
    CHECK(ReadFile(dead[0].rows_path) == long_row + "\n");
    CHECK(fs::is_empty(spool / "ready"));
    CHECK(Has(run.err(), "\"reason\":\"row_too_long\""));
  }
  SUBCASE("a requeued dead letter that holds one (written whole, as before the fix)") {
    auto s = fwdsink::Spool::Open(spool);
    REQUIRE(s.ok());
    auto old = s->DeadLetterPartition("p", 0, "line_too_long", 0, std::chrono::system_clock::now());
    REQUIRE(old.ok());
    DaemonProcess requeue(dir, "requeue",
                          {"dead", "requeue", "--spool", spool.string(), old->name});
    REQUIRE(requeue.Wait(kRunTimeout) == std::optional<int>(0));
    DaemonProcess run(dir, "after_requeue", Forward(spool, Url(central), {"--once"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(kExitDataErr));
    CHECK(central.received_rows().size() == before.size() + after.size() + 1);
    const auto dead = DeadLetters(spool);
    REQUIRE(dead.size() == 2);  // the old whole one (an audit record) and the row alone
    int alone = 0;
    for (const auto& d : dead) alone += d.reason == "row_too_long" && d.rows == 1 ? 1 : 0;
    CHECK(alone == 1);
    CHECK(fs::is_empty(spool / "ready"));
  }
}
