// SPDX-License-Identifier: Apache-2.0
// A partition that shrinks while the daemon sends it breaks the producer contract: cut
// to 0 or inside a row, it is quarantined with the bytes really acknowledged, never
// "delivered" and never a torn row in dead/; the twin, left alone, is delivered. Real
// daemon, real receiver on 127.0.0.1. @ref LLP 0023#shrunk
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::DeadLetters;
using fwdsink::test::Forward;
using fwdsink::test::Has;
using fwdsink::test::MakeSpool;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 60s;
constexpr int kExitDataErr = 65;

}  // namespace

// Issue 25, a smaller finding: a partition cut while it is sent is a contract violation.
// Truncated to 0 it used to be "delivered" (with "1980000 bytes sent, 0 now"); cut to a
// third, a torn row. Now: quarantined, with the bytes really acknowledged.
TEST_CASE("A partition that shrinks while it is sent is quarantined with the true counts") {
  constexpr int kRows = 4000;
  constexpr std::size_t kLine = 50;
  for (const bool to_zero : {true, false}) {
    CAPTURE(to_zero);
    const fs::path dir = CentralProcess::ScratchDir(to_zero ? "shrunk0" : "shrunk3");
    CentralProcess central(dir / "central");
    // Every answer 150 ms late: 13 chunks of 16 KiB take about 2 s.
    REQUIRE(central.Start({"--header-delay-ms", "150", "--header-delay-every", "1"}));
    const fs::path spool = MakeSpool(dir);
    const fs::path part = spool / "ready" / "p.ndjson";
    WriteRows(part, kRows, kLine);
    DaemonProcess run(dir, "once",
                      Forward(spool, Url(central),
                              {"--once", "--chunk-bytes", "16k", "--compression", "identity"}));
    REQUIRE(run.started());
    // Mid-send: a few chunks in, then cut (at 0, or inside a row a third of the way).
    REQUIRE(WaitFor([&] { return central.received_rows().size() >= 800; }, 20s));
    fs::resize_file(part, to_zero ? 0 : kRows * kLine / 3 + 7);
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(kExitDataErr));
    const std::string err = run.err();
    const std::size_t acked = central.received_rows().size() * kLine;
    CHECK(Has(err, "\"reason\":\"shrunk\""));
    CHECK(Has(err, "partition shrank while being sent: " + std::to_string(kRows * kLine) +
                       " bytes at hand-over, " + std::to_string(acked) + " sent and acknowledged"));
    CHECK_FALSE(Has(err, "\"event\":\"forward.delivered\""));
    CHECK(DeadLetters(spool).empty());  // not a torn row
    CHECK(fs::exists(spool / "quarantine" / "p.ndjson"));
  }
}

TEST_CASE("twin: a partition left alone while sent is delivered") {
  const fs::path dir = CentralProcess::ScratchDir("shrunk_twin");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  WriteRows(spool / "ready" / "p.ndjson", 4000);
  DaemonProcess run(dir, "once", Forward(spool, Url(central), {"--once", "--chunk-bytes", "16k"}));
  CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
  CHECK(central.received_rows().size() == 4000);
  CHECK_FALSE(Has(run.err(), "\"reason\":\"shrunk\""));
}
