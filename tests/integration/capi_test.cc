// SPDX-License-Identifier: Apache-2.0
// The C API, driven from C: runs tests/c/capi_test.c's scenarios (compiled as C99 with
// -Wall -Wextra -Werror -pedantic, linked to libfwdsink.so) against fwdsink-central and
// checks what the receiver stored. @ref LLP 0026#tests
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fwdsink/settings.h"
#include "support/central_process.h"
#include "support/it_support.h"
#include "support/test_files.h"

extern char** environ;

namespace {

using fwdsink::test::CentralProcess;

struct Ran {
  int code = -1;
  std::string out;
};

// Runs capi_test with `args`; its stdout and stderr go to DIR/capi.out.
Ran RunC(const std::filesystem::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), FWDSINK_CAPI_TEST_BIN);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = (dir / "capi.out").string();
  std::filesystem::remove(out);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  Ran ran;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ran.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  ran.out = fwdsink::test::ReadFile(out);
  return ran;
}

// The seq numbers of the stored rows written by capi_test, with their counts.
std::map<int, int> Seqs(const CentralProcess& c) {
  std::map<int, int> seqs;
  for (const std::string& row : c.received_rows()) {
    const auto j = nlohmann::json::parse(row, nullptr, false);
    if (j.is_object() && j.contains("seq")) ++seqs[j["seq"].get<int>()];
  }
  return seqs;
}

}  // namespace

TEST_CASE("C API: every key of the table the library uses is accepted; bad ones refused") {
  const auto dir = CentralProcess::ScratchDir("capi_conf");
  const Ran ran = RunC(dir, {"conf"});
  INFO(ran.out);
  CHECK(ran.code == 0);
  // The C test's list covers the whole table but the daemon-only keys (stats_interval
  // is honoured: it paces the stats callback).
  for (const fwdsink::SettingInfo& info : fwdsink::SettingTable()) {
    if (info.daemon_only && info.key != "stats_interval") continue;
    std::string key(info.key);
    if (key == "spool") key = "spool_dir";
    CHECK_MESSAGE(ran.out.find("accepted " + key + "\n") != std::string::npos,
                  "capi_test.c does not set the key ", key);
  }
}

TEST_CASE("C API: run_once delivers every row written with the writer exactly once") {
  const auto dir = CentralProcess::ScratchDir("capi_once");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const Ran ran = RunC(dir, {"once", Url(central), (dir / "spool").string(), "3000"});
  INFO(ran.out);
  CHECK(ran.code == 0);
  const auto seqs = Seqs(central);
  CHECK(seqs.size() == 3000);
  CHECK(std::all_of(seqs.begin(), seqs.end(), [](const auto& kv) { return kv.second == 1; }));
  CHECK(fwdsink::test::FileNames(dir / "spool" / "ready").empty());
}

TEST_CASE("C API: fwdsink_close from another thread cuts a Retry-After pause short") {
  const auto dir = CentralProcess::ScratchDir("capi_close");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--fail-first", "1000", "--fail-status", "429", "--retry-after", "30"}));
  const Ran ran = RunC(dir, {"close", Url(central), (dir / "spool").string()});
  INFO(ran.out);
  CHECK(ran.code == 0);
  CHECK(ran.out.find("run_once 75") != std::string::npos);
  // Nothing was lost: the partition is still there for a later pass.
  CHECK(fwdsink::test::FileNames(dir / "spool" / "ready").size() == 1);
}

TEST_CASE("C API: the writer's partitions are picked up by the started driver") {
  const auto dir = CentralProcess::ScratchDir("capi_start");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const Ran ran = RunC(dir, {"start", Url(central), (dir / "spool").string(), "500"});
  INFO(ran.out);
  CHECK(ran.code == 0);
  const auto seqs = Seqs(central);
  CHECK(seqs.size() == 2000);
  CHECK(std::all_of(seqs.begin(), seqs.end(), [](const auto& kv) { return kv.second == 1; }));
}

TEST_CASE("C API: a second forwarder on a locked spool is refused, its twin is not") {
  const auto dir = CentralProcess::ScratchDir("capi_busy");
  const auto spool = (dir / "spool").string();
  const Ran ran = RunC(dir, {"busy", spool});
  INFO(ran.out);
  CHECK(ran.code == 0);
  // The refusal names the holder (the C program itself holds the lock) ...
  CHECK(ran.out.find("second: spool_dir: spool " + spool + " is locked by another fwdsink (pid ") !=
        std::string::npos);
  // ... and its twin: with the holder destroyed, the next forwarder is created.
  CHECK(ran.out.find("after the holder: created\n") != std::string::npos);
}
