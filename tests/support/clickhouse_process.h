// SPDX-License-Identifier: Apache-2.0
// Real engines as child processes of a test: Debian's clickhouse-server (18.16) with a
// temporary config, and ZooKeeper (Debian's zookeeper 3.8, ZooKeeperServerMain from
// /usr/share/java/zookeeper.jar, whose manifest names its dependencies) with a zoo.cfg,
// both on free loopback ports, data in the test's own folder, never as a service.
//
//   auto zk = ZooKeeperProcess::Start(dir / "zk");
//   auto ch = ClickHouseProcess::Start(dir / "r1", ReplicaXml(zk->port(), "r1"));
//   REQUIRE(ch);
//   CHECK(ch->Query("SELECT 1") == "1\n");
//
// Every process is torn down by its PID: the destructor sends SIGCONT (a frozen server
// must see its SIGTERM), SIGTERM, then SIGKILL after a bounded wait, and reaps it; and
// each child is made with PR_SET_PDEATHSIG, so a test killed by ctest's timeout leaves
// no server behind either. Start() and the destructor run on the thread that owns the
// object (the test's main thread: the death signal follows the thread that forked).
// @ref LLP 0017#clickhouse-tests
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/ports.h"
#include "support/test_files.h"

namespace fwdsink::test {

inline constexpr const char* kClickHouseBin = "/usr/sbin/clickhouse-server";
inline constexpr const char* kJavaBin = "/usr/bin/java";
inline constexpr const char* kZooKeeperJar = "/usr/share/java/zookeeper.jar";

// One child process, owned by PID: SIGCONT, SIGTERM, then SIGKILL and reaped when it
// goes out of scope. stdout and stderr go to `log`.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> argv, const std::filesystem::path& log) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    pid_ = pid;
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { Stop(); }

  pid_t pid() const { return pid_; }
  // Returns whether the child still runs (not exited, not reaped).
  bool Running() {
    if (pid_ <= 0) return false;
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }
  void Signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Stops the child: SIGCONT and SIGTERM, SIGKILL after `grace`; reaps it.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(10)) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// A ZooKeeper server (standalone) on a free loopback port, data in `dir`.
class ZooKeeperProcess {
 public:
  static constexpr auto kStartDeadline = std::chrono::seconds(60);

  // `data` holds the snapshots and the log (default: dir/data).
  static std::unique_ptr<ZooKeeperProcess> Start(const std::filesystem::path& dir,
                                                 std::filesystem::path data = {}) {
    if (!std::filesystem::exists(kZooKeeperJar) || !std::filesystem::exists(kJavaBin))
      return nullptr;
    if (data.empty()) data = dir / "data";
    std::filesystem::create_directories(dir);
    std::filesystem::create_directories(data);
    auto zk = std::unique_ptr<ZooKeeperProcess>(new ZooKeeperProcess());
    zk->port_ = FreePort();
    // tickTime 500 ms: sessions of 1-10 s, so a frozen replica loses its session soon.
    WriteFile(dir / "zoo.cfg", "tickTime=500\ndataDir=" + data.string() +
                                   "\nclientPort=" + std::to_string(zk->port_) +
                                   "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                                   "maxClientCnxns=0\n4lw.commands.whitelist=ruok\n");
    zk->child_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kJavaBin, "-Xmx192m", "-cp", kZooKeeperJar,
                                 "org.apache.zookeeper.server.ZooKeeperServerMain",
                                 (dir / "zoo.cfg").string()},
        dir / "zookeeper.log");
    const auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      // An open port is not a serving ZooKeeper: until it has loaded its data it
      // accepts and drops the session handshake (a CI run's CREATE TABLE met that).
      if (zk->Ok()) return zk;
      if (!zk->child_->Running()) return nullptr;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return nullptr;
  }
  int port() const { return port_; }
  // Returns whether the server answers its four-letter "ruok" with "imok".
  bool Ok() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char reply[8] = {};
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    ::send(fd, "ruok", 4, MSG_NOSIGNAL) == 4 &&
                    ::recv(fd, reply, 4, MSG_WAITALL) == 4 && std::string(reply, 4) == "imok";
    ::close(fd);
    return ok;
  }

 private:
  ZooKeeperProcess() = default;
  int port_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

