// SPDX-License-Identifier: Apache-2.0
// The daemon as an operator runs it (issue 11): settings from a --config file, FWDSINK_*
// variables and flags with their precedence and their errors, --print-config with
// secrets redacted, --log-level, SIGHUP under load, and the start-up messages (a byte
// count out of range, a taken metrics port, unknown FWDSINK_* variables). Real processes
// on 127.0.0.1.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fwdsink/settings.h"
#include "support/central_process.h"
#include "support/daemon_log.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::CountReady;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Forward;
using fwdsink::test::Has;
using fwdsink::test::MakeSpool;
using fwdsink::test::ReadFile;
using fwdsink::test::ReadLines;
using fwdsink::test::WriteFile;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 20s;
constexpr auto kPoll = 5ms;
constexpr int kExitOk = 0, kExitUsage = 64, kExitTempFail = 75;

struct Run {
  int code = -1;
  std::string out, err;
};

Run RunDaemon(const fs::path& dir, std::vector<std::string> args,
              std::vector<std::string> env = {}) {
  DaemonProcess d(dir, "daemon", std::move(args), std::move(env));
  Run r;
  r.code = d.Wait(kRunTimeout).value_or(-1);
  r.out = d.out();
  r.err = d.err();
  return r;
}

std::uint64_t Generate(const fs::path& dir, const fs::path& spool, const std::string& bytes,
                       const std::string& partitions) {
  const Run r = RunDaemon(dir, {"generate", "--spool", spool.string(), "--bytes", bytes,
                                "--partitions", partitions, "--seed", "5"});
  REQUIRE(r.code == kExitOk);
  return std::stoull(r.out);
}

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(nlohmann::json::parse(text.substr(start, end - start), nullptr, false));
    start = end + 1;
  }
  return lines;
}

// Waits (bounded) until `pred` holds, looking every kPoll.
template <class Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout = kRunTimeout) {
  return fwdsink::test::WaitFor(pred, timeout, kPoll);
}

}  // namespace

TEST_CASE("settings from the file, the environment and flags: flags > environment > file") {
  const fs::path dir = CentralProcess::ScratchDir("settings_precedence");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const auto rows = Generate(dir, spool, "100k", "2");
  // The file names a closed port; a short budget makes that a quick 75.
  const fs::path file = dir / "fwdsink.toml";
  WriteFile(file, "# fwdsink\nspool = \"" + spool.string() +
                      "\"\nurl = \"http://127.0.0.1:1/ingest\"\n"
                      "chunk_bytes = \"16k\"\nladder = [0.1]\ninline_budget = \"0.3\"\n"
                      "once = true\n");
  SUBCASE("the variable's URL beats the file's; the flag's label beats the variable's") {
    const Run r = RunDaemon(
        dir, {"forward", "--config", file.string(), "--label", "flag-label", "--log-json"},
        {"FWDSINK_URL=" + Url(central), "FWDSINK_LABEL=env-label"});
    CHECK(r.code == kExitOk);
    CHECK(central.received_rows().size() == rows);
    CHECK(Contains(r.err, "\"label\":\"flag-label\""));
    CHECK_FALSE(Contains(r.err, "env-label"));
  }
  SUBCASE("twin: without the variable the file's URL is used (nothing listens there)") {
    const Run r = RunDaemon(dir, {"forward", "--config", file.string(), "--log-json"});
    CHECK(r.code == kExitTempFail);
    CHECK(central.received_rows().empty());
  }
  SUBCASE("FWDSINK_CONFIG names the file when --config does not") {
    const Run r =
        RunDaemon(dir, {"forward", "--print-config"}, {"FWDSINK_CONFIG=" + file.string()});
    CHECK(r.code == kExitOk);
    CHECK(Contains(r.out, "# file " + file.string() + ":4"));
  }
}

