// SPDX-License-Identifier: Apache-2.0
// What the daemon moves to dead/, against the reference receiver on 127.0.0.1: a 400 for
// the request (not the data) is not poison and dead-letters nothing, while one malformed
// row among good ones still goes alone; the torn tail of a partition goes, with its event,
// once the whole lines before it are sent. @ref LLP 0023#request-level-refusals
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/spool_stats.h"
#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Entries;
using fwdsink::test::Event;
using fwdsink::test::EventCount;
using fwdsink::test::Forward;
using fwdsink::test::MakeSpool;
using fwdsink::test::Once;
using fwdsink::test::WriteFile;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;
constexpr auto kWait = 20s;  // a --once pass, or any condition polled for

// The rows of every dead letter in SPOOL/dead, the files in name order.
std::vector<std::string> DeadRows(const fs::path& spool) {
  return fwdsink::test::DeadRows(spool / "dead");
}

}  // namespace

// A 400 for the request (not the data) stops the bisection at the first well-formed row:
// respool with an error event, nothing dead-lettered.
TEST_CASE("ARequestLevel400IsNotPoisonAndDeadLettersNothing") {
  const fs::path dir = CentralProcess::ScratchDir("dead_letters_400");
  CentralProcess central(dir / "central");
  const fs::path spool = MakeSpool(dir);
  SUBCASE("every request refused") {
    REQUIRE(central.Start(
        {"--fail-status", "400", "--fail-every", "1", "--fail-reason", "bad_header"}));
    WriteRows(spool / "ready" / "p.ndjson", 300);
    DaemonProcess run(dir, "refused", Forward(spool, Url(central), {"--once"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(75));
    CHECK(Entries(spool / "dead") == 0);
    CHECK(Entries(spool / "ready") == 1);
    CHECK(central.request_log().size() <= 12);  // log2(300) + 2, not ~2,000
    const std::string err = run.err();
    CHECK(EventCount(err, "forward.request_refused") == 1);
    CHECK(err.find("HTTP 400 (bad_header)") != std::string::npos);
  }
  SUBCASE("twin: one malformed row among good ones is still poison, alone") {
    REQUIRE(central.Start());
    auto lines = WriteRows(spool / "ready" / "p.ndjson", 20);
    lines[7] = "{\"i\":7,";  // not JSON
    fwdsink::test::WriteLines(spool / "ready" / "p.ndjson", lines);
    DaemonProcess run(dir, "poison", Forward(spool, Url(central), {"--once"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(65));
    CHECK(central.received_rows().size() == 19);
    CHECK(Entries(spool / "dead") == 2);  // one dead letter: rows + record
  }
}

// README: The producer contract, 4: a torn tail goes to dead/ with its event.
TEST_CASE("forward --once sends the whole lines of a torn partition and dead-letters its tail") {
  const fs::path dir = CentralProcess::ScratchDir("dead_letters_torn");
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const std::string whole = "{\"i\":0}\n{\"i\":1}\n{\"i\":2}\n";
  std::string log;

  SUBCASE("torn: 65, the tail in dead/, named by the event and by `fwdsink dead list`") {
    WriteFile(spool / "ready" / "20260101T000000.000Z-1-00000001.ndjson", whole + "{\"i\":3");
    CHECK(Once(dir, "torn", spool, Url(central), {}, &log) == 65);
    CHECK(central.received_rows() ==
          std::vector<std::string>{"{\"i\":0}", "{\"i\":1}", "{\"i\":2}"});
    CHECK(Count(log, Event("driver.dead_letter")) == 1);
    CHECK(log.find("\"partition\":\"20260101T000000.000Z-1-00000001\"") != std::string::npos);
    CHECK(DeadRows(spool).back() == "{\"i\":3");
    DaemonProcess list(dir, "list", {"dead", "list", "--spool", spool.string()});
    REQUIRE(list.Wait(kWait) == std::optional<int>(0));
    CHECK(list.out().find("20260101T000000.000Z-1-00000001") != std::string::npos);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 0);
  }
  SUBCASE("twin: the same rows ending in a newline: 0, nothing dead") {
    WriteFile(spool / "ready" / "20260101T000000.000Z-1-00000001.ndjson", whole + "{\"i\":3}\n");
    CHECK(Once(dir, "whole", spool, Url(central), {}, &log) == 0);
    CHECK(central.received_rows().size() == 4);
    CHECK(Count(log, Event("driver.dead_letter")) == 0);
    CHECK(fwdsink::MeasureSpool(spool)->dead_letters == 0);
  }
}