// The config of one replica: ZooKeeper, the {replica} macro, the interserver address.
inline std::string ReplicaXml(int zookeeper_port, const std::string& replica) {
  return "<zookeeper><node><host>127.0.0.1</host><port>" + std::to_string(zookeeper_port) +
         "</port></node><session_timeout_ms>4000</session_timeout_ms></zookeeper>\n"
         "<macros><replica>" +
         replica +
         "</replica></macros>\n<interserver_http_host>127.0.0.1</interserver_http_host>\n"
         "<interserver_http_port>" +
         std::to_string(FreePort()) + "</interserver_http_port>\n";
}

// A clickhouse-server on free loopback ports (HTTP and native), data in `dir`, one
// passwordless `default` user allowed from 127.0.0.1, plus `extra_xml` in <yandex>.
class ClickHouseProcess {
 public:
  static constexpr auto kStartDeadline = std::chrono::seconds(60);

  // `data` holds the tables (default: dir/data; a tmpfs folder spares a loaded disk).
  static std::unique_ptr<ClickHouseProcess> Start(const std::filesystem::path& dir,
                                                  const std::string& extra_xml = {},
                                                  std::filesystem::path data = {}) {
    if (!std::filesystem::exists(kClickHouseBin)) return nullptr;
    auto ch = std::unique_ptr<ClickHouseProcess>(new ClickHouseProcess());
    ch->dir_ = dir;
    std::filesystem::create_directories(dir);
    ch->port_ = FreePort();
    const int tcp_port = FreePort();
    WriteFile(dir / "users.xml", R"(<?xml version="1.0"?><yandex>
<profiles><default></default></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks>
<profile>default</profile><quota>default</quota></default></users>
<quotas><default></default></quotas></yandex>
)");
    const std::string d = dir.string();
    const std::string data_dir = data.empty() ? d + "/data" : data.string();
    WriteFile(dir / "config.xml", R"(<?xml version="1.0"?><yandex>
<logger><level>warning</level><log>)" +
                                      d + R"(/server.log</log><errorlog>)" + d +
                                      R"(/err.log</errorlog></logger>
<listen_host>127.0.0.1</listen_host>
<http_port>)" + std::to_string(ch->port_) +
                                      R"(</http_port>
<tcp_port>)" + std::to_string(tcp_port) +
                                      R"(</tcp_port>
<path>)" + data_dir + R"(/</path><tmp_path>)" +
                                      data_dir + R"(/tmp/</tmp_path>
<users_config>)" + d + R"(/users.xml</users_config>
<default_profile>default</default_profile><default_database>default</default_database>
<mark_cache_size>5368709</mark_cache_size>
)" + extra_xml + "</yandex>\n");
    if (!ch->Launch()) return nullptr;
    return ch;
  }

  // Stops the server (SIGTERM) and starts it again on the same ports and data; returns
  // whether it answers again.
  bool Restart() {
    child_.reset();
    return Launch();
  }
  // Stops the server (SIGTERM, SIGKILL after a while).
  void Stop() { child_.reset(); }
  // Kills the server (SIGKILL) and reaps it: a crash.
  void Kill() {
    if (!child_) return;
    child_->Signal(SIGKILL);
    child_.reset();
  }
  // Starts a stopped server again on the same ports and data.
  bool Launch() {
    child_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kClickHouseBin, "--config-file=" + (dir_ / "config.xml").string()},
        dir_ / "stdout");
    const auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Query("SELECT 1") == "1\n") return true;
      if (!child_->Running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Runs one query; returns the body, or "ERROR <status>: <body>".
  std::string Query(const std::string& sql,
                    std::chrono::seconds timeout = std::chrono::seconds(30)) const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(timeout);
    cli.set_connection_timeout(std::chrono::seconds(2));
    auto res = cli.Post("/", sql, "text/plain");
    if (!res) return "ERROR no response";
    if (res->status != 200) return "ERROR " + std::to_string(res->status) + ": " + res->body;
    return res->body;
  }
  // Returns the INSERT URL of `table` (JSONEachRow), with `extra` appended to its query.
  std::string Url(const std::string& table, const std::string& extra = {}) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "?query=INSERT+INTO+" + table +
           "+FORMAT+JSONEachRow" + extra;
  }
  int port() const { return port_; }
  // Sends `sig` to the server (SIGSTOP / SIGCONT to freeze and thaw it).
  void Signal(int sig) const {
    if (child_) child_->Signal(sig);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  ClickHouseProcess() = default;
  std::filesystem::path dir_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

}  // namespace fwdsink::test
