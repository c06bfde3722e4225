// SPDX-License-Identifier: Apache-2.0
// Exactly once into a replicated ClickHouse cluster (issue 24), LABEL cluster: ZooKeeper
// and two clickhouse-server replicas from Debian (tests/support/clickhouse_process.h) on free
// loopback ports in the test's folder, a ReplicatedMergeTree table on both, and the
// `fwdsink` daemon with both replicas as --url endpoints, `--profile clickhouse
// --compression gzip`. Cases: a SIGKILL storm of the daemon, the primary frozen
// (SIGSTOP) mid-stream until failover, a proxy that drops one in N acknowledgements
// after ClickHouse answered, a replica restarted during the run. Every case: count() =
// uniqExact(seq) = rows sent, on both replicas after SYSTEM SYNC REPLICA. Skipped with
// a message when clickhouse-server or zookeeper is not installed (scripts/deps.sh
// installs both). @ref LLP 0017#cluster
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/spool_writer.h"
#include "support/clickhouse_process.h"
#include "support/daemon_process.h"
#include "support/ports.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fwdsink::test::ClickHouseProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ListenOnLoopback;
using fwdsink::test::ZooKeeperProcess;

constexpr std::string_view kSuite = "cluster";
constexpr std::uint64_t kPartitions = 4;
constexpr std::uint64_t kRowsPerPartition = 50'000;
constexpr std::uint64_t kRows = kPartitions * kRowsPerPartition;
constexpr auto kCaseDeadline = 90s;  // a case's daemon runs to an empty ready/ within it
// The table's deduplication window: what LLP 0017#dedup-window's formula asks for the
// daemon flags below (max_wait 10 s + inline_budget 60 s at up to ~25 blocks/s here),
// with the cleanup thread run every second so that the window really is trimmed during
// a case (the default 30-40 s would outlast most cases and hide a late re-send).
constexpr int kDedupWindow = 2000;
// The daemon's flags for every case: four partitions in flight, a frozen server found
// out within ~3 s, a first ladder rung of 5 s (2.5-7.5 s with jitter): a sender left
// asleep on it by a failover re-sends seconds late. `ladder` replaces the ladder.
std::vector<std::string> Flags(const std::string& ladder = "5,10") {
  return {"--log-json", "--profile",
          "clickhouse", "--compression",
          "gzip",       "--chunk-bytes",
          "32k",        "--concurrency",
          "4",          "--connect-timeout",
          "1",          "--read-timeout",
          "3",          "--response-timeout",
          "3",          "--ladder",
          ladder,       "--max-wait",
          "10",         "--inline-budget",
          "60",         "--poll",
          "0.2",        "--stats-interval",
          "1"};
}

// Polls `done` every 50 ms until it holds or `timeout` passes; returns whether it held.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// ZooKeeper and two replicas for the whole suite, torn down by PID at exit. Their data
// lives in a fresh folder on /dev/shm when there is one (removed at exit): on a disk
// that others load, removing the last run's parts took 27 s. Configs and logs stay in
// FWDSINK_TEST_TMP/cluster/servers.
struct Cluster {
  fs::path data;
  std::unique_ptr<ZooKeeperProcess> zk;
  std::unique_ptr<ClickHouseProcess> r1, r2;
  ~Cluster() {
    r1.reset();
    r2.reset();
    zk.reset();
    std::error_code ec;
    if (!data.empty()) fs::remove_all(data, ec);
  }
  static Cluster* Get() {
    static std::unique_ptr<Cluster> cluster = Start();
    return cluster.get();
  }
  static bool Installed() {
    return fs::exists(fwdsink::test::kClickHouseBin) && fs::exists(fwdsink::test::kZooKeeperJar) &&
           fs::exists(fwdsink::test::kJavaBin);
  }

