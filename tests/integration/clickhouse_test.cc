// SPDX-License-Identifier: Apache-2.0
// fwdsink against a real engine: Debian 12's clickhouse-server (18.16), started here as
// an ordinary process on 127.0.0.1 with a temporary config (never as a service), and
// the `fwdsink` daemon as a process. LABEL engines. Skipped with a message when
// clickhouse-server is not installed (scripts/deps.sh installs it).
// @ref LLP 0017#clickhouse-tests
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/forward_pack.h"
#include "fwdsink/pack_manifest.h"
#include "fwdsink/spool_writer.h"
#include "fwdsink/transport.h"
#include "support/clickhouse_process.h"
#include "support/daemon_process.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fwdsink::test::DaemonProcess;

constexpr const char* kServerBin = fwdsink::test::kClickHouseBin;
constexpr std::string_view kSuite = "clickhouse";
constexpr auto kRunTimeout = 90s;
constexpr int kExitOk = 0, kExitDataErr = 65, kExitConfig = 78;
constexpr std::uint64_t kRows = 200'000;
constexpr const char* kTable = "(ts String, host String, v Float64) ENGINE = MergeTree ORDER BY ts";

// One clickhouse-server for the whole suite (tests/support/clickhouse_process.h); stopped by PID
// (SIGTERM, then SIGKILL) at exit.
class ClickHouse {
 public:
  static ClickHouse* Get() {
    static std::unique_ptr<ClickHouse> server = Start();
    return server.get();
  }

  // Runs one query; returns the body, or "ERROR <status>: <body>".
  std::string Query(const std::string& sql) const { return server_->Query(sql); }
  std::string Url(const std::string& table, const std::string& extra = {}) const {
    return server_->Url(table, extra);
  }
  int port() const { return server_->port(); }
  void Table(const std::string& name) const {
    REQUIRE(Query("DROP TABLE IF EXISTS " + name) == "");
    REQUIRE(Query("CREATE TABLE " + name + " " + kTable) == "");
  }

 private:
  static std::unique_ptr<ClickHouse> Start() {
    auto server =
        fwdsink::test::ClickHouseProcess::Start(fwdsink::test::FreshDir(kSuite, "server"));
    if (!server) return nullptr;
    auto ch = std::unique_ptr<ClickHouse>(new ClickHouse());
    ch->server_ = std::move(server);
    return ch;
  }
  ClickHouse() = default;
  std::unique_ptr<fwdsink::test::ClickHouseProcess> server_;
};

std::string Row(std::uint64_t i) {
  char ts[32];
  std::snprintf(ts, sizeof ts, "2024-05-01T%09llu", static_cast<unsigned long long>(i));
  return std::string(R"({"ts":")") + ts + R"(","host":"web-)" + std::to_string(i % 17) +
         R"(","v":)" + std::to_string(i) + ".5}";
}

// Seals rows [0, n) (with `bad` replaced by a malformed row) into one partition.
void Seal(const fs::path& spool, std::uint64_t n, std::optional<std::uint64_t> bad = {}) {
  auto w = fwdsink::SpoolWriter::Open(spool);
  REQUIRE(w.ok());
  for (std::uint64_t i = 0; i < n; ++i) {
    REQUIRE(w->Append(bad && *bad == i ? R"({"ts":"bad","host":"h","v":"not a number"})" : Row(i))
                .ok());
  }
  REQUIRE(w->Seal().ok());
}

// Seals `partitions` partitions of `per` rows each, rows numbered on across them (with
// `bad` replaced by a malformed row): the small partitions a pack carries.
void SealSmall(const fs::path& spool, std::uint64_t partitions, std::uint64_t per,
               std::optional<std::uint64_t> bad = {}) {
  for (std::uint64_t p = 0; p < partitions; ++p) {
    auto w = fwdsink::SpoolWriter::Open(spool);
    REQUIRE(w.ok());
    for (std::uint64_t i = p * per; i < (p + 1) * per; ++i) {
      REQUIRE(w->Append(bad && *bad == i ? R"({"ts":"bad","host":"h","v":"not a number"})" : Row(i))
                  .ok());
    }
    REQUIRE(w->Seal().ok());
  }
}