TEST_CASE("a bad setting exits 64 naming its source and key: file line, variable, flag") {
  const fs::path dir = CentralProcess::ScratchDir("settings_errors");
  const fs::path file = dir / "fwdsink.toml";
  WriteFile(file, "spool = \"" + (dir / "spool").string() +
                      "\"\nurl = \"http://127.0.0.1:1/\"\nzstd_level = \"high\"\n");
  Run r = RunDaemon(dir, {"forward", "--config", file.string()});
  CHECK(r.code == kExitUsage);
  CHECK(Contains(r.err, "fwdsink: " + file.string() + ":3: zstd_level: 'high'"));

  WriteFile(file, "spool = \"" + (dir / "spool").string() +
                      "\"\nurl = \"http://h/\"\n"
                      "poll_interval = 5\n");
  r = RunDaemon(dir, {"forward", "--config", file.string()});
  CHECK(r.code == kExitUsage);
  CHECK(Contains(r.err, file.string() + ":3: unknown key 'poll_interval'"));

  const std::vector<std::string> base = {
      "forward", "--spool", (dir / "spool").string(), "--url", "http://127.0.0.1:1/", "--once"};
  r = RunDaemon(dir, base, {"FWDSINK_INLINE_BUDGET=soon"});
  CHECK(r.code == kExitUsage);
  CHECK(Contains(r.err, "fwdsink: FWDSINK_INLINE_BUDGET: inline_budget: 'soon'"));

  std::vector<std::string> args = base;
  args.insert(args.end(), {"--jitter", "lots"});
  r = RunDaemon(dir, args);
  CHECK(r.code == kExitUsage);
  CHECK(Contains(r.err, "fwdsink: --jitter: 'lots' is not a number"));

  SUBCASE("a value that Validate() refuses names the source of the key") {
    r = RunDaemon(dir, base, {"FWDSINK_LADDER=10", "FWDSINK_INLINE_BUDGET=1"});
    CHECK(r.code == kExitUsage);
    CHECK(Contains(r.err, "FWDSINK_INLINE_BUDGET: inline_budget: "));
  }
  SUBCASE("twin: an unknown FWDSINK_ variable is a warning, not an error") {
    Generate(dir, dir / "spool", "1k", "1");
    fs::remove_all(dir / "spool" / "ready");
    fs::create_directories(dir / "spool" / "ready");
    r = RunDaemon(dir, base, {"FWDSINK_POLL_INTERVAL=5"});
    CHECK(r.code == kExitOk);  // nothing to send
    CHECK(Contains(r.err, "warning: FWDSINK_POLL_INTERVAL is not a setting (ignored)"));
  }
}

TEST_CASE("--print-config: every key with its value and source, secrets redacted") {
  const fs::path dir = CentralProcess::ScratchDir("settings_print");
  const Run r = RunDaemon(dir,
                          {"forward", "--print-config", "--spool", (dir / "s").string(), "--url",
                           "http://alice:pw-s3cr3t@127.0.0.1:1/ingest", "--header",
                           "X-Api-Key: hdr-s3cr3t", "--label", "edge-7"},
                          {"FWDSINK_PROXY=http://p:px-s3cr3t@proxy:3128", "FWDSINK_NOPE=1"});
  CHECK(r.code == kExitOk);
  CHECK_FALSE(Contains(r.out, "s3cr3t"));
  CHECK(Contains(r.out, "header = \"X-Api-Key: <redacted>\""));
  CHECK(Contains(r.out, "# flag --header"));
  CHECK(Contains(r.out, "# environment FWDSINK_PROXY"));
  CHECK(Contains(r.out, "# warning: FWDSINK_NOPE is not a setting"));
  // Twin: what is not secret is printed as given, defaults as defaults.
  CHECK(Contains(r.out, "label = \"edge-7\""));
  CHECK(Contains(r.out, "chunk_bytes = \"1m\""));
  for (const fwdsink::SettingInfo& info : fwdsink::SettingTable()) {
    CAPTURE(info.key);
    CHECK((Contains(r.out, "\n" + std::string(info.key) + " = ") ||
           Contains(r.out, "# " + std::string(info.key) + " (unset)")));
  }
  SUBCASE("settings that do not build: printed, then the error, exit 64") {
    const Run bad = RunDaemon(dir, {"forward", "--print-config", "--url", "http://h/"});
    CHECK(bad.code == kExitUsage);
    CHECK(Contains(bad.out, "# error: --spool: is required"));
  }
}

