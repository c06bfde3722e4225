// SPDX-License-Identifier: Apache-2.0
// README promises of the daemon that had no test, checked on the `fwdsink` binary as a
// process on 127.0.0.1, against the reference receiver or, where an exact sequence of
// answers is needed, an in-process scripted server: `--once` exit 77 on a refused
// token, driver.permanent_error and exit 78 for a pass of 404/405/415, a torn tail and
// a row over the line limit moved to dead/ with their event, /readyz 503 when the
// spool's folders are unusable, credentials never in any log line, `fwdsink status`
// writing nothing, and `fwdsink --version`. (The library's side is in
// readme_promises_test.)
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "fwdsink/spool.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/spool_writer.h"
#include "fwdsink/version.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/metrics_client.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::Get;
using fwdsink::test::Got;
using fwdsink::test::MetricsAddress;
using fwdsink::test::ReadFile;
using fwdsink::test::WriteFile;
using fwdsink_test::ScriptedServer;
using namespace std::chrono_literals;

constexpr auto kWait = 20s;         // a --once pass, or any condition polled for
constexpr auto kStopDeadline = 5s;  // SIGTERM to exit

template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds timeout = kWait) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

std::string Url(const CentralProcess& c) {
  return "http://127.0.0.1:" + std::to_string(c.port()) + "/ingest";
}

std::size_t Count(const std::string& text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string Event(std::string_view name) { return "\"event\":\"" + std::string(name) + "\""; }

// Seals one partition of `rows` small rows through SpoolWriter; returns its name.
std::string SealRows(const fs::path& spool, int rows, int tag) {
  auto w = fwdsink::SpoolWriter::Open(spool);
  REQUIRE(w.ok());
  for (int i = 0; i < rows; ++i) {
    REQUIRE(
        w->Append("{\"tag\":" + std::to_string(tag) + ",\"i\":" + std::to_string(i) + "}").ok());
  }
  auto sealed = w->Seal();
  REQUIRE(sealed.ok());
  REQUIRE(sealed->has_value());
  return **sealed;
}

// One `fwdsink forward --once` pass with the log at debug level; returns its exit code
// (-1 if it did not finish) and keeps what it wrote in `log`.
int Once(const fs::path& dir, const std::string& tag, const fs::path& spool, const std::string& url,
         std::vector<std::string> extra, std::string* log) {
  std::vector<std::string> args = {"forward", "--once",     "--spool",     spool.string(), "--url",
                                   url,       "--log-json", "--log-level", "debug"};
  args.insert(args.end(), extra.begin(), extra.end());
  DaemonProcess d(dir, tag, args);
  const auto code = d.Wait(kWait);
  *log = d.out() + d.err();
  return code.value_or(-1);
}

// The rows files of the dead letters in SPOOL/dead, sorted.
std::vector<fs::path> DeadRowFiles(const fs::path& spool) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(spool / "dead")) {
    if (e.path().extension() == ".ndjson") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The rows of every dead letter's rows file (whole files).
std::vector<std::string> DeadRows(const fs::path& spool) {
  std::vector<std::string> rows;
  for (const auto& f : DeadRowFiles(spool)) {
    for (auto& r : fwdsink::test::ReadLines(f)) rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

// ---- "--once ... 77 token refused": a 401 again after the token was re-read.

TEST_CASE("forward --once exits 77 when the token is refused after the refresh") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_token");
  const fs::path spool = dir / "spool";
  SealRows(spool, 3, 1);
  WriteFile(dir / "token", "tok-1\n");
  ScriptedServer server;
  server.Then(401);
  std::string log;

  SUBCASE("401, refreshed, 401 again: 77") {
    server.Then(401);
    CHECK(Once(dir, "refused", spool, server.url(), {"--token-file", (dir / "token").string()},
               &log) == 77);
    CHECK(Count(log, Event("forward.auth_failed")) >= 1);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 1);  // nothing lost
  }
  SUBCASE("twin: 401, refreshed, accepted: 0") {
    server.Then(200);
    CHECK(Once(dir, "refreshed", spool, server.url(), {"--token-file", (dir / "token").string()},
               &log) == 0);
    CHECK(Count(log, Event("forward.auth_failed")) == 0);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 0);
  }
  // Both runs: exactly one refresh, the same chunk under the token read from the file.
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].authorization == "Bearer tok-1");
  CHECK(reqs[1].authorization == "Bearer tok-1");
  CHECK(reqs[0].key == reqs[1].key);
}