// The value of counter `name` in the daemon's exit event (-1: not there).
long long ExitCounter(const std::string& err, const std::string& name) {
  const auto exit_at = err.find(R"("event":"daemon.exit")");
  if (exit_at == std::string::npos) return -1;
  const auto at = err.find("\"" + name + "\":", exit_at);
  if (at == std::string::npos) return -1;
  return std::stoll(err.substr(at + name.size() + 3));
}

// sum(v) of rows [0, n) without `skip`: sum of i + 0.5, exact in a double here.
std::string ExpectedSum(std::uint64_t n, std::optional<std::uint64_t> skip = {}) {
  double sum = static_cast<double>(n) * static_cast<double>(n - 1) / 2 + 0.5 * n;
  if (skip) sum -= static_cast<double>(*skip) + 0.5;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", sum);  // as ClickHouse prints a Float64
  return buf;
}

int RunDaemon(const fs::path& dir, std::vector<std::string> args, std::string* err = nullptr) {
  DaemonProcess d(dir, "daemon", std::move(args));
  const auto code = d.Wait(kRunTimeout);
  if (err) *err = d.err();
  return code.value_or(-1);
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Skips when clickhouse-server is not installed; fails when it is but did not start
// (a skip must never hide a broken server in CI).
#define REQUIRE_CLICKHOUSE(ch)                                 \
  ClickHouse* ch = ClickHouse::Get();                          \
  if (!ch) {                                                   \
    REQUIRE_MESSAGE(!fs::exists(kServerBin),                   \
                    "clickhouse-server did not start; see "    \
                    "FWDSINK_TEST_TMP/clickhouse/server");     \
    MESSAGE("skipped: " << kServerBin << " is not installed"); \
    return;                                                    \
  }

}  // namespace

TEST_CASE("ClickHouse: 200,000 rows arrive, with identity and with gzip") {
  REQUIRE_CLICKHOUSE(ch);
  for (const std::string codec : {"identity", "gzip"}) {
    CAPTURE(codec);
    const std::string table = "t_" + codec;
    ch->Table(table);
    const fs::path dir = fwdsink::test::FreshDir(kSuite, "bulk_" + codec);
    Seal(dir / "spool", kRows);
    std::string err;
    CHECK(RunDaemon(dir,
                    {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url(table),
                     "--once", "--log-json", "--profile", "clickhouse", "--compression", codec,
                     "--chunk-bytes", "1m"},
                    &err) == kExitOk);
    INFO(err.substr(0, 2000));
    // A plain MergeTree on one 18.16 server dedupes nothing: said once, at start.
    // @ref LLP 0017#dedup-window
    CHECK(Count(err, R"("event":"driver.engine_warning")") == 1);
    CHECK(err.find(R"("reason":"not_replicated")") != std::string::npos);
    CHECK(ch->Query("SELECT count(), uniqExact(ts), toString(sum(v)) FROM " + table) ==
          std::to_string(kRows) + "\t" + std::to_string(kRows) + "\t" + ExpectedSum(kRows) + "\n");
  }
}

// @ref LLP 0017#expect-continue — ClickHouse says 100 Continue and reads the body.
TEST_CASE(
    "ClickHouse: a body over the Expect threshold is asked for with 100 Continue and stored") {
  REQUIRE_CLICKHOUSE(ch);
  ch->Table("t_expect");
  std::string body;
  std::uint64_t rows = 0;
  while (body.size() < 200'000) body += Row(rows++) + "\n";
  const std::size_t size = body.size();
  SUBCASE("the server's answer to the head alone is 100 Continue") {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(ch->port()));
    REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const std::string head =
        "POST /?query=INSERT+INTO+t_expect+FORMAT+JSONEachRow HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Length: " +
        std::to_string(size) + "\r\nExpect: 100-continue\r\n\r\n";
    REQUIRE(::send(c, head.data(), head.size(), MSG_NOSIGNAL) == ssize_t(head.size()));
    std::string got;
    char buf[4096];
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (got.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < until) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(c);
    CHECK(got.substr(0, got.find("\r\n")) == "HTTP/1.1 100 Continue");
  }
  SUBCASE("the transport sends it after the 100 and the rows are stored") {
    fwdsink::TransportOptions o;  // default threshold 64 KiB
    auto t = fwdsink::HttpTransport::Create(ch->Url("t_expect"), o);
    REQUIRE(t.ok());
    const auto r = (*t)->Post({{"Content-Type", "application/x-ndjson"}}, body, "", {});
    CHECK_MESSAGE(r.error == fwdsink::TransportError::kNone, r.message);
    CHECK(r.response.status == 200);
    CHECK_FALSE(r.body_withheld);
    CHECK(body.size() == size);
    CHECK(ch->Query("SELECT count() FROM t_expect") == std::to_string(rows) + "\n");
  }
}

