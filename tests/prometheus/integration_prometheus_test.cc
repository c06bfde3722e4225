// SPDX-License-Identifier: Apache-2.0
// The alert rules and the metric names as Prometheus sees them (issue 41, ctest label
// `prometheus`, LLP 0025#alerts): the live /metrics of a daemon through `promtool check
// metrics`, and examples/prometheus/fwdsink-alerts.yml loaded into a real `prometheus`
// (Debian's, from scripts/deps.sh) that scrapes a running `fwdsink forward` every second.
// Prometheus runs on a free loopback port with its storage in the test's folder and is
// stopped by PID. A missing promtool or prometheus is reported and skipped, like the
// fronts (tests/net/integration_fronts_test.cc).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/metrics_client.h"
#include "support/ports.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
namespace fs = std::filesystem;

constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kPrometheus = "/usr/bin/prometheus";
// The names kept one release as deprecated duplicates (LLP 0025#deprecated); promtool's
// lint flags them ("abbreviated units"), and nothing else may be flagged.
const std::vector<std::string> kDeprecated = {"fwdsink_sink_pacing_bytes_per_s",
                                              "fwdsink_sink_pacing_requests_per_s"};
// Upper bound for the give-up alert to show up: the give-up comes ~7 s after the start
// (a 1 s inline budget, the first overload pause of 5 s, a 1 s horizon), then one
// scrape and one rule evaluation, 1 s each.
constexpr auto kAlertTimeout = 40s;

// Runs `promtool check metrics` on `page`; returns what it printed (stdout and stderr)
// and sets `code` to its exit status.
std::string PromtoolCheckMetrics(const fs::path& dir, const std::string& page, int& code) {
  const fs::path in = dir / "page.txt";
  const fs::path out = dir / "promtool.out";
  REQUIRE(fwdsink::test::WriteFile(in, page));
  const std::string cmd = std::string(kPromtool) + " check metrics < '" + in.string() + "' > '" +
                          out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return fwdsink::test::ReadFile(out);
}

// `page` without the HELP, TYPE and sample lines of the deprecated names.
std::string WithoutDeprecated(const std::string& page) {
  std::istringstream lines(page);
  std::string line, kept;
  while (std::getline(lines, line)) {
    bool deprecated = false;
    for (const std::string& name : kDeprecated) {
      // A name is followed by a space or '{' wherever it stands in a line.
      for (const char* after : {" ", "{"}) {
        deprecated = deprecated || line.find(name + after) != std::string::npos;
      }
    }
    if (!deprecated) kept += line + "\n";
  }
  return kept;
}

// Prometheus as a child process, started and stopped by PID.
class PrometheusProcess {
 public:
  explicit PrometheusProcess(fs::path dir) : dir_(std::move(dir)) {}
  ~PrometheusProcess() { Stop(); }
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  // Writes its config (the shipped rules, a 1 s scrape of `target` as job "fwdsink"),
  // starts it on a free loopback port and waits (bounded) until /-/ready answers 200.
  [[nodiscard]] bool Start(const std::string& target) {
    port_ = fwdsink::test::FreePort();
    fs::create_directories(dir_);
    const fs::path config = dir_ / "prometheus.yml";
    REQUIRE(fwdsink::test::WriteFile(
        config,
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "rule_files:\n  - " +
            (fs::path(FWDSINK_SOURCE_DIR) / "examples/prometheus/fwdsink-alerts.yml").string() +
            "\nscrape_configs:\n  - job_name: fwdsink\n    static_configs:\n"
            "      - targets: ['" +
            target + "']\n"));
    std::vector<std::string> args = {kPrometheus, "--config.file=" + config.string(),
                                     "--storage.tsdb.path=" + (dir_ / "data").string(),
                                     "--web.listen-address=" + address(), "--log.level=warn"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = (dir_ / "prometheus.out").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return false;
    }
    return fwdsink::test::WaitFor(
        [&] { return fwdsink::test::Get(address(), "/-/ready").status == 200; }, 20s, 100ms);
  }
  // SIGTERM, and reaps it.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string output() const { return fwdsink::test::ReadFile(dir_ / "prometheus.out"); }