TEST_CASE("--log-level: every JSON line has its event's level; lower levels are dropped") {
  const fs::path dir = CentralProcess::ScratchDir("settings_log_level");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  Generate(dir, spool, "20k", "1");
  std::vector<std::string> args = {"forward",      "--once", "--log-json", "--spool",
                                   spool.string(), "--url",  Url(central)};
  std::string min = "info";
  SUBCASE("default: info and above") {}
  SUBCASE("warn: the info lines are gone") {
    min = "warn";
    args.insert(args.end(), {"--log-level", "warn"});
  }
  const Run r = RunDaemon(dir, args);
  CHECK(r.code == kExitOk);
  const auto rank = [](const std::string& l) { return *fwdsink::ParseLogLevel(l); };
  std::size_t lines = 0;
  for (const auto& j : JsonLines(r.err)) {
    REQUIRE_FALSE(j.is_discarded());
    const std::string level = j.value("level", "");
    const std::string event = j.value("event", "");
    CAPTURE(event);
    REQUIRE(fwdsink::ParseLogLevel(level));
    CHECK(level == fwdsink::to_string(fwdsink::EventLevel(event)));
    CHECK(rank(level) >= rank(min));
    ++lines;
  }
  if (min == "info") CHECK(lines >= 3);  // start, delivered, exit
  if (min == "warn") CHECK(lines == 0);  // a clean pass has nothing to warn about
}

TEST_CASE("SIGHUP under load: the log reopened, files re-read, nothing lost, no wait cut short") {
  const fs::path dir = CentralProcess::ScratchDir("settings_sighup");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  WriteFile(dir / "central.token", "tok-1\n");
  // Every 4th POST refused with 503 and no Retry-After: the daemon waits its 0.3 s
  // ladder rung, and the HUPs land in those waits too. Answers take 10 ms.
  REQUIRE(central.Start({"--fail-every", "4", "--no-retry-after", "--header-delay-ms", "10",
                         "--token-file", (dir / "central.token").string()}));
  const auto rows = Generate(dir, spool, "300k", "4");
  WriteFile(dir / "token", "tok-1\n");
  WriteFile(dir / "tenant", "tenant-a\n");
  const fs::path log = dir / "fwdsink.log";
  DaemonProcess d(dir, "hup",
                  {"forward",
                   "--spool",
                   spool.string(),
                   "--url",
                   Url(central),
                   "--chunk-bytes",
                   "16k",
                   "--ladder",
                   "0.3",
                   "--jitter",
                   "0",
                   "--pacing",
                   "off",
                   "--poll",
                   "0.1",
                   "--log-json",
                   "--log-file",
                   log.string(),
                   "--token-file",
                   (dir / "token").string(),
                   "--header-file",
                   "X-Tenant: " + (dir / "tenant").string()});
  REQUIRE(d.started());
  REQUIRE(WaitFor([&] { return Contains(ReadFile(log), "daemon.start"); }));

  // logrotate: rename, then HUP; the next lines go to a new file of the old name.
  fs::rename(log, dir / "fwdsink.log.1");
  d.Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return Contains(ReadFile(log), "\"event\":\"daemon.reload\""); }));
  // More HUPs while it works and waits.
  int hups = 1;
  while (CountReady(spool) > 0 && hups < 40) {
    d.Signal(SIGHUP);
    ++hups;
    std::this_thread::sleep_for(25ms);
  }
  REQUIRE(WaitFor([&] { return CountReady(spool) == 0; }));
  d.Signal(SIGTERM);
  const auto code = d.Wait(5s);
  REQUIRE(code.has_value());
  CHECK(*code == kExitOk);  // not 129: HUP no longer kills

  const std::string old_log = ReadFile(dir / "fwdsink.log.1");
  const std::string new_log = ReadFile(log);
  CHECK(Contains(old_log, "daemon.start"));
  CHECK_FALSE(Contains(old_log, "daemon.reload"));
  CHECK(Contains(new_log, "\"reloaded\":[\"log_file\",\"credentials\"]"));
  CHECK(Contains(new_log, "daemon.exit"));
  CHECK_FALSE(Contains(old_log + new_log, "forward.aborted"));  // no wait was cut short
  CHECK_FALSE(Contains(old_log + new_log, "reload_failed"));
  CHECK_FALSE(Contains(old_log + new_log, "tok-1"));
  for (const auto& j : JsonLines(old_log + new_log)) CHECK_FALSE(j.is_discarded());
  // The waits happened (every 4th POST was refused) and every row arrived exactly once.
  CHECK(central.Stats()["injected"] > 0);
  CHECK(central.Stats()["unauthorized"] == 0);
  const auto got = central.received_rows();
  CHECK(got.size() == rows);
  CHECK(std::set<std::string>(got.begin(), got.end()).size() == rows);
  MESSAGE("SIGHUPs sent: " << hups);
}