TEST_CASE("ClickHouse: one malformed row is dead-lettered, every other row delivered") {
  REQUIRE_CLICKHOUSE(ch);
  ch->Table("t_bad");
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "bad_row");
  constexpr std::uint64_t kSmall = 2000, kBad = 1234;
  Seal(dir / "spool", kSmall, kBad);
  std::string err;
  CHECK(RunDaemon(dir,
                  {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url("t_bad"),
                   "--once", "--log-json", "--profile", "clickhouse", "--compression", "identity",
                   "--chunk-bytes", "16k"},
                  &err) == kExitDataErr);
  INFO(err.substr(0, 3000));
  CHECK(ch->Query("SELECT count(), toString(sum(v)) FROM t_bad") ==
        std::to_string(kSmall - 1) + "\t" + ExpectedSum(kSmall, kBad) + "\n");
  CHECK(Count(err, R"("event":"driver.dead_letter")") == 1);
  CHECK(err.find(R"("reason":"CANNOT_PARSE_INPUT_ASSERTION_FAILED")") != std::string::npos);
  // The twin: without the profile, 18.16's 500 is a server error, retried in place.
  CHECK(err.find(R"("event":"forward.backpressure")") == std::string::npos);
}

// Issue 23 item 6: a pack of small partitions is one insert; a bad row in one member is
// dead-lettered in that member's partition alone (the refused pack's members go alone,
// LLP 0027#refusals). The twin:
// with --pack-below 0 each partition is its own insert. @ref LLP 0017#packs
TEST_CASE("ClickHouse: small partitions go as packs, one insert each; a bad row stays in its own") {
  REQUIRE_CLICKHOUSE(ch);
  constexpr std::uint64_t kParts = 300, kPer = 20, kBad = 2345;  // row 2345: partition 117
  for (const bool packed : {true, false}) {
    CAPTURE(packed);
    const std::string table = packed ? "t_packs" : "t_no_packs";
    ch->Table(table);
    const fs::path dir = fwdsink::test::FreshDir(kSuite, table);
    SealSmall(dir / "spool", kParts, kPer, kBad);
    std::vector<std::string> args = {"forward",
                                     "--spool",
                                     (dir / "spool").string(),
                                     "--url",
                                     ch->Url(table),
                                     "--once",
                                     "--log-json",
                                     "--profile",
                                     "clickhouse",
                                     "--compression",
                                     "identity",
                                     "--chunk-bytes",
                                     "64k"};
    if (!packed) args.insert(args.end(), {"--pack-below", "0"});
    std::string err;
    CHECK(RunDaemon(dir, args, &err) == kExitDataErr);
    INFO(err.substr(0, 3000));
    CHECK(ch->Query("SELECT count(), uniqExact(ts), toString(sum(v)) FROM " + table) ==
          std::to_string(kParts * kPer - 1) + "\t" + std::to_string(kParts * kPer - 1) + "\t" +
              ExpectedSum(kParts * kPer, kBad) + "\n");
    CHECK(Count(err, R"("event":"driver.dead_letter")") == 1);
    CHECK(Count(err, R"("event":"forward.delivered")") == kParts);
    const long long packs = ExitCounter(err, "packs_sent");
    const long long packed_parts = ExitCounter(err, "partitions_packed");
    MESSAGE("packs acknowledged: " << packs << ", partitions in them: " << packed_parts);
    if (packed) {
      // Partitions of ~1.1 KB: ~58 to a 64 KiB pack, six packs. The one with the bad row is
      // refused whole and its members go alone (LLP 0027#refusals): five acknowledged.
      CHECK(packs == 5);
      CHECK(packed_parts >= static_cast<long long>(kParts) - 64);
      CHECK(packed_parts < static_cast<long long>(kParts));
    } else {
      CHECK(packs == 0);
      CHECK(packed_parts == 0);
    }
  }
}

