// SPDX-License-Identifier: Apache-2.0
// Operating the daemon (LLP 0025), as processes on 127.0.0.1: /metrics parsed by the
// prometheus_client parser with values that move as rows are sent, /healthz and
// /readyz, the sd_notify messages on a fake NOTIFY_SOCKET in order, `fwdsink status`
// beside a running daemon, and the dead-letter caps of `fwdsink forward`.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/daemon_spool.h"
#include "support/it_support.h"
#include "support/metrics_client.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Get;
using fwdsink::test::Got;
using fwdsink::test::MetricsAddress;
using fwdsink::test::SealRows;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kWait = 15s;         // any condition polled for
constexpr auto kStopDeadline = 5s;  // SIGTERM to exit
// Debian's interpreter: python3-prometheus-client is installed for it (scripts/deps.sh).
constexpr const char* kPython = "/usr/bin/python3";
// Parses a /metrics page with the real parser; prints {"sample{labels}": value, ...,
// "#type:family": type, "#endpoints": [...]} as JSON. The parser raises on bad text.
constexpr const char* kParse = R"PY(
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out, endpoints = {}, set()
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    out["#type:" + fam.name] = fam.type
    for s in fam.samples:
        endpoints.add(s.labels.get("endpoint"))
        rest = sorted((k, v) for k, v in s.labels.items() if k != "endpoint")
        key = s.name + ("{" + ",".join(k + "=" + v for k, v in rest) + "}" if rest else "")
        out[key] = s.value
out["#endpoints"] = sorted(e for e in endpoints if e is not None)
out["#unlabelled"] = len([e for e in endpoints if e is None])
print(json.dumps(out))
)PY";

// Polls `done` every 10 ms until it holds or `timeout` passes.
template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds timeout = kWait) {
  return fwdsink::test::WaitFor(done, timeout, 10ms);
}

std::uint64_t ReadyCount(const fs::path& spool) {
  auto u = fwdsink::MeasureSpool(spool);
  return u.ok() ? u->ready_partitions : 999;
}

// Scrapes /metrics and parses it with prometheus_client.
json Scrape(const fs::path& dir, const std::string& address) {
  const Got page = Get(address, "/metrics");
  REQUIRE(page.status == 200);
  const fs::path text = dir / "metrics.txt", script = dir / "parse.py";
  fwdsink::test::WriteFile(text, page.body);
  fwdsink::test::WriteFile(script, kParse);
  const std::string cmd = std::string(kPython) + " " + script.string() + " " + text.string();
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = ::pclose(p);
  REQUIRE_MESSAGE(rc == 0, "the prometheus_client parser refused the page:\n" << page.body);
  return json::parse(out);
}

}  // namespace

