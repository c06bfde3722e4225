// SPDX-License-Identifier: Apache-2.0
// Only regular files are read, at the daemon: a folder, a FIFO or a device where the
// config file or a credential file belongs exits 64 at start, at once, naming the option
// and the file; at SIGHUP it is a reload_failed event, the old credentials stay in use
// and SIGTERM is answered promptly. Each with a twin that must not fire. ReadRegularFile
// itself is tested in tests/unit/io/read_file_test.cc. @ref LLP 0023#regular-files
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

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
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::Count;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Forward;
using fwdsink::test::Has;
using fwdsink::test::MakeSpool;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteFile;
using fwdsink::test::WriteRows;
using namespace std::chrono_literals;

constexpr int kExitUsage = 64;

}  // namespace

// Issue 25 items 3 and 4, at start: exit 64 naming the option and the file, at once.
TEST_CASE("A folder, a FIFO or a device where a file belongs: exit 64 naming option and file") {
  const fs::path dir = CentralProcess::ScratchDir("regular_files_start");
  const fs::path spool = MakeSpool(dir);
  const fs::path folder = dir / "a-folder";
  fs::create_directories(folder);
  const fs::path fifo = dir / "a-fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const fs::path big = dir / "big-token";
  REQUIRE(WriteFile(big, std::string(100 << 10, 't')));
  const std::string url = "http://127.0.0.1:1/ingest";
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    std::vector<std::string> env;
    std::string option;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"config_dir",
       {"--config", folder.string()},
       {},
       "--config",
       folder.string() + " is a directory"},
      {"config_env_dir",
       {},
       {"FWDSINK_CONFIG=" + folder.string()},
       "FWDSINK_CONFIG",
       folder.string() + " is a directory"},
      {"config_zero", {"--config", "/dev/zero"}, {}, "--config", "/dev/zero is a character device"},
      {"config_fifo", {"--config", fifo.string()}, {}, "--config", fifo.string() + " is a FIFO"},
      {"token_dir",
       {"--token-file", folder.string()},
       {},
       "--token-file",
       folder.string() + " is a directory"},
      {"token_fifo",
       {"--token-file", fifo.string()},
       {},
       "--token-file",
       fifo.string() + " is a FIFO"},
      {"token_zero",
       {"--token-file", "/dev/zero"},
       {},
       "--token-file",
       "/dev/zero is a character device"},
      {"token_big",
       {"--token-file", big.string()},
       {},
       "--token-file",
       "is larger than 65536 bytes"},
      {"header_dir",
       {"--header-file", "X-Key: " + folder.string()},
       {},
       "--header-file",
       folder.string() + " is a directory"},
      {"basic_dir",
       {"--basic-auth-file", folder.string()},
       {},
       "--basic-auth-file",
       folder.string() + " is a directory"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    DaemonProcess run(dir, c.name,
                      Forward(spool, url,
                              [&] {
                                auto f = c.flags;
                                f.push_back("--once");
                                return f;
                              }()),
                      c.env);
    REQUIRE(run.started());
    const auto code = run.Wait(10s);  // a FIFO used to block open() for good
    CHECK(code == std::optional<int>(kExitUsage));
    CHECK(Has(run.err(), "fwdsink: " + c.option + ": "));
    CHECK(Has(run.err(), c.says));
    CHECK_FALSE(Has(run.err(), "terminate called"));
  }
}

// Issue 25 items 3 and 4, at SIGHUP: an error event, the old token kept, SIGTERM prompt.
TEST_CASE("SIGHUP with a credential that became a folder or a FIFO: reload_failed, old kept") {
  const fs::path dir = CentralProcess::ScratchDir("regular_files_reload");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = MakeSpool(dir);
  const fs::path token = dir / "token";
  REQUIRE(WriteFile(token, "t0k3n-one\n"));
  DaemonProcess run(
      dir, "run", Forward(spool, Url(central), {"--token-file", token.string(), "--poll", "0.2"}));
  REQUIRE(run.started());
  REQUIRE(WaitFor([&] { return Has(run.err(), "\"event\":\"daemon.start\""); }, 10s));
  const auto reloads = [&](const std::string& event) {
    return Count(run.err(), "\"event\":\"" + event + "\"");
  };
  // Twin first: a regular file reloads.
  run.Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return reloads("daemon.reload") == 1; }, 10s));

  fs::remove(token);
  fs::create_directory(token);
  run.Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return reloads("daemon.reload_failed") == 1; }, 10s));
  CHECK(Has(run.err(), token.string() + " is a directory, not a regular file"));

  fs::remove(token);
  REQUIRE(::mkfifo(token.c_str(), 0600) == 0);
  run.Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return reloads("daemon.reload_failed") == 2; }, 10s));
  CHECK(Has(run.err(), token.string() + " is a FIFO, not a regular file"));

  // Still sending (the old credentials in use).
  WriteRows(spool / "ready" / "p.ndjson", 5);
  REQUIRE(WaitFor([&] { return central.received_rows().size() == 5; }, 20s));

  fs::remove(token);
  REQUIRE(WriteFile(token, "t0k3n-two\n"));
  run.Signal(SIGHUP);  // twin: back to a regular file, it reloads again
  REQUIRE(WaitFor([&] { return reloads("daemon.reload") == 2; }, 10s));

  REQUIRE(::mkfifo((dir / "fifo2").c_str(), 0600) == 0);
  fs::rename(dir / "fifo2", token);
  run.Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return reloads("daemon.reload_failed") == 3; }, 10s));
  const auto t0 = std::chrono::steady_clock::now();
  run.Signal(SIGTERM);
  CHECK(run.Wait(10s) == std::optional<int>(0));
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);  // it used to ignore SIGTERM
}