// ---- "A pass in which every request fails the same way (404, 405, 415...) is named
// once as driver.permanent_error and exits 78 under --once" — without ClickHouse.

TEST_CASE("a pass of 404, 405 or 415 for every request is named once and exits 78") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_permanent");
  const fs::path spool = dir / "spool";
  SealRows(spool, 3, 1);
  SealRows(spool, 3, 2);
  // One request per partition (--pack-below 0); the packs' own case is the last.
  const std::vector<std::string> one_at_a_time = {"--concurrency", "1", "--pack-below", "0"};
  std::string log;
  for (const int status : {404, 405, 415}) {
    CAPTURE(status);
    ScriptedServer server;
    server.Then(status, {}, R"({"error":"no such thing"})");
    server.Then(status, {}, R"({"error":"no such thing"})");
    CHECK(Once(dir, "permanent", spool, server.url(), one_at_a_time, &log) == 78);
    CHECK(Count(log, Event("driver.permanent_error")) == 1);
    CHECK(log.find("\"status\":" + std::to_string(status)) != std::string::npos);
    CHECK(server.requests().size() == 2);  // one per partition: not retried in place
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 2);
  }
  SUBCASE("twin: one partition accepted, the pass is not permanent: 75, no event") {
    ScriptedServer server;
    server.Then(404, {}, R"({"error":"no such thing"})");
    server.Then(200);
    CHECK(Once(dir, "mixed", spool, server.url(), one_at_a_time, &log) == 75);
    CHECK(Count(log, Event("driver.permanent_error")) == 0);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 1);
  }
  SUBCASE("packs: the pack refused with 404 is the pass's one request, named once, 78") {
    // Partitions with no failure on record (the runs above gave a and b a cursor record,
    // which keeps a partition out of packs).
    const fs::path fresh = dir / "spool-packed";
    SealRows(fresh, 3, 1);
    SealRows(fresh, 3, 2);
    ScriptedServer server;
    server.Then(404, {}, R"({"error":"no such thing"})");
    CHECK(Once(dir, "packed", fresh, server.url(), {"--concurrency", "1"}, &log) == 78);
    CHECK(Count(log, Event("driver.permanent_error")) == 1);
    REQUIRE(server.requests().size() == 1);
    CHECK(server.requests()[0].key.starts_with("pack:"));
    CHECK(fwdsink::MeasureSpool(fresh)->ready_partitions == 2);
  }
}

// ---- The producer contract, 4: a torn tail goes to dead/ with its event.

TEST_CASE("forward --once sends the whole lines of a torn partition and dead-letters its tail") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_torn");
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  const std::string whole = "{\"i\":0}\n{\"i\":1}\n{\"i\":2}\n";
  std::string log;

  SUBCASE("torn: 65, the tail in dead/, named by the event and by `fwdsink dead list`") {
    WriteFile(spool / "ready" / "20260101T000000.000Z-1-00000001.ndjson", whole + "{\"i\":3");
    CHECK(Once(dir, "torn", spool, Url(central), {}, &log) == 65);
    CHECK(central.received_rows() ==
          std::vector<std::string>{"{\"i\":0}", "{\"i\":1}", "{\"i\":2}"});
    CHECK(Count(log, Event("driver.dead_letter")) == 1);
    CHECK(log.find("\"partition\":\"20260101T000000.000Z-1-00000001\"") != std::string::npos);
    CHECK(DeadRows(spool).back() == "{\"i\":3");
    DaemonProcess list(dir, "list", {"dead", "list", "--spool", spool.string()});
    REQUIRE(list.Wait(kWait) == std::optional<int>(0));
    CHECK(list.out().find("20260101T000000.000Z-1-00000001") != std::string::npos);
    CHECK(fwdsink::MeasureSpool(spool)->ready_partitions == 0);
  }
  SUBCASE("twin: the same rows ending in a newline: 0, nothing dead") {
    WriteFile(spool / "ready" / "20260101T000000.000Z-1-00000001.ndjson", whole + "{\"i\":3}\n");
    CHECK(Once(dir, "whole", spool, Url(central), {}, &log) == 0);
    CHECK(central.received_rows().size() == 4);
    CHECK(Count(log, Event("driver.dead_letter")) == 0);
    CHECK(fwdsink::MeasureSpool(spool)->dead_letters == 0);
  }
}

