// SPDX-License-Identifier: Apache-2.0
// Request deadlines, against the real daemon on real sockets: a server that drips its
// response headers or reads the body at a crawl cannot hold a sender past the deadline,
// and the abandoned attempt closes its connection; the twin, a slow but honest server, is
// not cut off. Small real waits only; no timing is asserted beyond "did not hang".
// @ref LLP 0023#deadlines
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/hostile_server.h"
#include "support/it_support.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::EventCount;
using fwdsink::test::Forward;
using fwdsink::test::HostileServer;
using fwdsink::test::MakeSpool;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;

}  // namespace

// A server that drips its headers, or reads the body at a crawl, must not hold the
// sender past the request deadline; the abandoned attempt closes its connection.
TEST_CASE("DeadlinesCutADrippingOrCrawlingServerOffAndCloseTheConnection") {
  const fs::path dir = CentralProcess::ScratchDir("deadlines");
  SUBCASE("headers dripped one byte every 400 ms: --once gives up within the budget") {
    HostileServer drip(HostileServer::Mode::kDripHeaders, 400ms);
    const fs::path spool = MakeSpool(dir);
    WriteRows(spool / "ready" / "p.ndjson", 20);
    const auto t0 = std::chrono::steady_clock::now();
    DaemonProcess run(dir, "drip",
                      Forward(spool, drip.url(),
                              {"--once", "--read-timeout", "1", "--inline-budget", "1.5",
                               "--ladder", "0.2", "--max-wait", "0.5"}));
    REQUIRE(run.started());
    const auto code = run.Wait(8s);  // it used to hang for as long as the drip lasted
    CHECK(code == std::optional<int>(75));
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(run.err().find("response headers not received within the deadline") != std::string::npos);
  }
  SUBCASE("a body read at 20 KB/s: the attempt is cut off and its connection closed") {
    HostileServer crawl(HostileServer::Mode::kSlowRead, 50ms, 1024);
    const fs::path spool = MakeSpool(dir);
    WriteRows(spool / "ready" / "big.ndjson", 40'000, 100);  // 4 MB, one chunk
    DaemonProcess run(
        dir, "crawl",
        Forward(spool, crawl.url(),
                {"--compression", "identity", "--chunk-bytes", "4m", "--read-timeout", "1",
                 "--inline-budget", "1.5", "--ladder", "0.2", "--max-wait", "0.5", "--poll", "5"}));
    REQUIRE(run.started());
    // Still running (run mode, pausing after the respool): the socket must be closed by
    // the daemon itself, not by its exit.
    REQUIRE(WaitFor([&] { return EventCount(run.err(), "forward.respool") >= 1; }, 6s));
    CHECK(WaitFor([&] { return crawl.closed_by_client() >= crawl.connections(); }, 1s));
    CHECK(crawl.connections() == 1);
    const auto received = crawl.bytes_received();
    std::this_thread::sleep_for(300ms);
    CHECK(crawl.bytes_received() == received);  // nothing keeps draining
    CHECK(received < (1u << 20));               // far less than one copy of the chunk
    run.Signal(SIGTERM);
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
  }
  SUBCASE("twin: a slow but honest server (headers after 400 ms) is not cut off") {
    CentralProcess central(dir / "central");
    REQUIRE(central.Start({"--header-delay-ms", "400"}));
    const fs::path spool = MakeSpool(dir);
    WriteRows(spool / "ready" / "p.ndjson", 20);
    DaemonProcess run(
        dir, "honest",
        Forward(spool, Url(central),
                {"--once", "--inline-budget", "1.5", "--ladder", "0.2", "--max-wait", "0.5"}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
    CHECK(central.received_rows().size() == 20);
  }
}
