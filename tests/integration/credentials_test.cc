// SPDX-License-Identifier: Apache-2.0
// The daemon's credentials, as a process on 127.0.0.1: a token with CR or LF is a
// configuration error naming its source, and nothing is sent; a token refused again after
// its refresh ends `--once` with 77; credentials from --basic-auth-file or user:pw@host
// never reach a log line. Each with its twin. @ref LLP 0023#header-safety
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
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
#include "support/scripted_server.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Entries;
using fwdsink::test::Event;
using fwdsink::test::Forward;
using fwdsink::test::MakeSpool;
using fwdsink::test::Once;
using fwdsink::test::ReadFile;
using fwdsink::test::SealRows;
using fwdsink::test::WriteFile;
using fwdsink::test::WriteRows;
using fwdsink_test::ScriptedServer;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t(std::uint8_t(in[i])) << 16) |
                            (i + 1 < in.size() ? std::uint32_t(std::uint8_t(in[i + 1])) << 8 : 0) |
                            (i + 2 < in.size() ? std::uint32_t(std::uint8_t(in[i + 2])) : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// A port nothing listens on: bound without listen(), read, then closed.
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

// A token with CR/LF is a configuration error naming its source, never sent.
TEST_CASE("ATokenWithCrLfIsAConfigurationErrorAndNothingIsSent") {
  const fs::path dir = CentralProcess::ScratchDir("credentials_token");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--token", "good"}));
  const fs::path spool = MakeSpool(dir);
  WriteRows(spool / "ready" / "p.ndjson", 5);
  SUBCASE("injected header") {
    REQUIRE(fwdsink::test::WriteFile(dir / "token", "good\r\nX-Injected: 1\nHost: evil\n"));
    DaemonProcess run(
        dir, "bad",
        Forward(spool, Url(central), {"--once", "--token-file", (dir / "token").string()}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(64));
    CHECK(run.err().find("--token-file") != std::string::npos);
    CHECK(run.err().find("X-Injected") == std::string::npos);  // the value is never echoed
    CHECK(central.request_log().empty());
    CHECK(Entries(spool / "ready") == 1);
  }
  SUBCASE("twin: a clean token with a trailing newline is sent") {
    REQUIRE(fwdsink::test::WriteFile(dir / "token", "good\n"));
    DaemonProcess run(
        dir, "good",
        Forward(spool, Url(central), {"--once", "--token-file", (dir / "token").string()}));
    CHECK(run.Wait(kRunTimeout) == std::optional<int>(0));
    CHECK(central.received_rows().size() == 5);
  }
}

// README: "--once ... 77 token refused": a 401 again after the token was re-read.
TEST_CASE("forward --once exits 77 when the token is refused after the refresh") {
  const fs::path dir = CentralProcess::ScratchDir("credentials_refused");
  const fs::path spool = dir / "spool";
  SealRows(spool, 3, 1);
  WriteFile(dir / "token", "tok-1\n");
  ScriptedServer server;
  server.Then(401);
  std::string log;

  SUBCASE("401, refreshed, 401 again: 77") {
    server.Then(401);
    CHECK(Once(dir, "refused", spool, server.url(), {"--token-file", (dir / "token").string()},
               &log) == 77);
    CHECK(Count(log, Event("forward.auth_failed")) >= 1);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 1);  // nothing lost
  }
  SUBCASE("twin: 401, refreshed, accepted: 0") {
    server.Then(200);
    CHECK(Once(dir, "refreshed", spool, server.url(), {"--token-file", (dir / "token").string()},
               &log) == 0);
    CHECK(Count(log, Event("forward.auth_failed")) == 0);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 0);
  }
  // Both runs: exactly one refresh, the same chunk under the token read from the file.
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].authorization == "Bearer tok-1");
  CHECK(reqs[1].authorization == "Bearer tok-1");
  CHECK(reqs[0].key == reqs[1].key);
}

// README: "--basic-auth-file F or http://user:pw@host/ (never logged)": the daemon's
// whole log — stderr, stdout and --log-file, at debug level — is scanned.
TEST_CASE("credentials from --basic-auth-file or user:pw@host never reach a log line") {
  const fs::path dir = CentralProcess::ScratchDir("credentials_never_logged");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // Every other POST refused: backpressure events with keys, statuses and reasons (no
  // Retry-After: the 50 ms ladder waits, and --pacing off, keep the run short).
  REQUIRE(central.Start({"--fail-every", "2", "--fail-status", "503", "--no-retry-after"}));
  for (int p = 0; p < 3; ++p) SealRows(spool, 20, p);
  const std::string dead_port = std::to_string(ClosedPort());
  const std::string live_port = std::to_string(central.port());
  const fs::path log_file = dir / "daemon.log";
  std::vector<std::string> args = {"--log-file",
                                   log_file.string(),
                                   "--ladder",
                                   "0.05",
                                   "--jitter",
                                   "0",
                                   "--chunk-bytes",
                                   "200",
                                   "--failover-failures",
                                   "1",
                                   "--concurrency",
                                   "1",
                                   "--pacing",
                                   "off"};
  std::vector<std::string> secrets;
  std::string url;

  SUBCASE("--basic-auth-file") {
    WriteFile(dir / "basic", "alice:b4sic-s3cret\n");
    args.insert(args.end(), {"--basic-auth-file", (dir / "basic").string(), "--url",
                             "http://127.0.0.1:" + live_port + "/ingest"});
    url = "http://127.0.0.1:" + dead_port + "/ingest";
    secrets = {"b4sic-s3cret", Base64("alice:b4sic-s3cret")};
  }
  SUBCASE("user:pw@host, on the primary and on the fallback") {
    args.insert(args.end(),
                {"--url", "http://carol:url-s3cret@127.0.0.1:" + live_port + "/ingest"});
    url = "http://carol:url-s3cret@127.0.0.1:" + dead_port + "/ingest";
    secrets = {"url-s3cret", Base64("carol:url-s3cret")};
  }
  std::string log;
  // The first --url (Once's) is the dead port: the transport errors and the failover
  // to the live fallback are logged too.
  const int code = Once(dir, "secrets", spool, url, args, &log);
  CHECK(code == 0);
  log += ReadFile(log_file);
  REQUIRE(central.received_rows().size() == 60);
  REQUIRE(Count(log, Event("forward.backpressure")) >= 1);
  REQUIRE(Count(log, "\n") >= 20);
  for (const auto& secret : secrets) {
    CAPTURE(secret);
    CHECK(log.find(secret) == std::string::npos);
  }
  // Twin: the log does name the endpoints, so the scan looked where a secret would be.
  CHECK(log.find("127.0.0.1:" + dead_port) != std::string::npos);
  CHECK(log.find("127.0.0.1:" + live_port) != std::string::npos);
}