 private:
  static std::unique_ptr<Cluster> Start() {
    if (!Installed()) return nullptr;
    const auto start = std::chrono::steady_clock::now();
    auto c = std::make_unique<Cluster>();
    const fs::path dir = fwdsink::test::FreshDir(kSuite, "servers");
    std::string scratch = (fs::is_directory("/dev/shm") ? std::string("/dev/shm") : dir.string()) +
                          "/fwdsink-cluster-XXXXXX";
    if (!::mkdtemp(scratch.data())) return nullptr;
    c->data = scratch;
    c->zk = ZooKeeperProcess::Start(dir / "zk", c->data / "zk");
    if (!c->zk) return nullptr;
    c->r1 = ClickHouseProcess::Start(dir / "r1", fwdsink::test::ReplicaXml(c->zk->port(), "r1"),
                                     c->data / "r1");
    c->r2 = ClickHouseProcess::Start(dir / "r2", fwdsink::test::ReplicaXml(c->zk->port(), "r2"),
                                     c->data / "r2");
    if (!c->r1 || !c->r2) return nullptr;
    // Each replica holds a ZooKeeper session before the first CREATE TABLE needs one.
    for (ClickHouseProcess* r : {c->r1.get(), c->r2.get()}) {
      const auto seen = [r] {
        return r->Query("SELECT count() > 0 FROM system.zookeeper WHERE path = '/'") == "1\n";
      };
      if (!WaitFor(seen, 60s)) return nullptr;
    }
    std::fprintf(stderr, "cluster: ZooKeeper and two replicas up in %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return c;
  }
};

#define REQUIRE_CLUSTER(c)                                                              \
  Cluster* c = Cluster::Get();                                                          \
  if (!c) {                                                                             \
    REQUIRE_MESSAGE(!Cluster::Installed(),                                              \
                    "the cluster did not start; see FWDSINK_TEST_TMP/cluster/servers"); \
    MESSAGE("skipped: clickhouse-server or zookeeper (with java) is not installed");    \
    return;                                                                             \
  }

// Creates `table` on both replicas (ReplicatedMergeTree, its own ZooKeeper path).
void CreateTable(Cluster& c, const std::string& table) {
  for (ClickHouseProcess* r : {c.r1.get(), c.r2.get()}) {
    REQUIRE(r->Query("CREATE TABLE " + table +
                     " (seq UInt64, host String, pad String) ENGINE = ReplicatedMergeTree("
                     "'/clickhouse/tables/" +
                     table +
                     "', '{replica}') ORDER BY seq SETTINGS replicated_deduplication_window = " +
                     std::to_string(kDedupWindow) +
                     ", cleanup_delay_period = 1, cleanup_delay_period_random_add = 0") == "");
  }
}

// Seals `partitions` partitions of `per` rows each; seq runs over [0, partitions x per).
void SealRows(const fs::path& spool, std::uint64_t partitions = kPartitions,
              std::uint64_t per = kRowsPerPartition) {
  for (std::uint64_t p = 0; p < partitions; ++p) {
    auto w = fwdsink::SpoolWriter::Open(spool);
    REQUIRE(w.ok());
    for (std::uint64_t i = p * per; i < (p + 1) * per; ++i) {
      REQUIRE(w->Append(R"({"seq":)" + std::to_string(i) + R"(,"host":"web-)" +
                        std::to_string(i % 17) + R"(","pad":"row )" + std::to_string(i * 7919) +
                        R"( of the cluster test"})")
                  .ok());
    }
    REQUIRE(w->Seal().ok());
  }
}

std::size_t ReadyPartitions(const fs::path& spool) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(spool / "ready", ec)) {
    n += e.path().extension() == ".ndjson";
  }
  return n;
}

std::uint64_t Count(const ClickHouseProcess& r, const std::string& table) {
  const std::string n = r.Query("SELECT count() FROM " + table, 5s);
  return n.rfind("ERROR", 0) == 0 ? 0 : std::stoull("0" + n);
}

// count() and uniqExact(seq) on replica `r` once it has caught up with the other.
std::string Settled(const ClickHouseProcess& r, const std::string& table) {
  std::string sync;
  WaitFor([&] { return (sync = r.Query("SYSTEM SYNC REPLICA " + table, 60s)) == ""; }, 60s);
  INFO(sync);
  return r.Query("SELECT count(), uniqExact(seq) FROM " + table);
}

void CheckExactlyOnce(Cluster& c, const std::string& table, std::uint64_t rows = kRows) {
  const std::string want = std::to_string(rows) + "\t" + std::to_string(rows) + "\n";
  CHECK(Settled(*c.r1, table) == want);
  CHECK(Settled(*c.r2, table) == want);
}

