// SPDX-License-Identifier: Apache-2.0
// Behind a real load balancer: nginx round-robin over two fwdsink-central processes
// with proxy_next_upstream; one backend killed mid-run. Every row arrives at least
// once across the two; the rows stored at both are bounded by the chunks in flight
// when the backend died (one: the daemon runs one sender, and the kill lands while the
// dead backend holds its request). Needs nginx (nginx-light, scripts/deps.sh); ctest label `lb`.
// @ref LLP 0019#load-balancer
#include <netinet/in.h>
#include <sys/socket.h>

#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <thread>

#include "fwdsink/forward_pack.h"
#include "fwdsink/pack_manifest.h"
#include "fwdsink/transport.h"
#include "support/it_support.h"
#include "support/ports.h"
#include "support/two_receivers.h"

namespace fwdsink::test {
namespace {

using std::chrono::seconds;

constexpr const char* kNginx = "/usr/sbin/nginx";

// nginx round-robin over the two backends; a POST that fails on one (connection
// refused, reset, a 502/503) is passed to the next: non_idempotent allows it for POST,
// which the key makes safe to repeat.
void WriteNginxConf(const fs::path& dir, int port, int a, int b) {
  fs::create_directories(dir / "tmp");
  std::ofstream conf(dir / "nginx.conf");
  if (::getuid() == 0) conf << "user root;\n";
  conf << "worker_processes 1;\ndaemon off;\npid " << (dir / "nginx.pid").string() << ";\n"
       << "error_log " << (dir / "error.log").string() << " warn;\n"
       << "events { worker_connections 256; }\nhttp {\n  access_log off;\n"
       << "  client_body_temp_path " << (dir / "tmp/body").string() << ";\n"
       << "  proxy_temp_path " << (dir / "tmp/proxy").string() << ";\n"
       << "  fastcgi_temp_path " << (dir / "tmp/fcgi").string() << ";\n"
       << "  uwsgi_temp_path " << (dir / "tmp/uwsgi").string() << ";\n"
       << "  scgi_temp_path " << (dir / "tmp/scgi").string() << ";\n"
       << "  client_max_body_size 64m; client_body_buffer_size 1m;\n"
       << "  upstream central {\n"
       << "    server 127.0.0.1:" << a << " max_fails=1 fail_timeout=2s;\n"
       << "    server 127.0.0.1:" << b << " max_fails=1 fail_timeout=2s;\n"
       << "    keepalive 8;\n  }\n"
       << "  server {\n    listen 127.0.0.1:" << port << ";\n    location / {\n"
       << "      proxy_http_version 1.1; proxy_set_header Connection \"\";\n"
       << "      proxy_next_upstream error timeout http_502 http_503 non_idempotent;\n"
       << "      proxy_next_upstream_tries 2;\n"
       << "      proxy_connect_timeout 1s; proxy_read_timeout 5s;\n"
       << "      proxy_pass http://central;\n    }\n  }\n}\n";
}

// nginx in front of one backend with limit_req at 1 request/s and no burst: the second
// request within a second is refused with 429 before nginx reads its body.
void WriteLimitConf(const fs::path& dir, int port, int backend) {
  fs::create_directories(dir / "tmp");
  std::ofstream conf(dir / "nginx.conf");
  if (::getuid() == 0) conf << "user root;\n";
  conf << "worker_processes 1;\ndaemon off;\npid " << (dir / "nginx.pid").string() << ";\n"
       << "error_log " << (dir / "error.log").string() << " warn;\n"
       << "events { worker_connections 256; }\nhttp {\n  access_log off;\n"
       << "  client_body_temp_path " << (dir / "tmp/body").string() << ";\n"
       << "  proxy_temp_path " << (dir / "tmp/proxy").string() << ";\n"
       << "  fastcgi_temp_path " << (dir / "tmp/fcgi").string() << ";\n"
       << "  uwsgi_temp_path " << (dir / "tmp/uwsgi").string() << ";\n"
       << "  scgi_temp_path " << (dir / "tmp/scgi").string() << ";\n"
       << "  client_max_body_size 64m; client_body_buffer_size 1m;\n"
       << "  limit_req_zone $binary_remote_addr zone=ingest:1m rate=1r/s;\n"
       << "  server {\n    listen 127.0.0.1:" << port << ";\n"
       << "    location /stats { proxy_pass http://127.0.0.1:" << backend << "; }\n"
       << "    location / {\n      limit_req zone=ingest; limit_req_status 429;\n"
       << "      proxy_http_version 1.1; proxy_set_header Connection \"\";\n"
       << "      proxy_pass http://127.0.0.1:" << backend << ";\n    }\n  }\n}\n";
}

// nginx as a child; stopped (TERM) and reaped when destroyed.
class NginxProcess {
 public:
  explicit NginxProcess(const fs::path& dir) {
    std::vector<std::string> args = {kNginx, "-c", (dir / "nginx.conf").string(), "-p",
                                     dir.string()};
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = (dir / "nginx.out").string();
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (posix_spawn(&pid_, kNginx, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~NginxProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  NginxProcess(const NginxProcess&) = delete;
  NginxProcess& operator=(const NginxProcess&) = delete;
  [[nodiscard]] bool running() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }

 private:
  pid_t pid_ = -1;
};

TEST_CASE("behind nginx: one backend killed mid-run, every row at least once") {
  if (!fs::exists(kNginx)) {
    MESSAGE("nginx is not installed (scripts/deps.sh installs nginx-light): skipped");
    return;
  }
  const fs::path dir = CentralProcess::ScratchDir("failover_lb");
  // Backend a answers slowly: when it is killed, a request is almost surely in flight
  // there (the case that matters), not between two requests.
  CentralProcess a(dir / "a");
  CentralProcess b(dir / "b");
  REQUIRE(a.Start({"--header-delay-ms", "100", "--header-delay-every", "1"}));
  REQUIRE(b.Start({"--header-delay-ms", "8", "--header-delay-every", "1"}));
  const int port = fwdsink::test::FreePort();
  WriteNginxConf(dir / "nginx", port, a.port(), b.port());
  NginxProcess nginx(dir / "nginx");
  httplib::Client probe("127.0.0.1", port);
  REQUIRE(WaitFor([&] { return static_cast<bool>(probe.Get("/stats")); }, seconds(10)));

  const fs::path spool = dir / "spool";
  const std::uint64_t rows =
      GenerateSpool(dir, spool, "1m", "4");  // one sender: 1 MB keeps it short
  // One sender (--concurrency 1), so one request is in flight when the backend dies:
  // the bound below is the one-sender bound.
  DaemonProcess daemon(
      dir, "daemon",
      {"forward", "--spool", spool.string(), "--url",
       "http://127.0.0.1:" + std::to_string(port) + "/ingest", "--chunk-bytes", "16k", "--ladder",
       "0.1", "--jitter", "0", "--poll", "0.1", "--concurrency", "1", "--log-json"});
  REQUIRE(daemon.started());
  // Kill one backend (no goodbye) once both hold rows, on the event that matters: a
  // holds a request (read to its end, answer not yet decided).
  REQUIRE(WaitFor([&] { return a.received_rows().size() + b.received_rows().size() > rows / 4; },
                  seconds(60)));
  nlohmann::json held;
  REQUIRE(WaitFor(
      [&] {
        held = a.Stats();
        return held.is_object() && held["held"] == 1;
      },
      seconds(10)));
  ::kill(a.pid(), SIGKILL);
  REQUIRE(WaitFor([&] { return ReadyLeft(spool) == 0; }, seconds(60)));
  daemon.Signal(SIGTERM);
  REQUIRE(daemon.Wait(seconds(10)) == 0);
  CHECK(nginx.running());
  (void)a.Stop();

  const AcrossTwo across = Across(a, b);
  const nlohmann::json exit = ExitLine(daemon.err());
  MESSAGE("rows " << rows << ": a " << across.rows_a << ", b " << across.rows_b << "; rows at both "
                  << across.rows_at_both << ", chunks at both " << across.chunks_at_both
                  << "; daemon transport errors " << exit["counters"]["transport_errors"]
                  << ", 5xx " << exit["counters"]["other_5xx"] << "+"
                  << exit["counters"]["status_503"]);
  CHECK(exit["driver"]["concurrency_limit"] == 1);  // the one sender the bound assumes
  CHECK(across.distinct_rows == rows);              // every row at least once across the two
  CHECK(across.rows_a > 0);
  CHECK(across.rows_b > 0);
  // The kill landed inside a request: a never decided one of the POSTs it had read.
  CHECK(a.request_log().size() < held["requests"].get<std::size_t>());
  // One sender, one request in flight when the backend died: nginx may have passed
  // that one on to the other backend after the dead one stored it.
  CHECK(across.chunks_at_both <= 1);
  // Each backend stored each row once; only that chunk's rows may be at both.
  CHECK(across.rows_a + across.rows_b == rows + across.rows_at_both);
  CHECK(across.rows_at_both <= across.chunks_at_both * (16 * 1024));
}

// fwdsink-central behind nginx with WriteLimitConf's limit_req (1 request/s, no burst),
// started and answering, and a transport to it: what the limit_req tests share. Skips
// (started() false, with a message) when nginx is not installed.
class BehindLimit {
 public:
  explicit BehindLimit(std::string_view name)
      : dir_(CentralProcess::ScratchDir(name)), central_(dir_ / "central") {
    if (!fs::exists(kNginx)) {
      MESSAGE("nginx is not installed (scripts/deps.sh installs nginx-light): skipped");
      return;
    }
    REQUIRE(central_.Start());
    const int port = fwdsink::test::FreePort();
    WriteLimitConf(dir_ / "nginx", port, central_.port());
    nginx_ = std::make_unique<NginxProcess>(dir_ / "nginx");
    httplib::Client probe("127.0.0.1", port);
    REQUIRE(WaitFor([&] { return static_cast<bool>(probe.Get("/stats")); }, seconds(10)));
    fwdsink::TransportOptions o;
    o.connect_timeout = seconds(2);
    o.read_timeout = seconds(10);
    auto created =
        fwdsink::HttpTransport::Create("http://127.0.0.1:" + std::to_string(port) + "/ingest", o);
    REQUIRE(created.ok());
    transport_ = std::move(created).value();
  }
  [[nodiscard]] bool started() const { return transport_ != nullptr; }
  fwdsink::HttpTransport& transport() { return *transport_; }
  CentralProcess& central() { return central_; }

 private:
  fs::path dir_;
  CentralProcess central_;
  std::unique_ptr<NginxProcess> nginx_;
  std::unique_ptr<fwdsink::HttpTransport> transport_;
};

// @ref LLP 0017#expect-continue — nginx answers Expect itself: 100 Continue when it reads
// a body to proxy it, and (100 and) 429 when limit_req refuses it.
TEST_CASE("behind nginx: a body over the Expect threshold is accepted, a limit_req refusal read") {
  BehindLimit lb("expect_lb");
  if (!lb.started()) return;
  auto& t = lb.transport();
  // 200 kB of valid rows, over the default threshold of 64 KiB.
  std::string body;
  for (int i = 0; body.size() < 200'000; ++i) body += "{\"i\":" + std::to_string(i) + "}\n";
  const std::size_t size = body.size();
  const auto post = [&](const std::string& key) {
    return t.Post({{"Content-Type", "application/x-ndjson"}, {"Idempotency-Key", key}}, body, "",
                  {});
  };
  // The probe's /stats is not limited: the first POST is the zone's first request.
  const auto accepted = post("a");
  CHECK_MESSAGE(accepted.error == fwdsink::TransportError::kNone, accepted.message);
  CHECK(accepted.response.status == 200);
  CHECK_FALSE(accepted.body_withheld);
  const auto refused = post("b");  // within the second: refused
  CHECK_MESSAGE(refused.error == fwdsink::TransportError::kNone, refused.message);
  CHECK(refused.response.status == 429);
  MESSAGE("nginx's 429: body " << std::string(refused.body_withheld ? "withheld"
                                                                    : "sent (after its 100)"));
  CHECK(body.size() == size);
  const auto log = lb.central().request_log();
  REQUIRE(log.size() == 1);  // the refused one never reached the backend
  CHECK(log[0]["status"] == 200);
  CHECK(log[0]["body_bytes"] == size);
}

// A pack's member keys go on up to kMaxMembersHeaderLines field lines of at most
// kMaxMembersHeaderBytes each (LLP 0027#choice): nginx's default buffers (4 x 8 KiB, one
// line per buffer) take them; the same keys on one line are refused before the backend.
TEST_CASE("behind nginx: a pack's member keys on three field lines pass, on one line not") {
  BehindLimit lb("members_lb");
  if (!lb.started()) return;

  // Keys of a daemon's names until three lines are as full as a pack may make them.
  std::vector<fwdsink::ManifestMember> members;
  std::vector<std::string_view> lines;
  for (int i = 0;; ++i) {
    members.push_back({"host-0042.collectd.cpu-" + std::to_string(1'000'000 + i), 2500, 0});
    const auto keys = fwdsink::MemberKeys(members);
    if (fwdsink::MembersHeaderLines(keys, fwdsink::kMaxMembersHeaderBytes).size() >
        fwdsink::kMaxMembersHeaderLines) {
      members.pop_back();
      break;
    }
  }
  const std::string keys = fwdsink::MemberKeys(members);
  lines = fwdsink::MembersHeaderLines(keys, fwdsink::kMaxMembersHeaderBytes);
  REQUIRE(lines.size() == fwdsink::kMaxMembersHeaderLines);
  MESSAGE(members.size() << " member keys, " << keys.size() << " bytes on " << lines.size()
                         << " lines");

  auto& t = lb.transport();
  std::string body = "{\"i\":1}\n";
  fwdsink::HeaderList base = {{"Content-Type", "application/x-ndjson"},
                              {"Idempotency-Key", "pack:members"}};
  // Twin first (nginx refuses it while reading the head, before limit_req counts it).
  auto one_line = base;
  one_line.emplace_back("Idempotency-Members", keys);
  const auto refused = t.Post(one_line, body, "", {});
  CHECK_MESSAGE(refused.error == fwdsink::TransportError::kNone, refused.message);
  CHECK(refused.response.status == 400);
  auto split = base;
  for (const auto l : lines) split.emplace_back("Idempotency-Members", std::string(l));
  const auto accepted = t.Post(split, body, "", {});
  CHECK_MESSAGE(accepted.error == fwdsink::TransportError::kNone, accepted.message);
  CHECK(accepted.response.status == 200);
  const auto log = lb.central().request_log();
  REQUIRE(log.size() == 1);  // the one-line head never reached the backend
  CHECK(log[0]["status"] == 200);
}

}  // namespace
}  // namespace fwdsink::test