TEST_CASE("/metrics parses with prometheus_client, and its values move as rows are sent") {
  const fs::path dir = CentralProcess::ScratchDir("integration_ops_metrics");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  SealRows(spool, 30, 1);
  // Credentials and a query in the URL must not reach the endpoint label.
  const std::string url =
      "http://user:pw@127.0.0.1:" + std::to_string(central.port()) + "/ingest?secret=1";
  DaemonProcess d(dir, "metrics",
                  {"forward", "--spool", spool.string(), "--url", url, "--metrics-listen",
                   "127.0.0.1:0", "--log-json", "--poll", "50ms", "--max-dead-bytes", "1m"});
  REQUIRE(d.started());
  const std::string address = MetricsAddress(d);
  REQUIRE_FALSE(address.empty());
  REQUIRE(WaitFor([&] { return ReadyCount(spool) == 0; }));

  const json first = Scrape(dir, address);
  CHECK(first["#endpoints"] ==
        json::array({"http://127.0.0.1:" + std::to_string(central.port()) + "/ingest"}));
  CHECK(first["#unlabelled"] == 0);
  CHECK(first["#type:fwdsink_sink_rows_acked"] == "counter");
  CHECK(first["#type:fwdsink_ready_partitions"] == "gauge");
  CHECK(first["#type:fwdsink_request_duration_seconds"] == "histogram");
  CHECK(first["#type:fwdsink_sink_wait_seconds"] == "counter");  // wait_ms, in seconds
  CHECK(first["fwdsink_sink_rows_acked_total"] == 30);
  CHECK(first["fwdsink_ready_partitions"] == 0);
  CHECK(first["fwdsink_ready_bytes"] == 0);
  CHECK(first["fwdsink_dead_bytes_limit"] == 1048576);
  CHECK(first["fwdsink_wait_remaining_seconds{reason=}"] == 0);
  CHECK(first["fwdsink_driver_overload_level"] == 0);
  CHECK(first["fwdsink_ready"] == 1);
  const double requests = first["fwdsink_request_duration_seconds_count"];
  CHECK(requests >= 1);
  CHECK(first["fwdsink_request_duration_seconds_bucket{le=+Inf}"] == requests);
  const double acked_at = first["fwdsink_sink_last_ack_time_seconds"];
  CHECK(acked_at > 1.7e9);  // a real unix time

  // More rows: the counters, the histogram and the last-ack time move.
  std::this_thread::sleep_for(20ms);
  SealRows(spool, 12, 2);
  REQUIRE(WaitFor([&] { return ReadyCount(spool) == 0; }));
  REQUIRE(WaitFor([&] { return central.received_rows().size() == 42; }));
  const json second = Scrape(dir, address);
  CHECK(second["fwdsink_sink_rows_acked_total"] == 42);
  CHECK(second["fwdsink_sink_partitions_delivered_total"] == 2);
  CHECK(second["fwdsink_request_duration_seconds_count"].get<double>() > requests);
  CHECK(second["fwdsink_sink_last_ack_time_seconds"].get<double>() > acked_at);

  CHECK(Get(address, "/healthz").status == 200);
  const Got ready = Get(address, "/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.body == "ready\n");
  d.Signal(SIGTERM);
  CHECK(d.Wait(kStopDeadline) == std::optional<int>(0));
}

TEST_CASE("/readyz answers 503 with the reason after an auth failure; /healthz stays 200") {
  const fs::path dir = CentralProcess::ScratchDir("integration_ops_readyz");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--token", "right"}));
  const auto before_seal = std::chrono::system_clock::now();
  SealRows(spool, 5, 1);
  const auto sealed = std::chrono::system_clock::now();
  fwdsink::test::WriteFile(dir / "token", "wrong\n");
  DaemonProcess d(dir, "readyz",
                  {"forward", "--spool", spool.string(), "--url", Url(central), "--token-file",
                   (dir / "token").string(), "--metrics-listen", "127.0.0.1:0", "--log-json"});
  REQUIRE(d.started());
  const std::string address = MetricsAddress(d);
  REQUIRE_FALSE(address.empty());
  Got ready;
  REQUIRE(WaitFor([&] {
    ready = Get(address, "/readyz");
    return ready.status == 503;
  }));
  CHECK(ready.body.find("forward.auth_failed") != std::string::npos);
  CHECK(Get(address, "/healthz").status == 200);
  const auto before_scrape = std::chrono::system_clock::now();
  const json page = Scrape(dir, address);
  const auto scraped = std::chrono::system_clock::now();
  CHECK(page["fwdsink_ready"] == 0);
  CHECK(page["fwdsink_ready_partitions"] == 1);
  // The partition's age when scraped: no less than the time from its sealing to the
  // scrape, no more than from before its first row to after the scrape (file times
  // are coarse: 20 ms of slack on each side).
  const double age = page["fwdsink_oldest_ready_age_seconds"].get<double>();
  const auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
  CHECK(age > 0);
  CHECK(age >= secs(before_scrape - sealed) - 0.02);
  CHECK(age <= secs(scraped - before_seal) + 0.02);
  // The last error is on record for `fwdsink status`.
  auto last = fwdsink::ReadLastError(spool);
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->find("\"event\":\"forward.auth_failed\"") != std::string::npos);
  d.Signal(SIGTERM);
  CHECK(d.Wait(kStopDeadline) == std::optional<int>(0));
}