// Blocks both replicas refused as already stored ("Block with ID ... already exists"),
// since each last started (a restart resets a replica's count).
std::uint64_t DuplicateBlocks(const Cluster& c) {
  std::uint64_t n = 0;
  for (const ClickHouseProcess* r : {c.r1.get(), c.r2.get()}) {
    const std::string v = r->Query(
        "SELECT sum(value) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'", 5s);
    if (v.rfind("ERROR", 0) != 0) n += std::stoull("0" + v);
  }
  return n;
}

std::size_t Occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A daemon forwarding `spool` to `urls` in run mode (Flags(ladder)), stopped with SIGTERM once
// ready/ is empty. Returns its exit code (-1: ready/ did not empty in time).
int RunToEmpty(const fs::path& dir, const std::string& tag, const fs::path& spool,
               const std::vector<std::string>& urls, std::string* err,
               const std::function<void(DaemonProcess&)>& meanwhile = {},
               const std::string& ladder = "5,10") {
  std::vector<std::string> args = {"forward", "--spool", spool.string()};
  for (const auto& u : urls) args.insert(args.end(), {"--url", u});
  const std::vector<std::string> flags = Flags(ladder);
  args.insert(args.end(), flags.begin(), flags.end());
  DaemonProcess d(dir, tag, args);
  if (!d.started()) return -1;
  if (meanwhile) meanwhile(d);
  const bool empty = WaitFor([&] { return ReadyPartitions(spool) == 0; }, kCaseDeadline);
  d.Signal(SIGTERM);
  const auto code = d.Wait(20s);
  *err = d.err();
  return empty && code ? *code : -1;
}

// A tiny HTTP/1.1 proxy in front of one replica that loses one in `every` answers: it
// forwards the request, waits for ClickHouse's answer (the rows are stored), and then,
// for every `every`-th 200, closes the client's connection instead of answering. The
// client sees a transport error after the server stored the chunk: a lost
// acknowledgement. Keep-alive; one thread per connection; Stop() shuts every socket.
class AckDropProxy {
 public:
  AckDropProxy(int upstream_port, int every) : upstream_(upstream_port), every_(every) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int on = 1;
    ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    port_ = ListenOnLoopback(listen_, 16);
    accept_ = std::thread([this] { Accept(); });
  }
  ~AckDropProxy() {
    stopping_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    ::close(listen_);
    accept_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }
  int port() const { return port_; }
  int dropped() const { return dropped_.load(); }
  std::string url(const std::string& table) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "?query=INSERT+INTO+" + table +
           "+FORMAT+JSONEachRow";
  }

 private:
  void Accept() {
    while (!stopping_) {
      const int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      threads_.emplace_back([this, fd] {
        Serve(fd);
        ::close(fd);
      });
    }
  }
  static bool ReadMore(int fd, std::string& buf) {
    char chunk[65536];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
  static bool WriteAll(int fd, const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  void Serve(int fd) {
    httplib::Client up("127.0.0.1", upstream_);
    up.set_read_timeout(30s);
    up.set_keep_alive(true);
    up.set_url_encode(false);  // the target as the client sent it ('+' stays a space)
    std::string buf;
    for (;;) {
      std::size_t head_end;
      while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (!ReadMore(fd, buf)) return;
      }
      const std::string head = buf.substr(0, head_end);
      buf.erase(0, head_end + 4);
      const auto sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
      const std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
      httplib::Headers headers;
      std::size_t length = 0;
      bool expect = false;
      std::string content_type = "text/plain";
      for (std::size_t at = head.find("\r\n"); at != std::string::npos;) {
        const std::size_t next = head.find("\r\n", at + 2);
        const std::string line =
            head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
        at = next;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon), value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        std::string lower = name;
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (lower == "content-length") {
          length = std::stoull(value);
        } else if (lower == "expect") {
          expect = true;
        } else if (lower == "content-type") {
          content_type = value;
        } else if (lower != "host" && lower != "connection") {
          headers.emplace(name, value);
        }
      }
      if (expect && !WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n")) return;
      while (buf.size() < length) {
        if (!ReadMore(fd, buf)) return;
      }
      const std::string body = buf.substr(0, length);
      buf.erase(0, length);
      auto res = up.Post(target.c_str(), headers, body, content_type.c_str());
      if (!res) return;  // the replica did not answer: neither do we
      if (res->status == 200 && ++answered_ % every_ == 0) {
        ++dropped_;
        ::shutdown(fd, SHUT_RDWR);  // stored, not acknowledged
        return;
      }
      std::string out = "HTTP/1.1 " + std::to_string(res->status) +
                        " X\r\nContent-Length: " + std::to_string(res->body.size()) +
                        "\r\nContent-Type: text/plain\r\n";
      if (res->has_header("X-ClickHouse-Exception-Code")) {
        out +=
            "X-ClickHouse-Exception-Code: " + res->get_header_value("X-ClickHouse-Exception-Code") +
            "\r\n";
      }
      if (!WriteAll(fd, out + "\r\n" + res->body)) return;
    }
  }

  const int upstream_;
  const int every_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> answered_{0};
  std::atomic<int> dropped_{0};
  std::thread accept_;
  std::mutex mu_;
  std::vector<int> fds_;              // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
};

}  // namespace

