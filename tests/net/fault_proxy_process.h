// SPDX-License-Identifier: Apache-2.0
// FaultProxyProcess: runs fwdsink-fault-proxy (FWDSINK_FAULT_PROXY_BIN) in front of a
// port on 127.0.0.1 and talks to its control socket. @ref LLP 0014#fault-proxy
//
//   FaultProxyProcess proxy(dir);
//   REQUIRE(proxy.Start(central.port()));
//   CHECK(proxy.Command("arm reset_body 1 2") == "ok");   // the 3rd request from now
//   ... proxy.url("/ingest"), proxy.Log() (one JSON object per request head)
//
// Threading: one test thread owns it. Stopped (SIGKILL, reaped) by its destructor.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_files.h"

extern char** environ;

namespace fwdsink::test {

class FaultProxyProcess {
 public:
  explicit FaultProxyProcess(std::filesystem::path dir) : dir_(std::move(dir)) {}
  FaultProxyProcess(const FaultProxyProcess&) = delete;
  FaultProxyProcess& operator=(const FaultProxyProcess&) = delete;
  ~FaultProxyProcess() {
    if (control_ >= 0) ::close(control_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Starts the proxy in front of 127.0.0.1:`to_port` with `extra` flags; waits (bounded)
  // for its ports and connects to its control socket.
  [[nodiscard]] bool Start(int to_port, std::vector<std::string> extra = {}) {
    std::filesystem::create_directories(dir_);
    const auto port_file = dir_ / "proxy.port";
    const auto control_file = dir_ / "proxy.control";
    std::vector<std::string> args = {FWDSINK_FAULT_PROXY_BIN,
                                     "--to",
                                     "127.0.0.1:" + std::to_string(to_port),
                                     "--listen-port-file",
                                     port_file.string(),
                                     "--control-port-file",
                                     control_file.string(),
                                     "--log",
                                     log_path().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string err = (dir_ / "proxy.stderr").string();
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int control_port = 0;
    while (std::chrono::steady_clock::now() < until && (port_ == 0 || control_port == 0)) {
      std::ifstream(port_file) >> port_;
      std::ifstream(control_file) >> control_port;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (port_ == 0 || control_port == 0) return false;
    control_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(control_port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(control_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }

  // Sends one control line; returns the reply line ("ok ...", "error ...").
  std::string Command(const std::string& line) {
    const std::string out = line + "\n";
    if (::send(control_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size()))
      return "error send";
    std::string reply;
    char c;
    while (::recv(control_, &c, 1, 0) == 1 && c != '\n') reply += c;
    return reply;
  }

  // The number after "requests=" in "stats".
  long Requests() {
    const std::string s = Command("stats");
    const auto at = s.find("requests=");
    return at == std::string::npos ? -1 : std::stol(s.substr(at + 9));
  }

  int port() const { return port_; }
  std::string url(const std::string& path = "/ingest") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::filesystem::path log_path() const { return dir_ / "proxy.requests.ndjson"; }
  // One object per request head seen (req, conn, key, content_length, expect, toxic).
  std::vector<nlohmann::json> Log() const {
    std::vector<nlohmann::json> out;
    for (const auto& line : ReadLines(log_path())) {
      out.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
    }
    return out;
  }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int control_ = -1;
};

}  // namespace fwdsink::test
