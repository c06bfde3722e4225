// SPDX-License-Identifier: Apache-2.0
// Failover end to end: the daemon with two --url, the primary fwdsink-central stopped
// mid-run and restarted; every row arrives, and the rows stored at both are bounded by
// the chunks in flight at each switch. @ref LLP 0019
#include <doctest/doctest.h>

#include <thread>

#include "support/it_support.h"
#include "support/two_receivers.h"

namespace fwdsink::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Each request waits this long for its response headers: the run lasts a few seconds.
const std::vector<std::string> kSlow = {"--header-delay-ms", "8", "--header-delay-every", "1"};

std::string Url(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/ingest"; }

TEST_CASE("failover: primary stopped mid-run, fallback takes over, primary taken back") {
  const fs::path dir = CentralProcess::ScratchDir("failover_daemon");
  CentralProcess primary(dir / "primary");
  CentralProcess fallback(dir / "fallback");
  REQUIRE(primary.Start(kSlow));
  REQUIRE(fallback.Start(kSlow));
  const int primary_port = primary.port();
  const fs::path spool = dir / "spool";
  const std::uint64_t rows = GenerateSpool(dir, spool, "4m", "6");
  REQUIRE(rows > 10000);

  DaemonProcess daemon(
      dir, "daemon",
      {"forward", "--spool", spool.string(), "--url", Url(primary_port), "--url",
       Url(fallback.port()), "--chunk-bytes", "16k", "--ladder", "0.1", "--jitter", "0", "--poll",
       "0.1", "--failover-after", "1", "--failback-after", "1", "--connect-timeout", "1",
       "--read-timeout", "2", "--log-json", "--stats-interval", "0.5",
       // One sender, so that a switch has one chunk in flight (the
       // bound below); several senders: failover_sink_test, lb test.
       "--concurrency", "1"});
  REQUIRE(daemon.started());

  // Stop the primary once it holds a fifth of the rows.
  REQUIRE(WaitFor([&] { return primary.received_rows().size() > rows / 5; }, seconds(30)));
  REQUIRE(primary.Stop().has_value());
  const std::size_t at_stop = primary.received_rows().size();
  // The fallback takes over.
  REQUIRE(WaitFor([&] { return fallback.received_rows().size() > rows / 5; }, seconds(30)));
  // Restart the primary on its port: it is probed and taken back.
  REQUIRE(primary.Start([&] {
    auto args = kSlow;
    args.insert(args.end(), {"--listen", "127.0.0.1:" + std::to_string(primary_port)});
    return args;
  }()));
  REQUIRE(primary.port() == primary_port);
  REQUIRE(WaitFor([&] { return ReadyLeft(spool) == 0; }, seconds(60)));
  daemon.Signal(SIGTERM);
  REQUIRE(daemon.Wait(seconds(10)) == 0);

  const AcrossTwo across = Across(primary, fallback);
  const nlohmann::json exit = ExitLine(daemon.err());
  REQUIRE(exit.is_object());
  const auto& c = exit["counters"];
  const std::uint64_t switches = c["failovers"].get<std::uint64_t>() +
                                 c["failbacks"].get<std::uint64_t>() +
                                 c["probe_failures"].get<std::uint64_t>();
  MESSAGE("rows " << rows << ": primary " << across.rows_a << " (" << at_stop
                  << " before the stop), fallback " << across.rows_b << "; rows at both "
                  << across.rows_at_both << ", chunks at both " << across.chunks_at_both
                  << "; failovers " << c["failovers"] << ", failbacks " << c["failbacks"]
                  << ", probes " << c["probes"] << " (" << c["probe_failures"] << " failed)");
  CHECK(across.distinct_rows == rows);    // every row arrived
  CHECK(c["failovers"].get<int>() >= 1);  // the fallback took over
  CHECK(c["failbacks"].get<int>() >= 1);  // and the primary was taken back
  CHECK(across.rows_a > at_stop);         // it stored rows again after the restart
  CHECK(across.rows_b > 0);
  // One sender: at most one chunk in flight at each switch.
  CHECK(across.chunks_at_both <= switches);
  CHECK(CountEvents(daemon.err(), "forward.failover") == c["failovers"].get<int>());
  CHECK(CountEvents(daemon.err(), "forward.failback") == c["failbacks"].get<int>());
  // The stats name the endpoint in use and each endpoint's counters.
  CHECK(exit["endpoint"] == Url(primary_port));
  REQUIRE(exit["endpoints"].size() == 2);
  CHECK(exit["endpoints"][1]["chunks_acked"].get<int>() > 0);
}

TEST_CASE("failover twin: a healthy primary is never left") {
  const fs::path dir = CentralProcess::ScratchDir("failover_twin");
  CentralProcess primary(dir / "primary");
  CentralProcess fallback(dir / "fallback");
  REQUIRE(primary.Start());
  REQUIRE(fallback.Start());
  const fs::path spool = dir / "spool";
  const std::uint64_t rows = GenerateSpool(dir, spool, "1m", "3");
  DaemonProcess daemon(
      dir, "daemon",
      {"forward", "--spool", spool.string(), "--once", "--url", Url(primary.port()), "--url",
       Url(fallback.port()), "--chunk-bytes", "16k", "--failback-after", "0.1", "--log-json"});
  REQUIRE(daemon.Wait(seconds(60)) == 0);
  const nlohmann::json exit = ExitLine(daemon.err());
  CHECK(exit["counters"]["failovers"] == 0);
  CHECK(exit["counters"]["probes"] == 0);
  CHECK(Seqs(primary.received_rows()).size() == rows);
  CHECK(fallback.received_rows().empty());
}

TEST_CASE("the failover flags: a bad value exits 64 naming the flag") {
  const fs::path dir = CentralProcess::ScratchDir("failover_flags");
  const std::vector<std::string> base = {"forward", "--spool", (dir / "spool").string(),
                                         "--once",  "--url",   "http://127.0.0.1:9/a"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--url", "ftp://x/"}, "--url"},
      {{"--url", "http://127.0.0.1:9/a"}, "--url"},  // the same URL twice
      {{"--failover-after", "0"}, "--failover-after"},
      {{"--failback-after", "x"}, "--failback-after"},
      {{"--failover-failures", "0"}, "--failover-failures"},
  };
  int i = 0;
  for (const auto& [extra, flag] : cases) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    DaemonProcess d(dir, "flags" + std::to_string(i++), args);
    CAPTURE(flag);
    CHECK(d.Wait(seconds(10)) == 64);
    CHECK(d.err().find(flag) != std::string::npos);
  }
}

}  // namespace
}  // namespace fwdsink::test