TEST_CASE("cluster: a SIGKILL storm of the daemon stores every row once on both replicas") {
  REQUIRE_CLUSTER(c);
  const std::string table = "t_kill";
  CreateTable(*c, table);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "kill_storm");
  const fs::path spool = dir / "spool";
  SealRows(spool);
  std::vector<std::string> args = {"forward",         "--spool", spool.string(),   "--url",
                                   c->r1->Url(table), "--url",   c->r2->Url(table)};
  const std::vector<std::string> flags = Flags();
  args.insert(args.end(), flags.begin(), flags.end());
  constexpr int kKills = 12;
  int kills = 0;
  for (; kills < kKills; ++kills) {
    const std::uint64_t before = Count(*c->r1, table);
    DaemonProcess d(dir, "killed", args);
    REQUIRE(d.started());
    // Killed once it stored a little more (a chunk is ~1,000 rows), or after 2 s.
    WaitFor([&] { return Count(*c->r1, table) >= before + kRows / (2 * kKills); }, 2s);
    d.Signal(SIGKILL);
    REQUIRE(d.Wait(5s) == std::optional<int>(128 + SIGKILL));
    if (ReadyPartitions(spool) == 0) break;
  }
  MESSAGE("SIGKILLed " << kills << " times; " << Count(*c->r1, table) << " rows stored by then");
  CHECK(kills >= 10);
  MESSAGE("re-sent blocks ClickHouse dropped as duplicates: " << DuplicateBlocks(*c));
  std::string err;
  CHECK(RunToEmpty(dir, "last", spool, {c->r1->Url(table), c->r2->Url(table)}, &err) == 0);
  INFO(err.substr(0, 3000));
  CheckExactlyOnce(*c, table);
}

TEST_CASE("cluster: the primary frozen (SIGSTOP) mid-stream until failover stores each row once") {
  REQUIRE_CLUSTER(c);
  const std::string table = "t_stop";
  CreateTable(*c, table);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "sigstop");
  const fs::path spool = dir / "spool";
  SealRows(spool);
  bool failed_over = false;
  std::uint64_t frozen_at = 0;
  std::string err;
  const int code = RunToEmpty(
      dir, "daemon", spool, {c->r1->Url(table), c->r2->Url(table)}, &err, [&](DaemonProcess& d) {
        REQUIRE(WaitFor([&] { return Count(*c->r1, table) > kRows / 10; }, 30s));
        frozen_at = Count(*c->r1, table);
        c->r1->Signal(SIGSTOP);
        failed_over = WaitFor(
            [&] { return d.err().find(R"("event":"forward.failover")") != std::string::npos; },
            30s);
        c->r1->Signal(SIGCONT);
      });
  c->r1->Signal(SIGCONT);  // also when a REQUIRE above failed
  INFO(err.substr(0, 4000));
  CHECK(failed_over);
  MESSAGE("frozen with " << frozen_at << " rows stored");
  CHECK(frozen_at < kRows);  // mid-stream
  CHECK(code == 0);
  // The twin of integration_clickhouse_test's warning: this table's window (2,000
  // blocks) covers the need at the default fleet rate (10/s x 70 s = 700): nothing said.
  CHECK(err.find(R"("event":"driver.engine_warning")") == std::string::npos);
  CHECK(err.find(R"("event":"driver.engine_unchecked")") == std::string::npos);
  CheckExactlyOnce(*c, table);
}