namespace {

// A datagram socket standing in for systemd's notify socket.
class FakeNotifySocket {
 public:
  explicit FakeNotifySocket(const fs::path& path) : path_(path) {
    fs::remove(path_);
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path_.string().size() < sizeof addr.sun_path);
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{0, 100'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~FakeNotifySocket() {
    ::close(fd_);
    fs::remove(path_);
  }
  // Receives what has arrived (waiting at most 100 ms for the first datagram).
  void Drain() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return;
      messages.emplace_back(buf, static_cast<std::size_t>(n));
    }
  }
  std::size_t Count(std::string_view needle) const {
    std::size_t n = 0;
    for (const auto& m : messages) n += m.find(needle) != std::string::npos;
    return n;
  }
  std::vector<std::string> messages;

 private:
  fs::path path_;
  int fd_ = -1;
};

// Sets environment variables for the child spawned in its lifetime (DaemonProcess
// passes environ), and removes them again.
struct ScopedEnv {
  std::vector<std::string> names;
  ScopedEnv(std::initializer_list<std::pair<const char*, std::string>> vars) {
    for (const auto& [k, v] : vars) {
      ::setenv(k, v.c_str(), 1);
      names.emplace_back(k);
    }
  }
  ~ScopedEnv() {
    for (const auto& k : names) ::unsetenv(k.c_str());
  }
};

}  // namespace

TEST_CASE("sd_notify on a fake NOTIFY_SOCKET: READY=1, WATCHDOG=1 and STATUS=, then STOPPING=1") {
  const fs::path dir = CentralProcess::ScratchDir("integration_ops_notify");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  SealRows(spool, 5, 1);
  FakeNotifySocket sock(dir / "notify.sock");
  const std::vector<std::string> args = {"forward",    "--spool",    spool.string(),     "--url",
                                         Url(central), "--log-json", "--stats-interval", "100ms"};

  SUBCASE("with a watchdog: pings at half the period, in order") {
    std::optional<DaemonProcess> d;
    {
      ScopedEnv env(
          {{"NOTIFY_SOCKET", (dir / "notify.sock").string()}, {"WATCHDOG_USEC", "200000"}});
      d.emplace(dir, "notify", args);
    }
    REQUIRE(d->started());
    REQUIRE(WaitFor([&] {
      sock.Drain();
      return sock.Count("WATCHDOG=1") >= 4;
    }));
    d->Signal(SIGTERM);
    CHECK(d->Wait(kStopDeadline) == std::optional<int>(0));
    sock.Drain();
    REQUIRE(sock.messages.size() >= 6);
    CHECK(sock.messages.front().starts_with("READY=1\nSTATUS=fwdsink: "));
    CHECK(sock.Count("READY=1") == 1);
    CHECK(sock.messages.back().starts_with("STOPPING=1"));
    CHECK(sock.Count("STOPPING=1") == 1);
    for (std::size_t i = 1; i + 1 < sock.messages.size(); ++i) {
      CHECK(sock.messages[i].find("STATUS=fwdsink: ") != std::string::npos);
    }
  }
  SUBCASE("twin: no WATCHDOG_USEC, no WATCHDOG=1 (STATUS= still sent)") {
    std::optional<DaemonProcess> d;
    {
      ScopedEnv env({{"NOTIFY_SOCKET", (dir / "notify.sock").string()}});
      d.emplace(dir, "notify", args);
    }
    REQUIRE(d->started());
    REQUIRE(WaitFor([&] {
      sock.Drain();
      return sock.Count("STATUS=fwdsink: ") >= 4;
    }));
    d->Signal(SIGTERM);
    CHECK(d->Wait(kStopDeadline) == std::optional<int>(0));
    sock.Drain();
    CHECK(sock.messages.front().starts_with("READY=1"));
    CHECK(sock.messages.back().starts_with("STOPPING=1"));
    CHECK(sock.Count("WATCHDOG=1") == 0);
  }
}