// ---- The producer contract, 3: a row longer than the line limit (16 MiB, or the
// chunk size if larger) is moved to dead/. What is checked holds whether the rows after
// it go with it or are sent: none is lost, the long row is in dead/, the event is said.

TEST_CASE("a row over the line limit goes to dead/ with its event and nothing is lost") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_long_row");
  const fs::path spool = dir / "spool";
  fs::create_directories(spool / "ready");
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  constexpr std::size_t kLimit = std::size_t{16} << 20;
  // {"long":"xxx..."}: one byte over the limit with its newline.
  const std::string long_row = "{\"long\":\"" + std::string(kLimit - 11, 'x') + "\"}";
  REQUIRE(long_row.size() == kLimit);
  const std::vector<std::string> before = {"{\"i\":0}", "{\"i\":1}"};
  const std::vector<std::string> after = {"{\"i\":2}", "{\"i\":3}"};
  {
    std::ofstream out(spool / "ready" / "20260101T000000.000Z-1-00000001.ndjson", std::ios::binary);
    for (const auto& r : before) out << r << '\n';
    out << long_row << '\n';
    for (const auto& r : after) out << r << '\n';
  }
  std::string log;
  const std::vector<std::string> plain = {"--compression", "identity"};  // 16 MiB: be quick

  SUBCASE("over the limit: 65, in dead/, the rows before it sent, none lost") {
    CHECK(Once(dir, "long", spool, Url(central), plain, &log) == 65);
    CHECK(Count(log, Event("driver.dead_letter")) >= 1);
    const auto received = central.received_rows();
    const auto dead = DeadRows(spool);
    CHECK(std::count(dead.begin(), dead.end(), long_row) == 1);
    CHECK(std::count(received.begin(), received.end(), long_row) == 0);
    for (const auto& r : before) CHECK(std::count(received.begin(), received.end(), r) == 1);
    for (const auto& r : after) {
      CAPTURE(r);
      CHECK(std::count(received.begin(), received.end(), r) +
                std::count(dead.begin(), dead.end(), r) >=
            1);
    }
  }
  SUBCASE("twin: --chunk-bytes 32m raises the limit, and the same row is sent") {
    CHECK(Once(dir, "long_ok", spool, Url(central),
               {"--chunk-bytes", "32m", "--compression", "identity"}, &log) == 0);
    CHECK(Count(log, Event("driver.dead_letter")) == 0);
    const auto received = central.received_rows();
    CHECK(received.size() == 5);
    CHECK(std::count(received.begin(), received.end(), long_row) == 1);
    CHECK(fwdsink::MeasureSpool(spool)->dead_letters == 0);
  }
}

// ---- "/readyz (200 when the spool's folders are usable ...; 503 with the reason
// otherwise)".

namespace {}  // namespace

TEST_CASE("/readyz answers 503 naming the folder while a spool folder is unusable") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_readyz");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start());
  SealRows(spool, 3, 1);
  DaemonProcess d(dir, "readyz",
                  {"forward", "--spool", spool.string(), "--url", Url(central), "--metrics-listen",
                   "127.0.0.1:0", "--log-json", "--poll", "50ms"});
  REQUIRE(d.started());
  const std::string address = MetricsAddress(d);
  REQUIRE_FALSE(address.empty());
  // Twin first: usable folders, 200.
  REQUIRE(WaitFor([&] { return central.received_rows().size() == 3; }));
  Got ready;
  REQUIRE(WaitFor([&] { return (ready = Get(address, "/readyz")).status == 200; }));
  CHECK(ready.body == "ready\n");

  for (const char* folder : {"state", "dead"}) {
    CAPTURE(folder);
    // A file where the folder was (root passes every permission check on a folder, so
    // a file stands in for the unusable folder): the driver cannot recreate it. The
    // driver repairs a missing folder every tick (50 ms here), so it may win the race
    // between the removal and the write: try again until the file is there.
    REQUIRE(WaitFor([&] {
      std::error_code ec;
      fs::remove_all(spool / folder, ec);
      return WriteFile(spool / folder, "not a folder");
    }));
    REQUIRE(WaitFor([&] { return (ready = Get(address, "/readyz")).status == 503; }));
    CHECK(ready.body.find("spool folder " + (spool / folder).string() + " is not usable") !=
          std::string::npos);
    CHECK(Get(address, "/healthz").status == 200);
    // Put back: ready again.
    fs::remove(spool / folder);
    fs::create_directories(spool / folder);
    REQUIRE(WaitFor([&] { return (ready = Get(address, "/readyz")).status == 200; }));
  }
  d.Signal(SIGTERM);
  CHECK(d.Wait(kStopDeadline) == std::optional<int>(0));
}