// A pack whose member keys pass one field line of kMaxMembersHeaderBytes carries them on
// several Idempotency-Members lines (LLP 0027#choice); ClickHouse's HTTP server (Poco,
// 8 KiB a line) takes them and stores the pack as one insert.
TEST_CASE("ClickHouse: a pack whose member keys need several header lines is one insert") {
  REQUIRE_CLICKHOUSE(ch);
  constexpr std::uint64_t kParts = 400, kPer = 1;
  const std::string table = "t_pack_lines";
  ch->Table(table);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, table);
  SealSmall(dir / "spool", kParts, kPer);
  std::vector<fwdsink::ManifestMember> members;
  for (const auto& e : fs::directory_iterator(dir / "spool" / "ready")) {
    members.push_back({e.path().stem().string(), fs::file_size(e.path()), 0});
  }
  const auto lines =
      fwdsink::MembersHeaderLines(fwdsink::MemberKeys(members), fwdsink::kMaxMembersHeaderBytes);
  MESSAGE(members.size() << " member keys on " << lines.size() << " header lines");
  REQUIRE(lines.size() >= 2);
  REQUIRE(lines.size() <= fwdsink::kMaxMembersHeaderLines);
  std::string err;
  CHECK(RunDaemon(dir,
                  {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url(table),
                   "--once", "--log-json", "--profile", "clickhouse", "--compression", "identity"},
                  &err) == 0);
  INFO(err.substr(0, 3000));
  CHECK(ch->Query("SELECT count(), uniqExact(ts) FROM " + table) ==
        std::to_string(kParts * kPer) + "\t" + std::to_string(kParts * kPer) + "\n");
  CHECK(ExitCounter(err, "packs_sent") == 1);
  CHECK(ExitCounter(err, "partitions_packed") == static_cast<long long>(kParts));
}

TEST_CASE("ClickHouse: an unknown table stops at once, named, exit 78, no retry loop") {
  REQUIRE_CLICKHOUSE(ch);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "unknown_table");
  Seal(dir / "spool", 1000);
  std::string err;
  const auto start = std::chrono::steady_clock::now();
  CHECK(
      RunDaemon(dir,
                {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url("no_such_table"),
                 "--once", "--log-json", "--profile", "clickhouse", "--compression", "identity"},
                &err) == kExitConfig);
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  INFO(err);
  CHECK(Count(err, R"("event":"forward.config_error")") == 1);
  CHECK(Count(err, R"("event":"driver.permanent_error")") == 1);
  CHECK(err.find("UNKNOWN_TABLE") != std::string::npos);
  CHECK(err.find("no_such_table doesn't exist") != std::string::npos);
  CHECK(err.find(R"("chunks_sent":1,)") != std::string::npos);
  CHECK(err.find(R"("event":"forward.backpressure")") == std::string::npos);

  SUBCASE("18.16 does not know insert_deduplication_token: UNKNOWN_SETTING, named") {
    ch->Table("t_token");
    CHECK(RunDaemon(dir,
                    {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url("t_token"),
                     "--once", "--log-json", "--profile", "clickhouse", "--key-param",
                     "insert_deduplication_token", "--compression", "identity"},
                    &err) == kExitConfig);
    CHECK(err.find("UNKNOWN_SETTING") != std::string::npos);
  }
  SUBCASE("zstd: 18.16 knows only gzip, UNKNOWN_COMPRESSION_METHOD, named") {
    CHECK(RunDaemon(
              dir,
              {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url("no_such_table"),
               "--once", "--log-json", "--profile", "clickhouse", "--compression", "zstd"},
              &err) == kExitConfig);
    CHECK(err.find("UNKNOWN_COMPRESSION_METHOD") != std::string::npos);
  }
  SUBCASE("the generic profile: 404 for every request of the pass, still named, exit 78") {
    CHECK(RunDaemon(dir,
                    {"forward", "--spool", (dir / "spool").string(), "--url",
                     ch->Url("no_such_table"), "--once", "--log-json", "--compression", "identity"},
                    &err) == kExitConfig);
    CHECK(Count(err, R"("event":"driver.permanent_error")") == 1);
    CHECK(err.find("doesn't exist") != std::string::npos);
  }
}