TEST_CASE("fwdsink status beside a running daemon: backlog, cursors, dead letters, last error") {
  const fs::path dir = CentralProcess::ScratchDir("integration_ops_status");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // Every POST refused with 503: the partitions stay, the daemon keeps the lock.
  REQUIRE(central.Start({"--fail-every", "1", "--fail-status", "503"}));
  SealRows(spool, 5, 1);
  SealRows(spool, 7, 2);
  {
    auto s = fwdsink::Spool::Open(spool);
    REQUIRE(s.ok());
    const std::string rows = "{\"bad\":1}\n";
    fwdsink::test::WriteFile(s->PartitionPath("20261130T090000.000Z-1-00000001"), rows);
    const auto now = std::chrono::system_clock::now();
    REQUIRE(s->DeadLetterChunk("20261130T090000.000Z-1-00000001", 0, rows.size(), rows, 400,
                               "bad_row", now)
                .ok());
    fwdsink::test::WriteFile(s->PartitionPath("20261130T090000.000Z-1-00000002"), rows);
    REQUIRE(s->DeadLetterPartition("20261130T090000.000Z-1-00000002", 0, "horizon", 503, now).ok());
    fs::remove(s->PartitionPath("20261130T090000.000Z-1-00000001"));
  }
  DaemonProcess d(dir, "daemon",
                  {"forward", "--spool", spool.string(), "--url", Url(central), "--log-json",
                   "--ladder", "0.2", "--inline-budget", "0.5", "--jitter", "0"});
  REQUIRE(d.started());
  // A give-up is recorded as the last error.
  REQUIRE(WaitFor([&] {
    auto last = fwdsink::ReadLastError(spool);
    return last.ok() && last->has_value();
  }));

  std::string out;
  {
    DaemonProcess status(dir, "status", {"status", "--spool", spool.string(), "--json"});
    REQUIRE(status.Wait(kWait) == std::optional<int>(0));
    out = status.out();
  }
  const json j = json::parse(out);
  CHECK(j["backlog"]["partitions"] == 2);
  CHECK(j["backlog"]["bytes"].get<std::uint64_t>() > 0);
  REQUIRE(j["partitions"].size() == 2);
  CHECK(j["partitions"][0]["cursor"] == 0);
  CHECK(j["partitions"][0].contains("cursor_state"));
  CHECK(j["lock_pid_alive"] == true);
  CHECK(j["dead"]["total"] == 2);
  REQUIRE(j["dead"]["by_reason"].size() == 2);
  CHECK(j["dead"]["by_reason"][0]["reason"] == "bad_row");
  CHECK(j["dead"]["by_reason"][0]["count"] == 1);
  CHECK(j["dead"]["by_reason"][1]["reason"] == "horizon");
  CHECK(j["last_error"]["event"] == "forward.give_up");

  {
    DaemonProcess status(dir, "status_human", {"status", "--spool", spool.string()});
    REQUIRE(status.Wait(kWait) == std::optional<int>(0));
    const std::string screen = status.out();
    CHECK(screen.find("backlog: 2 partitions") != std::string::npos);
    CHECK(screen.find("dead letters: 2") != std::string::npos);
    CHECK(screen.find("last error: {") != std::string::npos);
  }
  // The daemon was not disturbed: it still runs and holds the lock.
  CHECK_FALSE(d.Wait(0ms).has_value());
  d.Signal(SIGTERM);
  CHECK(d.Wait(kStopDeadline) == std::optional<int>(0));

  SUBCASE("twin: not a spool, exit 66") {
    DaemonProcess status(dir, "status_none", {"status", "--spool", (dir / "nothing").string()});
    CHECK(status.Wait(kWait) == std::optional<int>(66));
  }
}

