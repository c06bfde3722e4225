// SPDX-License-Identifier: Apache-2.0
// Real fronts (issue 37, ctest label `fronts`, LLP 0014#fault-proxy): nginx, haproxy,
// lighttpd and caddy from Debian as reverse proxies in front of a throttling
// fwdsink-central, each started by the test on a free loopback port with its own
// config in a temp folder and stopped by PID. With the daemon's defaults: a clean run,
// and the front SIGKILLed and restarted twice mid-upload. Every row once, the daemon up
// until our SIGTERM, exit 0. A front that is not installed is reported and skipped.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/ports.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
namespace fs = std::filesystem;

constexpr int kRows = 240'000;  // 24 MB raw, about half of it on the wire with zstd

// One front: how to write its config and how to run it in the foreground.
struct Front {
  std::string name;
  std::string binary;
  std::function<void(const fs::path& dir, int port, int backend)> configure;
  std::function<std::vector<std::string>(const fs::path& dir)> argv;
};

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

const std::vector<Front>& Fronts() {
  static const std::vector<Front> fronts = {
      {"nginx", "/usr/sbin/nginx",
       [](const fs::path& dir, int port, int backend) {
         fs::create_directories(dir / "tmp");
         const std::string d = dir.string();
         // One process (no master): SIGKILL takes the listener with it.
         WriteFile(dir / "nginx.conf",
                   std::string(::getuid() == 0 ? "user root;\n" : "") +
                       "worker_processes 1;\nmaster_process off;\ndaemon off;\n"
                       "pid " +
                       d + "/nginx.pid;\nerror_log " + d +
                       "/error.log warn;\n"
                       "events { worker_connections 256; }\nhttp {\n  access_log off;\n"
                       "  client_body_temp_path " +
                       d +
                       "/tmp/body;\n"
                       "  proxy_temp_path " +
                       d +
                       "/tmp/proxy;\n"
                       "  fastcgi_temp_path " +
                       d +
                       "/tmp/fcgi;\n"
                       "  uwsgi_temp_path " +
                       d +
                       "/tmp/uwsgi;\n"
                       "  scgi_temp_path " +
                       d +
                       "/tmp/scgi;\n"
                       "  client_max_body_size 64m;\n"
                       "  server {\n    listen 127.0.0.1:" +
                       std::to_string(port) +
                       ";\n"
                       "    location / {\n      proxy_http_version 1.1;\n"
                       "      proxy_set_header Connection \"\";\n"
                       "      proxy_pass http://127.0.0.1:" +
                       std::to_string(backend) + ";\n    }\n  }\n}\n");
       },
       [](const fs::path& dir) {
         return std::vector<std::string>{"/usr/sbin/nginx", "-c", (dir / "nginx.conf").string(),
                                         "-p", dir.string()};
       }},
      {"haproxy", "/usr/sbin/haproxy",
       [](const fs::path& dir, int port, int backend) {
         WriteFile(dir / "haproxy.cfg",
                   "global\n  maxconn 256\ndefaults\n  mode http\n  timeout connect 2s\n"
                   "  timeout client 60s\n  timeout server 60s\n"
                   "frontend in\n  bind 127.0.0.1:" +
                       std::to_string(port) +
                       "\n"
                       "  default_backend central\nbackend central\n"
                       "  server c 127.0.0.1:" +
                       std::to_string(backend) + "\n");
       },
       [](const fs::path& dir) {
         return std::vector<std::string>{"/usr/sbin/haproxy", "-db", "-f",
                                         (dir / "haproxy.cfg").string()};
       }},
      {"lighttpd", "/usr/sbin/lighttpd",
       [](const fs::path& dir, int port, int backend) {
         fs::create_directories(dir / "www");
         WriteFile(dir / "lighttpd.conf",
                   "server.modules = (\"mod_proxy\")\n"
                   "server.document-root = \"" +
                       (dir / "www").string() +
                       "\"\n"
                       "server.bind = \"127.0.0.1\"\nserver.port = " +
                       std::to_string(port) +
                       "\n"
                       "server.errorlog = \"" +
                       (dir / "error.log").string() +
                       "\"\n"
                       "server.max-request-size = 65536\n"
                       "proxy.server = (\"\" => ((\"host\" => \"127.0.0.1\", \"port\" => " +
                       std::to_string(backend) + ")))\n");
       },
       [](const fs::path& dir) {
         return std::vector<std::string>{"/usr/sbin/lighttpd", "-D", "-f",
                                         (dir / "lighttpd.conf").string()};
       }},
      {"caddy", "/usr/bin/caddy",
       [](const fs::path& dir, int port, int backend) {
         WriteFile(dir / "Caddyfile",
                   "{\n  admin off\n  auto_https off\n}\n"
                   "http://127.0.0.1:" +
                       std::to_string(port) +
                       " {\n"
                       "  reverse_proxy 127.0.0.1:" +
                       std::to_string(backend) + "\n}\n");
       },
       [](const fs::path& dir) {
         return std::vector<std::string>{"/usr/bin/caddy", "run",
                                         "--config",       (dir / "Caddyfile").string(),
                                         "--adapter",      "caddyfile"};
       }},
  };
  return fronts;
}