  // The state ("pending", "firing") of `alert` in /api/v1/alerts, "" when it is not there.
  std::string AlertState(const std::string& alert) const {
    const auto got = fwdsink::test::Get(address(), "/api/v1/alerts");
    if (got.status != 200) return "";
    const auto j = nlohmann::json::parse(got.body, nullptr, false);
    if (j.is_discarded()) return "";
    for (const auto& a : j["data"]["alerts"]) {
      if (a["labels"].value("alertname", "") == alert) return a.value("state", "");
    }
    return "";
  }
  // The rule `alert` as /api/v1/rules reports it (health, state, lastError).
  nlohmann::json Rule(const std::string& alert) const {
    const auto got = fwdsink::test::Get(address(), "/api/v1/rules?type=alert");
    const auto j = nlohmann::json::parse(got.body, nullptr, false);
    if (j.is_discarded()) return {};
    for (const auto& g : j["data"]["groups"]) {
      for (const auto& r : g["rules"]) {
        if (r.value("name", "") == alert) return r;
      }
    }
    return {};
  }
  // The first value of an instant query, or -1 when it has none.
  double Query(const std::string& expr) const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(5, 0);
    auto res = cli.Get("/api/v1/query", httplib::Params{{"query", expr}}, httplib::Headers{});
    if (!res || res->status != 200) return -1;
    const auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].empty()) return -1;
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  }

 private:
  fs::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace

// Every family of a live page, deliveries and a dead-letter cap included: promtool's lint
// flags only the deprecated names, and nothing once they are left out.
TEST_CASE("prometheus: promtool check metrics on a live /metrics") {
  if (!fs::exists(kPromtool)) {
    MESSAGE("promtool is not installed (scripts/deps.sh installs prometheus): skipped");
    return;
  }
  const fs::path dir = CentralProcess::ScratchDir("prometheus_lint");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  fwdsink::test::WriteRows(spool / "ready" / "a.ndjson", 200);
  const std::string url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
  DaemonProcess daemon(dir, "daemon",
                       {"forward", "--spool", spool.string(), "--url", url, "--url",
                        "http://127.0.0.1:9/ingest", "--metrics-listen", "127.0.0.1:0",
                        "--max-dead-bytes", "1m", "--max-dead-age", "24h", "--poll", "0.2"});
  REQUIRE(daemon.started());
  const std::string address = fwdsink::test::MetricsAddress(daemon);
  REQUIRE_FALSE(address.empty());
  REQUIRE(fwdsink::test::WaitFor([&] { return daemon.ReadyLeft() == 0; }, 20s, 20ms));
  const auto page = fwdsink::test::Get(address, "/metrics");
  REQUIRE(page.status == 200);
  for (const std::string& name : kDeprecated) {
    CHECK(page.body.find("# TYPE " + name + " gauge") != std::string::npos);
    CHECK(page.body.find("# TYPE " + name + "econd gauge") != std::string::npos);  // renamed
  }
  // Each family once: no two families share a HELP text, the deprecated twins aside
  // (fwdsink_requests_in_flight and fwdsink_driver_requests_in_flight did before issue 41).
  std::map<std::string, std::string> help_of;
  std::istringstream page_lines(page.body);
  for (std::string line; std::getline(page_lines, line);) {
    if (!line.starts_with("# HELP ")) continue;
    const auto name_end = line.find(' ', 7);
    const std::string name = line.substr(7, name_end - 7);
    const std::string help = line.substr(name_end + 1);
    if (help.starts_with("Deprecated")) continue;
    const auto [it, inserted] = help_of.emplace(help, name);
    CHECK_MESSAGE(inserted, name << " repeats the family " << it->second);
  }
  CHECK(help_of.size() > 70);

  int code = -1;
  const std::string clean = PromtoolCheckMetrics(dir, WithoutDeprecated(page.body), code);
  CHECK_MESSAGE(clean.empty(), "promtool check metrics printed:\n" << clean);
  CHECK(code == 0);
  // Twin: the whole page, the deprecated names in it, is flagged for them and them alone.
  const std::string whole = PromtoolCheckMetrics(dir, page.body, code);
  std::istringstream lines(whole);
  std::string line;
  int flagged = 0;
  while (std::getline(lines, line)) {
    CAPTURE(line);
    CHECK((line.starts_with(kDeprecated[0] + " ") || line.starts_with(kDeprecated[1] + " ")));
    ++flagged;
  }
  CHECK(flagged == 2);
  daemon.Signal(SIGTERM);
  CHECK(daemon.Wait(10s) == std::optional<int>(0));
}