TEST_CASE("fwdsink forward --max-dead-age purges old dead letters, with an event each") {
  const fs::path dir = CentralProcess::ScratchDir("integration_ops_caps");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  auto seed = [&] {
    auto s = fwdsink::Spool::Open(spool);
    REQUIRE(s.ok());
    const std::string rows = "{\"bad\":1}\n";
    for (int i = 1; i <= 2; ++i) {
      const std::string name = "20261130T090000.000Z-1-0000000" + std::to_string(i);
      fwdsink::test::WriteFile(s->PartitionPath(name), rows);
      REQUIRE(s->DeadLetterChunk(name, 0, rows.size(), rows, 400, "bad_row",
                                 std::chrono::system_clock::now() - 2h)
                  .ok());
      fs::remove(s->PartitionPath(name));
    }
  };
  seed();
  const std::vector<std::string> base = {"forward", "--once",     "--spool",   spool.string(),
                                         "--url",   Url(central), "--log-json"};

  SUBCASE("over the age cap") {
    auto args = base;
    args.insert(args.end(), {"--max-dead-age", "1h"});
    DaemonProcess d(dir, "caps", args);
    REQUIRE(d.Wait(kWait) == std::optional<int>(0));
    const std::string err = d.err();
    std::size_t events = 0;
    for (auto at = err.find("\"event\":\"driver.dead_purged\""); at != std::string::npos;
         at = err.find("\"event\":\"driver.dead_purged\"", at + 1)) {
      ++events;
    }
    CHECK(events == 2);
    CHECK(err.find("\"dead_purged\":2") != std::string::npos);  // daemon.exit's driver counters
    CHECK(err.find("\"max_dead_age_s\":3600") != std::string::npos);  // the spool vs its caps
    CHECK(fwdsink::MeasureSpool(spool)->dead_letters == 0);
  }
  SUBCASE("twin: under the cap, kept") {
    auto args = base;
    args.insert(args.end(), {"--max-dead-age", "3h", "--max-dead-bytes", "1m"});
    DaemonProcess d(dir, "caps", args);
    REQUIRE(d.Wait(kWait) == std::optional<int>(0));
    CHECK(d.err().find("driver.dead_purged") == std::string::npos);
    CHECK(fwdsink::MeasureSpool(spool)->dead_letters == 2);
  }
}

TEST_CASE("the ops flags: bad values exit 64 naming the flag; a taken port too") {
  const fs::path dir = CentralProcess::ScratchDir("integration_ops_flags");
  const std::string spool = (dir / "spool").string();
  auto run = [&](std::vector<std::string> extra, std::string* err) {
    std::vector<std::string> args = {"forward", "--once", "--spool",
                                     spool,     "--url",  "http://127.0.0.1:9/ingest"};
    args.insert(args.end(), extra.begin(), extra.end());
    DaemonProcess d(dir, "flags", args);
    const auto code = d.Wait(kWait);
    *err = d.err();
    return code.value_or(-1);
  };
  std::string err;
  CHECK(run({"--metrics-listen", "nowhere"}, &err) == 64);
  CHECK(err.find("fwdsink: --metrics-listen: 'nowhere' is not HOST:PORT") != std::string::npos);
  CHECK(run({"--metrics-listen", "127.0.0.1:70000"}, &err) == 64);
  CHECK(run({"--max-dead-bytes", "0"}, &err) == 64);
  CHECK(err.find("--max-dead-bytes") != std::string::npos);
  CHECK(run({"--max-dead-age", "soon"}, &err) == 64);
  CHECK(err.find("--max-dead-age") != std::string::npos);
  // A port already taken: the daemon refuses to start rather than run unobserved.
  httplib::Server taken;
  const int port = taken.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  CHECK(run({"--metrics-listen", "127.0.0.1:" + std::to_string(port)}, &err) == 64);
  CHECK(err.find("--metrics-listen: cannot listen on") != std::string::npos);
  // With --log-file as well: the log file is closed once (it was closed twice: abort, 134).
  CHECK(run({"--metrics-listen", "127.0.0.1:" + std::to_string(port), "--log-file",
             (dir / "flags.log").string()},
            &err) == 64);
  CHECK(err.find("--metrics-listen: cannot listen on") != std::string::npos);
  // Twin: good values start and finish a pass.
  CHECK(run({"--metrics-listen", "127.0.0.1:0", "--max-dead-bytes", "1g", "--max-dead-age", "168h"},
            &err) == 0);
}