// ---- "--basic-auth-file F or http://user:pw@host/ (never logged)": the daemon's whole
// log — stderr, stdout and --log-file, at debug level — is scanned.

namespace {

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t(std::uint8_t(in[i])) << 16) |
                            (i + 1 < in.size() ? std::uint32_t(std::uint8_t(in[i + 1])) << 8 : 0) |
                            (i + 2 < in.size() ? std::uint32_t(std::uint8_t(in[i + 2])) : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// A port nothing listens on: bound without listen(), read, then closed.
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("credentials from --basic-auth-file or user:pw@host never reach a log line") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_secrets");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // Every other POST refused: backpressure events with keys, statuses and reasons (no
  // Retry-After: the 50 ms ladder waits, and --pacing off, keep the run short).
  REQUIRE(central.Start({"--fail-every", "2", "--fail-status", "503", "--no-retry-after"}));
  for (int p = 0; p < 3; ++p) SealRows(spool, 20, p);
  const std::string dead_port = std::to_string(ClosedPort());
  const std::string live_port = std::to_string(central.port());
  const fs::path log_file = dir / "daemon.log";
  std::vector<std::string> args = {"--log-file",
                                   log_file.string(),
                                   "--ladder",
                                   "0.05",
                                   "--jitter",
                                   "0",
                                   "--chunk-bytes",
                                   "200",
                                   "--failover-failures",
                                   "1",
                                   "--concurrency",
                                   "1",
                                   "--pacing",
                                   "off"};
  std::vector<std::string> secrets;
  std::string url;

  SUBCASE("--basic-auth-file") {
    WriteFile(dir / "basic", "alice:b4sic-s3cret\n");
    args.insert(args.end(), {"--basic-auth-file", (dir / "basic").string(), "--url",
                             "http://127.0.0.1:" + live_port + "/ingest"});
    url = "http://127.0.0.1:" + dead_port + "/ingest";
    secrets = {"b4sic-s3cret", Base64("alice:b4sic-s3cret")};
  }
  SUBCASE("user:pw@host, on the primary and on the fallback") {
    args.insert(args.end(),
                {"--url", "http://carol:url-s3cret@127.0.0.1:" + live_port + "/ingest"});
    url = "http://carol:url-s3cret@127.0.0.1:" + dead_port + "/ingest";
    secrets = {"url-s3cret", Base64("carol:url-s3cret")};
  }
  std::string log;
  // The first --url (Once's) is the dead port: the transport errors and the failover
  // to the live fallback are logged too.
  const int code = Once(dir, "secrets", spool, url, args, &log);
  CHECK(code == 0);
  log += ReadFile(log_file);
  REQUIRE(central.received_rows().size() == 60);
  REQUIRE(Count(log, Event("forward.backpressure")) >= 1);
  REQUIRE(Count(log, "\n") >= 20);
  for (const auto& secret : secrets) {
    CAPTURE(secret);
    CHECK(log.find(secret) == std::string::npos);
  }
  // Twin: the log does name the endpoints, so the scan looked where a secret would be.
  CHECK(log.find("127.0.0.1:" + dead_port) != std::string::npos);
  CHECK(log.find("127.0.0.1:" + live_port) != std::string::npos);
}

// ---- "fwdsink status ... takes no lock and writes nothing": the spool's whole tree
// (every entry's type, size, bytes and mtime, folders included) before and after.

namespace {

using Tree = std::map<std::string, std::string>;

Tree Snapshot(const fs::path& root) {
  Tree t;
  auto note = [&](const fs::path& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    std::string v = std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
                    std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) v += " " + ReadFile(p);
    t[fs::relative(p, root).string()] = v;
  };
  note(root);
  for (const auto& e : fs::recursive_directory_iterator(root)) note(e.path());
  return t;
}

// Returns the entries that differ between two snapshots, "name name ..." ("" if none).
std::string Changed(const Tree& a, const Tree& b) {
  std::string out;
  auto add = [&](const std::string& k) { out += (out.empty() ? "" : " ") + k; };
  for (const auto& [k, v] : a) {
    if (!b.contains(k) || b.at(k) != v) add(k);
  }
  for (const auto& [k, v] : b) {
    if (!a.contains(k)) add(k);
  }
  return out;
}