// The endpoint is gone and the horizon short: the partition is given up within seconds,
// and FwdsinkHorizonGiveUps must show up pending or firing. FwdsinkNotReady must not
// (the spool is healthy and a transport error is not a blocking error: LLP 0025#readiness),
// and the give-up alert must not show up before the give-up (the respool before it is
// not one).
TEST_CASE("prometheus: the shipped alert rules in a real Prometheus") {
  if (!fs::exists(kPrometheus)) {
    MESSAGE("prometheus is not installed (scripts/deps.sh installs it): skipped");
    return;
  }
  const fs::path dir = CentralProcess::ScratchDir("prometheus_alerts");
  const int metrics_port = fwdsink::test::FreePort();
  const std::string target = "127.0.0.1:" + std::to_string(metrics_port);
  PrometheusProcess prometheus(dir / "prometheus");
  REQUIRE_MESSAGE(prometheus.Start(target), prometheus.output());

  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  fwdsink::test::WriteRows(spool / "ready" / "a.ndjson", 100);
  const std::string gone =
      "http://127.0.0.1:" + std::to_string(fwdsink::test::FreePort()) + "/ingest";
  DaemonProcess daemon(dir, "daemon",
                       {"forward", "--spool", spool.string(), "--url", gone, "--metrics-listen",
                        target, "--horizon", "1", "--inline-budget", "1", "--ladder", "1",
                        "--jitter", "0", "--poll", "0.2", "--pack-below", "0"});
  REQUIRE(daemon.started());

  std::string state;
  bool not_ready_seen = false;
  bool early = false;  // the give-up alert before the daemon's give-up
  const bool shown = fwdsink::test::WaitFor(
      [&] {
        const bool gave_up = daemon.err().find("driver.horizon_give_up") != std::string::npos;
        state = prometheus.AlertState("FwdsinkHorizonGiveUps");
        not_ready_seen = not_ready_seen || !prometheus.AlertState("FwdsinkNotReady").empty();
        early = early || (!state.empty() && !gave_up);
        return !state.empty();
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(kAlertTimeout), 200ms);
  MESSAGE("FwdsinkHorizonGiveUps: " << (state.empty() ? "absent" : state));
  CHECK_MESSAGE(shown, "no give-up alert; the daemon's log:\n" << daemon.err());
  CHECK((state == "pending" || state == "firing"));
  CHECK_FALSE(early);
  // The scrape works and the spool is healthy, so FwdsinkNotReady was evaluated, fine.
  CHECK(prometheus.Query("up{job=\"fwdsink\"}") == 1);
  CHECK(prometheus.Query("fwdsink_ready") == 1);
  CHECK(prometheus.Query("fwdsink_driver_horizon_give_ups_total") >= 1);
  const nlohmann::json rule = prometheus.Rule("FwdsinkNotReady");
  CHECK(rule.value("health", "") == "ok");
  CHECK(rule.value("state", "") == "inactive");
  CHECK_FALSE(not_ready_seen);
  CHECK(prometheus.AlertState("FwdsinkNotReady").empty());

  daemon.Signal(SIGTERM);
  CHECK(daemon.Wait(10s) == std::optional<int>(0));
  prometheus.Stop();
}