// A front as a child process, started and stopped by PID.
class FrontProcess {
 public:
  FrontProcess(const Front& front, fs::path dir, int port)
      : front_(front), dir_(std::move(dir)), port_(port) {}
  ~FrontProcess() { Kill(SIGTERM); }
  FrontProcess(const FrontProcess&) = delete;
  FrontProcess& operator=(const FrontProcess&) = delete;

  // Starts it and waits (bounded) until it accepts connections.
  [[nodiscard]] bool Start() {
    auto args = front_.argv(dir_);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Caddy keeps its state under $HOME / $XDG_*: the test's folder, not the machine's.
    std::vector<std::string> env = {
        "HOME=" + dir_.string(), "XDG_DATA_HOME=" + (dir_ / "data").string(),
        "XDG_CONFIG_HOME=" + (dir_ / "config").string(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = (dir_ / (front_.name + ".out")).string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return false;
    }
    return fwdsink::test::WaitFor([&] { return fwdsink::test::PortOpen(port_); }, 10s);
  }
  // Sends `sig` and reaps the process.
  void Kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string output() const { return fwdsink::test::ReadFile(dir_ / (front_.name + ".out")); }

 private:
  const Front& front_;
  fs::path dir_;
  int port_;
  pid_t pid_ = -1;
};

// Rows with random pads, so that zstd leaves about half of them on the wire.
std::vector<std::string> Rows(const std::string& tag) {
  std::mt19937 random(41);
  std::vector<std::string> rows;
  rows.reserve(kRows);
  for (int i = 0; i < kRows; ++i) {
    std::string row = "{\"front\":\"" + tag + "\",\"i\":" + std::to_string(i) + ",\"pad\":\"";
    while (row.size() < 97) row += "0123456789abcdef"[random() % 16];
    rows.push_back(row + "\"}");
  }
  return rows;
}

std::size_t StoredOnce(const CentralProcess& central, std::size_t* twice) {
  std::map<std::string, int> seen;
  for (const auto& r : central.received_rows()) seen[r] += 1;
  *twice = 0;
  for (const auto& [row, n] : seen) *twice += n > 1;
  return seen.size();
}

// The daemon with its defaults through `front`, the receiver throttling behind it;
// `kills` times the front is SIGKILLed and restarted mid-upload.
void Run(const Front& front, int kills) {
  const std::string tag = front.name + "-" + std::to_string(kills);
  const fs::path dir = CentralProcess::ScratchDir("fronts_" + tag);
  CentralProcess central(dir / "central");
  // The throttle of the report: 4 MB/s with a burst of 1 MB (a 429 with Retry-After).
  REQUIRE(central.Start({"--rate", "4000000", "--burst", "1000000"}));
  const int port = fwdsink::test::FreePort();
  front.configure(dir / "front", port, central.port());
  FrontProcess proxy(front, dir / "front", port);
  REQUIRE_MESSAGE(proxy.Start(), proxy.output());
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  const auto rows = Rows(tag);
  for (int p = 0; p < 4; ++p) {
    std::vector<std::string> part(rows.begin() + p * (kRows / 4),
                                  rows.begin() + (p + 1) * (kRows / 4));
    fwdsink::test::WriteLines(spool / "ready" / (tag + "-" + std::to_string(p) + ".ndjson"), part);
  }
  DaemonProcess daemon(dir, "forward",
                       {"forward", "--spool", spool.string(), "--url",
                        "http://127.0.0.1:" + std::to_string(port) + "/ingest", "--log-json"});
  REQUIRE(daemon.started());
  std::size_t twice = 0;
  for (int k = 1; k <= kills; ++k) {
    // Mid-upload: a share of the rows is in, the rest is not.
    const std::size_t at = rows.size() * static_cast<std::size_t>(k) / (kills + 2);
    REQUIRE_MESSAGE(
        fwdsink::test::WaitFor([&] { return StoredOnce(central, &twice) >= at; }, 60s, 100ms),
        daemon.err());
    proxy.Kill(SIGKILL);
    REQUIRE_MESSAGE(proxy.Start(), proxy.output());
    CHECK_FALSE(daemon.Wait(0ms).has_value());
  }
  const bool all = fwdsink::test::WaitFor(
      [&] { return StoredOnce(central, &twice) == rows.size() && daemon.ReadyLeft() == 0; }, 120s,
      100ms);
  CHECK_MESSAGE(all,
                daemon.err().substr(daemon.err().size() > 4000 ? daemon.err().size() - 4000 : 0));
  CHECK(twice == 0);
  CHECK_FALSE(daemon.Wait(0ms).has_value());  // up: nothing stopped it but us
  CHECK(daemon.err().find("\"event\":\"forward.aborted\"") == std::string::npos);
  daemon.Signal(SIGTERM);
  CHECK(daemon.Wait(10s) == std::optional<int>(0));
}

void Both(const std::string& name) {
  for (const Front& f : Fronts()) {
    if (f.name != name) continue;
    if (!fs::exists(f.binary)) {
      MESSAGE(name << " is not installed (scripts/deps.sh installs it): skipped");
      return;
    }
    SUBCASE("a clean run") { Run(f, 0); }
    SUBCASE("the front SIGKILLed and restarted twice mid-upload") { Run(f, 2); }
  }
}

}  // namespace

TEST_CASE("fronts: nginx") { Both("nginx"); }
TEST_CASE("fronts: haproxy") { Both("haproxy"); }
TEST_CASE("fronts: lighttpd") { Both("lighttpd"); }
TEST_CASE("fronts: caddy") { Both("caddy"); }
