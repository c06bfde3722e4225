// SPDX-License-Identifier: Apache-2.0
// What the daemon moves to dead/, against the reference receiver on 127.0.0.1: a 400 for
// the request (not the data) is not poison and dead-letters nothing, while one malformed
// row among good ones still goes alone. @ref LLP 0023#request-level-refusals
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"

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

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::size_t EventCount(const std::string& log, const std::string& event) {
  return Count(log, "\"event\":\"" + event + "\"");
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
