// SPDX-License-Identifier: Apache-2.0
// The daemon's credentials, as a process on 127.0.0.1: a token with CR or LF is a
// configuration error naming its source, and nothing is sent; the twin, a clean token
// with a trailing newline, is. @ref LLP 0023#header-safety
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;

// A spool with its folders, under a fresh scratch dir.
fs::path MakeSpool(const fs::path& dir) {
  const fs::path spool = dir / "spool";
  for (const char* sub : {"ready", "state", "dead", "incoming"})
    fs::create_directories(spool / sub);
  return spool;
}

std::vector<std::string> Forward(const fs::path& spool, const std::string& url,
                                 std::vector<std::string> extra) {
  std::vector<std::string> args = {"forward", "--spool", spool.string(),
                                   "--url",   url,       "--log-json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string Url(const CentralProcess& c) {
  return "http://127.0.0.1:" + std::to_string(c.port()) + "/ingest";
}

std::size_t Entries(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return 0;
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
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