TEST_CASE("ClickHouse: SIGKILL during a forward loses nothing") {
  REQUIRE_CLICKHOUSE(ch);
  ch->Table("t_kill");
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "sigkill");
  const fs::path spool = dir / "spool";
  Seal(spool, kRows);
  const std::vector<std::string> args = {
      "forward",   "--spool",    spool.string(),  "--url",    ch->Url("t_kill"), "--log-json",
      "--profile", "clickhouse", "--compression", "identity", "--chunk-bytes",   "64k",
      "--window",  "4"};
  {
    DaemonProcess d(dir, "killed", args);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::uint64_t seen = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      seen = std::stoull("0" + ch->Query("SELECT count() FROM t_kill"));
      if (seen > kRows / 4) break;
      std::this_thread::sleep_for(5ms);
    }
    d.Signal(SIGKILL);
    CHECK(d.Wait(5s).has_value());
    MESSAGE("killed after " << seen << " rows had arrived");
    CHECK(seen < kRows);  // killed mid-forward
  }
  std::string err;
  std::vector<std::string> once = args;
  once.push_back("--once");
  CHECK(RunDaemon(dir, once, &err) == kExitOk);
  const std::string counts = ch->Query("SELECT count(), uniqExact(ts) FROM t_kill");
  const auto tab = counts.find('\t');
  const std::uint64_t total = std::stoull(counts.substr(0, tab));
  const std::uint64_t distinct = std::stoull(counts.substr(tab + 1));
  CHECK(distinct == kRows);  // nothing lost
  // MergeTree (not Replicated) in 18.16 keeps duplicates: at most a window of chunks, the
  // ranges journaled as owed when the kill came (LLP 0014#journal), here --window 4.
  const std::uint64_t duplicates = total - distinct;
  MESSAGE("rows stored twice after SIGKILL: " << duplicates);
  CHECK(duplicates <= 4 * 1200);  // four 64 KiB chunks of ~55-byte rows
}

TEST_CASE("ClickHouse: the dedup check, at start and on SIGHUP, notes a MergeTree on /readyz") {
  REQUIRE_CLICKHOUSE(ch);
  ch->Table("t_check");
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "dedup_check");
  Seal(dir / "spool", 1000);
  DaemonProcess d(dir, "daemon",
                  {"forward", "--spool", (dir / "spool").string(), "--url", ch->Url("t_check"),
                   "--log-json", "--profile", "clickhouse", "--compression", "gzip",
                   "--metrics-listen", "127.0.0.1:0", "--poll", "0.2"});
  REQUIRE(d.started());
  const auto wait_for = [&](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    return done();
  };
  const std::string warning = R"("event":"driver.engine_warning")";
  REQUIRE(wait_for([&] { return Count(d.err(), warning) == 1; }));
  const std::string log = d.err();
  const auto at = log.find(R"("metrics":")");
  REQUIRE(at != std::string::npos);
  const std::string address = log.substr(at + 11, log.find('"', at + 11) - at - 11);
  httplib::Client cli(address.substr(0, address.rfind(':')),
                      std::stoi(address.substr(address.rfind(':') + 1)));
  cli.set_read_timeout(5s);
  auto ready = cli.Get("/readyz");
  REQUIRE(ready);
  CHECK(ready->status == 200);  // a note, not a failure
  CHECK(ready->body.find("ready\nnote: t_check is not a Replicated*MergeTree") == 0);
  // SIGHUP reads it again: a second warning.
  d.Signal(SIGHUP);
  CHECK(wait_for([&] { return Count(d.err(), warning) == 2; }));
  CHECK(wait_for([&] { return ch->Query("SELECT count() FROM t_check") == "1000\n"; }));
  d.Signal(SIGTERM);
  CHECK(d.Wait(20s) == std::optional<int>(kExitOk));
}
