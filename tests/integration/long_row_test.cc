// SPDX-License-Identifier: Apache-2.0
// A row longer than the line limit, against the real daemon and the reference receiver
// on 127.0.0.1: it goes to dead/ alone, with its event, and the rows after it are sent,
// in a partition and in a requeued dead letter that holds one, and nothing is lost; the
// twins, a 100 KiB row under the limit and a limit raised by --chunk-bytes, are sent like
// any other. @ref LLP 0023#row-too-long
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::DeadLetters;
using fwdsink::test::Event;
using fwdsink::test::Forward;
using fwdsink::test::Has;
using fwdsink::test::MakeSpool;
using fwdsink::test::Once;
using fwdsink::test::ReadFile;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 60s;
constexpr int kExitDataErr = 65;
constexpr std::size_t kLongRow = (17u << 20);  // over the 16 MiB default line limit

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

// The rows of every dead letter in SPOOL/dead, the files in name order.
std::vector<std::string> DeadRows(const fs::path& spool) {
  return fwdsink::test::DeadRows(spool / "dead");
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

// README: The producer contract, 3: a row longer than the line limit (16 MiB, or the
// chunk size if larger) is moved to dead/. What is checked holds whether the rows after
// it go with it or are sent: none is lost, the long row is in dead/, the event is said.
TEST_CASE("a row over the line limit goes to dead/ with its event and nothing is lost") {
  const fs::path dir = CentralProcess::ScratchDir("long_row_limit");
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  constexpr std::size_t kLimit = std::size_t{16} << 20;
  // {"long":"xxx..."}: one byte over the limit with its newline.
  const std::string long_row = "{\"long\":\"" + std::string(kLimit - 11, 'x') + "\"}";
  REQUIRE(long_row.size() == kLimit);
  const std::vector<std::string> before = {"{\"i\":0}", "{\"i\":1}"};
  const std::vector<std::string> after = {"{\"i\":2}", "{\"i\":3}"};
  {
    std::ofstream out(spool / "ready" / "20260101T000000.000Z-1-00000001.ndjson", std::ios::binary);
    for (const auto& r : before) out << r << '\n';
    out << long_row << '\n';
    for (const auto& r : after) out << r << '\n';
  }
  std::string log;
  const std::vector<std::string> plain = {"--compression", "identity"};  // 16 MiB: be quick

  SUBCASE("over the limit: 65, in dead/, the rows before it sent, none lost") {
    CHECK(Once(dir, "long", spool, Url(central), plain, &log) == 65);
    CHECK(Count(log, Event("driver.dead_letter")) >= 1);
    const auto received = central.received_rows();
    const auto dead = DeadRows(spool);
    CHECK(std::count(dead.begin(), dead.end(), long_row) == 1);
    CHECK(std::count(received.begin(), received.end(), long_row) == 0);
    for (const auto& r : before) CHECK(std::count(received.begin(), received.end(), r) == 1);
    for (const auto& r : after) {
      CAPTURE(r);
      CHECK(std::count(received.begin(), received.end(), r) +
                std::count(dead.begin(), dead.end(), r) >=
            1);
    }
  }
  SUBCASE("twin: --chunk-bytes 32m raises the limit, and the same row is sent") {
    CHECK(Once(dir, "long_ok", spool, Url(central),
               {"--chunk-bytes", "32m", "--compression", "identity"}, &log) == 0);
    CHECK(Count(log, Event("driver.dead_letter")) == 0);
    const auto received = central.received_rows();
    CHECK(received.size() == 5);
    CHECK(std::count(received.begin(), received.end(), long_row) == 1);
    CHECK(fwdsink::MeasureSpool(spool)->dead_letters == 0);
  }
}