TEST_CASE("cluster: a proxy that drops one in 10 acknowledgements costs no duplicate") {
  REQUIRE_CLUSTER(c);
  const std::string table = "t_drop";
  CreateTable(*c, table);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "ack_drop");
  const fs::path spool = dir / "spool";
  SealRows(spool);
  const std::uint64_t duplicates_before = DuplicateBlocks(*c);
  AckDropProxy p1(c->r1->port(), 10), p2(c->r2->port(), 10);
  std::string err;
  // A short ladder (0.5-1.5 s): a lost acknowledgement is one failure, re-sent soon.
  CHECK(RunToEmpty(dir, "daemon", spool, {p1.url(table), p2.url(table)}, &err, {}, "1,2") == 0);
  INFO(err.substr(0, 3000));
  MESSAGE("acknowledgements dropped: " << p1.dropped() << " + " << p2.dropped());
  CHECK(p1.dropped() + p2.dropped() >= 5);
  // Each lost acknowledgement was re-sent and refused by the engine as a duplicate.
  const std::uint64_t refused = DuplicateBlocks(*c) - duplicates_before;
  MESSAGE("re-sent blocks ClickHouse dropped as duplicates: " << refused);
  CHECK(refused >= static_cast<std::uint64_t>(p1.dropped() + p2.dropped()));
  CheckExactlyOnce(*c, table);
}

// Issue 23 item 6: a re-sent pack carries the same members' bytes in the same order, so
// the replicated table's block dedup drops it like a re-sent chunk. The twin is the case
// above: the same proxy with one partition per request. @ref LLP 0017#packs
TEST_CASE("cluster: packs of small partitions whose acknowledgements are dropped are stored once") {
  REQUIRE_CLUSTER(c);
  const std::string table = "t_packs";
  CreateTable(*c, table);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "packs_ack_drop");
  const fs::path spool = dir / "spool";
  constexpr std::uint64_t kSmall = 600, kPer = 20;  // ~1.5 KB each: ~20 to a 32 KiB pack
  SealRows(spool, kSmall, kPer);
  const std::uint64_t duplicates_before = DuplicateBlocks(*c);
  AckDropProxy p1(c->r1->port(), 4), p2(c->r2->port(), 4);
  std::string err;
  CHECK(RunToEmpty(dir, "daemon", spool, {p1.url(table), p2.url(table)}, &err, {}, "1,2") == 0);
  INFO(err.substr(0, 3000));
  const std::size_t packs = Occurrences(err, R"("event":"forward.pack_delivered")");
  MESSAGE("packs delivered: " << packs << "; acknowledgements dropped: " << p1.dropped() << " + "
                              << p2.dropped());
  CHECK(packs >= 20);
  CHECK(packs <= kSmall / 10);
  CHECK(Occurrences(err, R"("event":"forward.delivered")") == kSmall);
  CHECK(p1.dropped() + p2.dropped() >= 4);
  const std::uint64_t refused = DuplicateBlocks(*c) - duplicates_before;
  MESSAGE("re-sent packs ClickHouse dropped as duplicates: " << refused);
  CHECK(refused >= static_cast<std::uint64_t>(p1.dropped() + p2.dropped()));
  CheckExactlyOnce(*c, table, kSmall * kPer);
}

TEST_CASE("cluster: a replica killed and restarted during the run loses and doubles nothing") {
  REQUIRE_CLUSTER(c);
  const std::string table = "t_restart";
  CreateTable(*c, table);
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "restart");
  const fs::path spool = dir / "spool";
  SealRows(spool);
  bool restarted = false;
  std::uint64_t killed_at = 0;
  std::string err;
  const int code = RunToEmpty(
      dir, "daemon", spool, {c->r1->Url(table), c->r2->Url(table)}, &err, [&](DaemonProcess& d) {
        REQUIRE(WaitFor([&] { return Count(*c->r1, table) > kRows / 10; }, 30s));
        killed_at = Count(*c->r1, table);
        c->r1->Kill();
        WaitFor([&] { return d.err().find(R"("event":"forward.failover")") != std::string::npos; },
                20s);
        restarted = c->r1->Launch();
      });
  INFO(err.substr(0, 3000));
  CHECK(restarted);
  MESSAGE("replica 1 killed with " << killed_at << " rows stored");
  CHECK(killed_at < kRows);  // mid-stream
  CHECK(Occurrences(err, R"("event":"forward.failover")") >= 1);
  CHECK(code == 0);
  CheckExactlyOnce(*c, table);
}