// Issue 25, smaller findings: an absurd byte count says "out of range"; a taken metrics
// port says why; unknown FWDSINK_* variables are one warning event naming them.
TEST_CASE("Start-up messages: out of range, a taken port's reason, unknown variables") {
  const fs::path dir = CentralProcess::ScratchDir("settings_messages");
  const fs::path spool = MakeSpool(dir);
  const std::string url = "http://127.0.0.1:1/ingest";
  SUBCASE("chunk_bytes = \"99999999999999999999g\" in the config file") {
    REQUIRE(WriteFile(dir / "f.toml", "chunk_bytes = \"99999999999999999999g\"\n"));
    DaemonProcess run(dir, "range", Forward(spool, url, {"--config", (dir / "f.toml").string()}));
    CHECK(run.Wait(10s) == std::optional<int>(kExitUsage));
    CHECK(Has(run.err(), "'99999999999999999999g' is out of range"));
    // Twin: garbage is still "not a byte count".
    DaemonProcess bad(dir, "garbage", Forward(spool, url, {"--chunk-bytes", "4x"}));
    CHECK(bad.Wait(10s) == std::optional<int>(kExitUsage));
    CHECK(Has(bad.err(), "'4x' is not a byte count"));
  }
  SUBCASE("a metrics port in use") {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const std::string listen = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    DaemonProcess run(dir, "port", Forward(spool, url, {"--once", "--metrics-listen", listen}));
    CHECK(run.Wait(10s) == std::optional<int>(kExitUsage));
    CHECK(Has(run.err(), "cannot listen on " + listen + ": Address already in use"));
    ::close(fd);
  }
  SUBCASE("unknown FWDSINK_ variables: one event naming them") {
    DaemonProcess run(dir, "env", Forward(spool, url, {"--once"}),
                      {"FWDSINK_CHUNK_BYTE=1m", "FWDSINK_NOPE=1"});
    CHECK(run.Wait(10s) == std::optional<int>(0));  // nothing to send
    const std::string err = run.err();
    CHECK(Count(err, "\"event\":\"daemon.unknown_environment\"") == 1);
    CHECK(Has(err, "\"variables\":[\"FWDSINK_CHUNK_BYTE\",\"FWDSINK_NOPE\"]"));
    // Twin: none, no event.
    DaemonProcess clean(dir, "clean", Forward(spool, url, {"--once"}));
    CHECK(clean.Wait(10s) == std::optional<int>(0));
    CHECK_FALSE(Has(clean.err(), "daemon.unknown_environment"));
  }
}
