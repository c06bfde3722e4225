// SPDX-License-Identifier: Apache-2.0
// DaemonProcess: runs the `fwdsink` daemon binary (FWDSINK_DAEMON_BIN) as a child process
// for integration tests, its stdout and stderr captured to DIR/<tag>.stdout and
// DIR/<tag>.stderr.
//
//   DaemonProcess run(dir, "run1", {"forward", "--once", "--spool", spool, "--url", url});
//   REQUIRE(run.started());
//   CHECK(run.Wait(20s) == std::optional<int>(0));
//   CHECK(run.err().find("\"event\":\"daemon.exit\"") != std::string::npos);
//
// Every wait is bounded, and the destructor SIGKILLs and reaps a child that still runs, so
// a failing REQUIRE or a timed-out Wait() never leaves a daemon behind. Re-using a tag in
// the same DIR overwrites that tag's output files.
//
// Every test checks for free that a daemon exits only when told to or when it must
// (@ref LLP 0014#only-close-aborts): when Wait() reaps an exit 0 of `fwdsink forward`
// that started forwarding, one not run once must have been sent SIGTERM or SIGINT
// through Signal(), and a run-once (--once, the config file or the environment) that
// was not signalled must have left nothing in SPOOL/ready/. TEST_FWDSINK_DAEMON=BIN runs
// another build of the daemon under the same tests.
//
// Threading: one test thread owns a DaemonProcess; out() and err() only read files, so
// they may be polled while the child runs.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "support/test_files.h"

extern char** environ;

namespace fwdsink::test {

class DaemonProcess {
 public:
  // How often Wait() looks at the child.
  static constexpr auto kPoll = std::chrono::milliseconds(5);

  // Spawns FWDSINK_DAEMON_BIN with `args`; started() tells whether the spawn worked.
  // `extra_env` ("NAME=value") is added to the test's own environment.
  DaemonProcess(std::filesystem::path dir, const std::string& tag, std::vector<std::string> args,
                std::vector<std::string> extra_env = {})
      : out_path_(dir / (tag + ".stdout")), err_path_(dir / (tag + ".stderr")) {
    forward_ = !args.empty() && args[0] == "forward";
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--spool") spool_ = args[i + 1];
    }
    // TEST_FWDSINK_DAEMON runs another build of the daemon under the same test (an older
    // one, to see a test red on the code it was written against).
    const char* other = std::getenv("TEST_FWDSINK_DAEMON");
    args.insert(args.begin(), other && *other ? other : FWDSINK_DAEMON_BIN);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    // An entry of `extra_env` replaces the inherited one of the same name: the child's
    // getenv() finds the first, so appending would leave the test's own value in force
    // (scripts/test.sh exports ASAN_OPTIONS under --sanitize).
    auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=') + 1); };
    std::vector<char*> envp;
    for (char** e = environ; *e; ++e) {
      const bool replaced =
          std::any_of(extra_env.begin(), extra_env.end(),
                      [&](const std::string& x) { return name_of(x) == name_of(*e); });
      if (!replaced) envp.push_back(*e);
    }
    for (auto& e : extra_env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0) pid_ = pid;
    posix_spawn_file_actions_destroy(&actions);
    started_ = pid_ > 0;
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Kills and reaps the child if it still runs.
  ~DaemonProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Returns whether the child was spawned.
  bool started() const { return started_; }

  // Waits up to `timeout` for the child to exit and reaps it. Returns its exit code
  // (128+signal if a signal ended it), or nullopt if it still runs at the deadline or was
  // never started. After the exit, returns the same code again at once.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (*code_ == 0) CheckCleanExit();
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(kPoll);
    }
    return code_;
  }

  // Sends `sig` to the child if it still runs (not yet reaped).
  void Signal(int sig) {
    if (sig == SIGTERM || sig == SIGINT) stop_sent_ = true;
    if (pid_ > 0) ::kill(pid_, sig);
  }

  // Partitions left in SPOOL/ready/ (sealed `*.ndjson`, not hidden) of --spool, or of
  // `spool` when given; 0 when neither is known.
  std::size_t ReadyLeft(std::filesystem::path spool = {}) const {
    if (spool.empty()) spool = spool_;
    if (spool.empty()) return 0;
    std::error_code ec;
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(spool / "ready", ec)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with(".") && name.ends_with(".ndjson")) ++n;
    }
    return n;
  }

  // Returns what the child has written to stdout / stderr so far.
  std::string out() const { return ReadFile(out_path_); }
  std::string err() const { return ReadFile(err_path_); }

 private:
  // The spool of a daemon.start line (its "spool" field), for a run configured by file.
  static std::filesystem::path SpoolOf(const std::string& line) {
    const auto at = line.find("\"spool\":\"");
    if (at == std::string::npos) return {};
    return line.substr(at + 9, line.find('"', at + 9) - at - 9);
  }

  // A daemon exits 0 only when told to or when it must. @ref LLP 0014#only-close-aborts
  void CheckCleanExit() const {
    if (!forward_ || stop_sent_) return;
    // Only a run that started forwarding is checked (not --print-config, --help, a bad
    // flag); its start line says whether it runs once (--once, the config file or the
    // environment) and which spool.
    const std::string log = err();
    const auto start = log.find("\"event\":\"daemon.start\"");
    if (start == std::string::npos) return;
    const std::string line = log.substr(start, log.find('\n', start) - start);
    const bool once = line.find("\"mode\":\"once\"") != std::string::npos;
    if (!once) {
      FAIL_CHECK("the daemon exited 0 without SIGTERM/SIGINT; its log ends: "
                 << err().substr(err().size() > 2000 ? err().size() - 2000 : 0));
    } else if (const std::size_t left = ReadyLeft(SpoolOf(line)); left > 0) {
      FAIL_CHECK("--once exited 0 with "
                 << left << " partition(s) left in ready/; its log ends: "
                 << err().substr(err().size() > 2000 ? err().size() - 2000 : 0));
    }
  }

  std::filesystem::path out_path_;
  std::filesystem::path err_path_;
  std::filesystem::path spool_;  // --spool's value, if given
  bool forward_ = false;         // the child runs `fwdsink forward`
  bool stop_sent_ = false;       // Signal() sent SIGTERM or SIGINT
  pid_t pid_ = -1;               // > 0 while the child runs and is not yet reaped
  bool started_ = false;
  std::optional<int> code_;
};

// The number from `"<key>":N` in the daemon's exit line (-1 when absent).
inline long long ExitCounter(const std::string& log, const std::string& key) {
  const auto exit_at = log.rfind("\"event\":\"daemon.exit\"");
  if (exit_at == std::string::npos) return -1;
  const std::string needle = "\"" + key + "\":";
  const auto at = log.find(needle, exit_at);
  if (at == std::string::npos) return -1;
  return std::stoll(log.substr(at + needle.size()));
}

}  // namespace fwdsink::test
