// SPDX-License-Identifier: Apache-2.0
// CentralProcess: runs the reference receiver (fwdsink-central) as a child process for
// integration tests, on 127.0.0.1 with an ephemeral port.
//
//   CentralProcess central(CentralProcess::ScratchDir("my_test"));
//   REQUIRE(central.Start({"--rate", "1000"}));
//   httplib::Client cli("127.0.0.1", central.port());
//   ... central.Stats()["accepted_chunks"], central.received_rows(), central.request_log()
//   DaemonProcess d(dir, "run", {"forward", "--once", "--url", Url(central), ...});
//
// Start() always passes --listen 127.0.0.1:0 --out DIR --port-file DIR/port
// --request-log DIR/requests.ndjson, so request_log() always works; the child's stdout and
// stderr go to DIR/central.stdout and DIR/central.stderr. Stop() then Start() again on the
// same DIR restarts the receiver with its stored rows and keys (restart-dedupe tests).
//
// Threading: one test thread owns a CentralProcess. Stats(), received_rows() and
// request_log() only read files or make a GET, so they may be called while other test
// threads send requests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/test_files.h"

extern char** environ;

namespace fwdsink::test {

class CentralProcess {
 public:
  static constexpr auto kStartTimeout = std::chrono::seconds(10);
  static constexpr auto kStopGrace = std::chrono::seconds(3);
  static constexpr auto kPoll = std::chrono::milliseconds(5);

  // Returns a fresh, empty directory FWDSINK_TEST_TMP/<name>-<pid>; name must be unique
  // per test so that tests can run in parallel.
  static std::filesystem::path ScratchDir(std::string_view name) {
    auto dir = std::filesystem::path(FWDSINK_TEST_TMP) /
               (std::string(name) + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
  }

  // Uses out_dir for --out, the port file, the request log and the child's output.
  explicit CentralProcess(std::filesystem::path out_dir) : dir_(std::move(out_dir)) {}
  CentralProcess(const CentralProcess&) = delete;
  CentralProcess& operator=(const CentralProcess&) = delete;
  // Stops the child if it still runs: SIGTERM, then SIGKILL after kStopGrace.
  ~CentralProcess() { Stop(); }

  // Spawns the receiver with extra_args appended and waits (bounded) until it listens.
  // Returns false if it exited (see exit_code(), e.g. 64 for a bad flag) or timed out.
  [[nodiscard]] bool Start(const std::vector<std::string>& extra_args = {},
                           std::chrono::milliseconds timeout = kStartTimeout) {
    if (pid_ > 0) return false;
    exit_code_.reset();
    port_ = 0;
    std::filesystem::create_directories(dir_);
    const auto port_file = dir_ / "port";
    std::filesystem::remove(port_file);

    std::vector<std::string> args = {FWDSINK_CENTRAL_BIN,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--out",
                                     dir_.string(),
                                     "--port-file",
                                     port_file.string(),
                                     "--request-log",
                                     request_log_path().string()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const auto out = (dir_ / "central.stdout").string();
    const auto err = (dir_ / "central.stderr").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    pid_ = pid;

    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Reap(/*block=*/false)) return false;  // exited before listening
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        port_ = port;
        return true;
      }
      std::this_thread::sleep_for(kPoll);
    }
    Stop();
    return false;
  }

  // Sends SIGTERM, waits up to grace, then SIGKILL. Returns the exit code (128+signal if
  // killed), or nullopt if nothing was running.
  std::optional<int> Stop(std::chrono::milliseconds grace = kStopGrace) {
    if (pid_ <= 0) return exit_code_;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Reap(/*block=*/false)) return exit_code_;
      std::this_thread::sleep_for(kPoll);
    }
    ::kill(pid_, SIGKILL);
    Reap(/*block=*/true);
    return exit_code_;
  }

  // Returns true once the child has exited (and reaps it).
  bool Exited() { return pid_ <= 0 || Reap(/*block=*/false); }

  // Returns the exit code of the last run once it has exited.
  std::optional<int> exit_code() const { return exit_code_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& out_dir() const { return dir_; }
  std::filesystem::path request_log_path() const { return dir_ / "requests.ndjson"; }

  // Returns GET /stats as JSON (a null value if the request fails).
  nlohmann::json Stats() const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(std::chrono::seconds(2));
    cli.set_read_timeout(std::chrono::seconds(5));
    auto res = cli.Get("/stats");
    if (!res || res->status != 200) return nullptr;
    return nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  }

  // Returns the stored rows (lines of DIR/received.ndjson, without the newline).
  std::vector<std::string> received_rows() const { return ReadLines(dir_ / "received.ndjson"); }

  // Returns one JSON object per POST decided so far (all runs on this directory).
  std::vector<nlohmann::json> request_log() const {
    std::vector<nlohmann::json> out;
    for (const auto& line : ReadLines(request_log_path())) {
      out.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
    }
    return out;
  }

  // Returns what the child wrote to stderr (all runs on this directory).
  std::string stderr_text() const { return ReadFile(dir_ / "central.stderr"); }

 private:
  // Collects the child's status; returns true if it has exited.
  bool Reap(bool block) {
    if (pid_ <= 0) return true;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
    if (r == 0) return false;
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    pid_ = -1;
    return true;
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::optional<int> exit_code_;
};

// Returns the URL the receiver `c` takes rows at: http://127.0.0.1:PORT/ingest.
inline std::string Url(const CentralProcess& c) {
  return "http://127.0.0.1:" + std::to_string(c.port()) + "/ingest";
}

}  // namespace fwdsink::test