// A spool with everything status reads: two ready partitions (one with a cursor and a
// failure on record), a dead letter, the last error, the lock file.
void FillSpool(const fs::path& spool) {
  const std::string a = SealRows(spool, 4, 1);
  SealRows(spool, 2, 2);
  auto s = fwdsink::Spool::Open(spool);
  REQUIRE(s.ok());
  REQUIRE(s->SaveCursor(a, 0).ok());
  REQUIRE(s->RecordFailure(a, std::chrono::system_clock::now() - 1h).ok());
  const std::string rows = "{\"bad\":1}\n";
  WriteFile(s->PartitionPath("20260101T000000.000Z-1-00000009"), rows);
  REQUIRE(s->DeadLetterChunk("20260101T000000.000Z-1-00000009", 0, rows.size(), rows, 400,
                             "bad_row", std::chrono::system_clock::now())
              .ok());
  fs::remove(s->PartitionPath("20260101T000000.000Z-1-00000009"));
  fwdsink::Event e{.name = "forward.give_up", .partition = a, .status = 503, .reason = "outage"};
  REQUIRE(fwdsink::WriteLastError(spool, e, std::chrono::system_clock::now()).ok());
  auto lock = fwdsink::SpoolLock::Acquire(spool);  // writes SPOOL/lock, released at once
  REQUIRE(lock.ok());
}

}  // namespace

TEST_CASE("fwdsink status writes nothing: the spool's tree is identical before and after") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_status");
  const fs::path spool = dir / "spool";
  FillSpool(spool);

  SUBCASE("a spool as the daemon leaves it") {}
  SUBCASE("a spool without incoming/ (a producer that does not use SpoolWriter)") {
    fs::remove_all(spool / "incoming");
  }
  // mtimes have a granularity: a write now would show, not hide in the same tick.
  std::this_thread::sleep_for(20ms);
  const Tree before = Snapshot(spool);
  for (const bool json : {true, false}) {
    CAPTURE(json);
    std::vector<std::string> args = {"status", "--spool", spool.string()};
    if (json) args.push_back("--json");
    DaemonProcess status(dir, "status", args);
    REQUIRE(status.Wait(kWait) == std::optional<int>(0));
    CHECK(status.out().find("20260101T000000.000Z-1-00000009") == std::string::npos);
    CHECK_FALSE(status.out().empty());
  }
  CHECK(Changed(before, Snapshot(spool)) == "");

  // Twin: a command that does write (requeueing the dead letter) shows in the snapshot.
  const std::string dead_name = fs::path(DeadRowFiles(spool).at(0)).stem().string();
  DaemonProcess requeue(dir, "requeue", {"dead", "requeue", "--spool", spool.string(), dead_name});
  REQUIRE(requeue.Wait(kWait) == std::optional<int>(0));
  CHECK_FALSE(Changed(before, Snapshot(spool)).empty());
}

// ---- "fwdsink --version  # fwdsink, OpenSSL, zstd, cpp-httplib versions".

TEST_CASE("fwdsink --version names the versions of fwdsink and the libraries it runs with") {
  const fs::path dir = CentralProcess::ScratchDir("it_promises_version");
  // The project version, as CMakeLists.txt declares it.
  const std::string cmake = ReadFile(fs::path(FWDSINK_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch m;
  REQUIRE(std::regex_search(cmake, m, std::regex(R"(project\(fwdsink\s+VERSION\s+([0-9.]+))")));
  const std::string expected = "fwdsink " + m[1].str() + "\n" + OpenSSL_version(OPENSSL_VERSION) +
                               "\n" + "zstd " + ZSTD_versionString() + "\n" +
                               "cpp-httplib " CPPHTTPLIB_VERSION "\n";
  CHECK(fwdsink::VersionInfo() == expected);
  for (const char* spelling : {"--version", "version"}) {
    CAPTURE(spelling);
    DaemonProcess d(dir, "version", {spelling});
    REQUIRE(d.Wait(kWait) == std::optional<int>(0));
    CHECK(d.out() == expected);
    CHECK(d.err().empty());
  }
  SUBCASE("twin: a misspelling is a usage error that prints no versions") {
    DaemonProcess d(dir, "version", {"--verison"});
    CHECK(d.Wait(kWait) == std::optional<int>(64));
    CHECK(d.out().empty());
    CHECK(d.err().find("unknown command '--verison'") != std::string::npos);
  }
}
