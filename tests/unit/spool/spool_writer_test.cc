// SPDX-License-Identifier: Apache-2.0
// SpoolWriter: rows in, sealed partitions out, rolled by size and by age; names unique
// across threads and processes.
#include "fwdsink/spool_writer.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/spool.h"
#include "support/dir_events.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fwdsink::Spool;
using fwdsink::SpoolWriter;
using fwdsink::SpoolWriterOptions;
using fwdsink::StatusCode;
using fwdsink::test::FileNames;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadFile;

namespace {

constexpr std::string_view kSuite = "spool_writer_test";  // folder under FWDSINK_TEST_TMP
constexpr std::string_view kRow10 = "0123456789";         // 11 bytes with its newline
constexpr auto kMaxAge = 10s;

// A monotonic clock that moves only when told to.
struct FakeClock {
  std::chrono::steady_clock::time_point now{std::chrono::seconds(1000)};
  void advance(std::chrono::steady_clock::duration d) { now += d; }
};

// Wall time for names: each call is one millisecond later, so names differ.
struct FakeWall {
  std::chrono::system_clock::time_point now{std::chrono::milliseconds(1'764'498'084'123)};
};

std::size_t CountFiles(const fs::path& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

SpoolWriterOptions Options(FakeClock& clock, FakeWall& wall, std::uint64_t max_bytes) {
  return SpoolWriterOptions{
      .max_bytes = max_bytes,
      .max_age = kMaxAge,
      .now = [&clock] { return clock.now; },
      .wall_now =
          [&wall] {
            wall.now += 1ms;
            return wall.now;
          },
  };
}

std::vector<fwdsink::ReadyPartition> Ready(const fs::path& dir) {
  auto spool = Spool::Open(dir);
  REQUIRE(spool.ok());
  auto list = spool->ListReady();
  REQUIRE(list.ok());
  return std::move(list).value();
}

}  // namespace

TEST_CASE("SpoolWriter rolls at the size limit") {
  const fs::path dir = FreshDir(kSuite, "size");
  FakeClock clock;
  FakeWall wall;

  SUBCASE("a row that would not fit seals the partition first") {
    auto w = SpoolWriter::Open(dir, Options(clock, wall, 20));
    REQUIRE(w.ok());
    REQUIRE(w->Append(kRow10).ok());  // 11 bytes
    CHECK(w->sealed().empty());
    REQUIRE(w->Append(kRow10).ok());  // 22 > 20: seal #1, open #2
    CHECK(w->sealed().size() == 1);
    REQUIRE(w->Append(kRow10).ok());  // seal #2, open #3
    CHECK(w->sealed().size() == 2);
    const auto ready = Ready(dir);
    REQUIRE(ready.size() == 2);
    CHECK(ReadFile(ready[0].path) == "0123456789\n");
    CHECK(ReadFile(ready[1].path) == "0123456789\n");
    CHECK(ready[0].name == w->sealed()[0]);
  }
  SUBCASE("reaching the limit exactly seals at once") {
    auto w = SpoolWriter::Open(dir, Options(clock, wall, 22));
    REQUIRE(w.ok());
    REQUIRE(w->Append(kRow10).ok());
    REQUIRE(w->Append(kRow10).ok());
    CHECK(w->sealed().size() == 1);
    CHECK(Ready(dir).at(0).size == 22);
  }
  SUBCASE("twin: rows under the limit stay in one unsealed partition") {
    auto w = SpoolWriter::Open(dir, Options(clock, wall, 100));
    REQUIRE(w.ok());
    for (int i = 0; i < 3; ++i) REQUIRE(w->Append(kRow10).ok());
    CHECK(w->sealed().empty());
    CHECK(Ready(dir).empty());  // not handed over yet
    auto sealed = w->Seal();
    REQUIRE(sealed.ok());
    REQUIRE(sealed->has_value());
    const auto ready = Ready(dir);
    REQUIRE(ready.size() == 1);
    CHECK(ReadFile(ready[0].path) == "0123456789\n0123456789\n0123456789\n");
  }
  SUBCASE("a row bigger than the limit gets a partition of its own, unsplit") {
    auto w = SpoolWriter::Open(dir, Options(clock, wall, 5));
    REQUIRE(w.ok());
    REQUIRE(w->Append(kRow10).ok());
    const auto ready = Ready(dir);
    REQUIRE(ready.size() == 1);
    CHECK(ReadFile(ready[0].path) == "0123456789\n");
  }
}

TEST_CASE("SpoolWriter rolls at the age limit") {
  const fs::path dir = FreshDir(kSuite, "age");
  FakeClock clock;
  FakeWall wall;
  auto w = SpoolWriter::Open(dir, Options(clock, wall, 1 << 20));
  REQUIRE(w.ok());
  REQUIRE(w->Append(kRow10).ok());

  SUBCASE("twin: just under the age nothing is sealed") {
    clock.advance(kMaxAge - 1ms);
    REQUIRE(w->Poll().ok());
    CHECK(w->sealed().empty());
    CHECK(Ready(dir).empty());
  }
  SUBCASE("Poll seals at the age") {
    clock.advance(kMaxAge);
    REQUIRE(w->Poll().ok());
    CHECK(w->sealed().size() == 1);
    CHECK(Ready(dir).size() == 1);
  }
  SUBCASE("Append past the age seals before adding the row") {
    clock.advance(kMaxAge + 1s);
    REQUIRE(w->Append("late").ok());
    REQUIRE(w->sealed().size() == 1);
    CHECK(ReadFile(Ready(dir).at(0).path) == "0123456789\n");
    auto second = w->Seal();
    REQUIRE(second.ok());
    CHECK(Ready(dir).size() == 2);
    CHECK(ReadFile(Ready(dir).at(1).path) == "late\n");
  }
}

TEST_CASE("SpoolWriter seals atomically") {
  const fs::path dir = FreshDir(kSuite, "atomic");
  FakeClock clock;
  FakeWall wall;
  auto w = SpoolWriter::Open(dir, Options(clock, wall, 1 << 20));
  REQUIRE(w.ok());
  fwdsink::test::DirEvents ready_events(dir / "ready");
  REQUIRE(ready_events.ok());
  REQUIRE(w->Append("{\"x\":1}").ok());
  // While open: one temp file in incoming/, nothing in ready/.
  CHECK(CountFiles(dir / "incoming") == 1);
  CHECK(CountFiles(dir / "ready") == 0);

  auto sealed = w->Seal();
  REQUIRE(sealed.ok());
  REQUIRE(sealed->has_value());
  CHECK(CountFiles(dir / "incoming") == 0);
  CHECK(CountFiles(dir / "ready") == 1);
  const std::string file = **sealed + ".ndjson";
  CHECK(ReadFile(dir / "ready" / file) == "{\"x\":1}\n");
  // What a forwarder watching ready/ saw: the partition arrived whole, by one rename;
  // nothing was ever created, written or truncated there.
  CHECK(ready_events.Take() == std::vector<std::string>{"moved_to " + file});
  CHECK(fwdsink::ValidatePartitionName(**sealed).ok());

  SUBCASE("twin: sealing with nothing open seals nothing") {
    auto again = w->Seal();
    REQUIRE(again.ok());
    CHECK_FALSE(again->has_value());
    CHECK(CountFiles(dir / "ready") == 1);
  }
}

TEST_CASE("SpoolWriter rejects rows that are not exactly one line") {
  const fs::path dir = FreshDir(kSuite, "rows");
  FakeClock clock;
  FakeWall wall;
  auto w = SpoolWriter::Open(dir, Options(clock, wall, 1 << 20));
  REQUIRE(w.ok());

  CHECK(w->Append("a\nb").code() == StatusCode::kInvalidArgument);
  CHECK(w->Append("a\n\n").code() == StatusCode::kInvalidArgument);
  CHECK(w->Append("").code() == StatusCode::kInvalidArgument);
  CHECK(w->Append("\n").code() == StatusCode::kInvalidArgument);
  // Twin: a trailing newline is accepted and not doubled; a missing one is added.
  REQUIRE(w->Append("first\n").ok());
  REQUIRE(w->Append("second").ok());
  REQUIRE(w->Seal().ok());
  const auto ready = Ready(dir);
  REQUIRE(ready.size() == 1);
  CHECK(ReadFile(ready[0].path) == "first\nsecond\n");
}

TEST_CASE("SpoolWriter names sort oldest first, and the destructor seals") {
  const fs::path dir = FreshDir(kSuite, "names");
  FakeClock clock;
  FakeWall wall;
  std::vector<std::string> names;
  {
    auto w = SpoolWriter::Open(dir, Options(clock, wall, 1));  // one row per partition
    REQUIRE(w.ok());
    for (int i = 0; i < 12; ++i) REQUIRE(w->Append("r" + std::to_string(i)).ok());
    names = w->sealed();
    auto tail = SpoolWriter::Open(dir, Options(clock, wall, 1 << 20));
    REQUIRE(tail.ok());
    REQUIRE(tail->Append("unsealed").ok());
  }  // `tail` seals in its destructor
  REQUIRE(names.size() == 12);
  const auto ready = Ready(dir);
  REQUIRE(ready.size() == 13);
  for (int i = 0; i < 12; ++i) {
    CHECK(ready[static_cast<std::size_t>(i)].name == names[static_cast<std::size_t>(i)]);
    CHECK(ReadFile(ready[static_cast<std::size_t>(i)].path) == "r" + std::to_string(i) + "\n");
  }
  CHECK(ReadFile(ready[12].path) == "unsealed\n");
  CHECK(CountFiles(dir / "incoming") == 0);
}

TEST_CASE("SpoolWriter validates its options") {
  const fs::path dir = FreshDir(kSuite, "options");
  CHECK(SpoolWriter::Open(dir, SpoolWriterOptions{.max_bytes = 0}).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(SpoolWriter::Open(dir, SpoolWriterOptions{.max_age = 0s}).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(SpoolWriter::Open(dir, SpoolWriterOptions{.now = nullptr}).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(SpoolWriter::Open(dir, SpoolWriterOptions{}).ok());
}

// ---- README "The producer contract", 2: SpoolWriter names are unique across threads
// and processes.

namespace {

// One fixed wall time for every writer: names can then differ only by pid and
// sequence number, which is what is checked.
fwdsink::SpoolWriterOptions FixedTime() {
  fwdsink::SpoolWriterOptions o;
  o.wall_now = [] { return std::chrono::system_clock::time_point{1'780'000'000s}; };
  return o;
}

// Seals `n` one-row partitions; returns their names (empty on any failure).
std::vector<std::string> SealSome(const std::filesystem::path& spool, int n, int tag) {
  auto w = fwdsink::SpoolWriter::Open(spool, FixedTime());
  if (!w.ok()) return {};
  for (int i = 0; i < n; ++i) {
    if (!w->Append("{\"t\":" + std::to_string(tag) + ",\"i\":" + std::to_string(i) + "}").ok()) {
      return {};
    }
    auto sealed = w->Seal();
    if (!sealed.ok() || !sealed->has_value()) return {};
  }
  return w->sealed();
}

}  // namespace

TEST_CASE("SpoolWriterNamesAreUniqueAcrossThreadsAndProcesses") {
  const auto spool = FreshDir(kSuite, "unique_names");
  constexpr int kThreads = 6, kProcesses = 4, kEach = 20;
  // Processes first (forked while this process has one thread), then threads.
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(SealSome(spool, kEach, 100 + p).size() == kEach ? 0 : 1);
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::vector<std::vector<std::string>> by_thread(kThreads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { by_thread[t] = SealSome(spool, kEach, t); });
    }
  }
  std::set<std::string> mine;
  for (const auto& names : by_thread) {
    CHECK(names.size() == kEach);
    mine.insert(names.begin(), names.end());
  }
  CHECK(mine.size() == kThreads * kEach);  // unique across this process's threads
  // Nothing was overwritten: every partition sealed is in ready/, once.
  const auto files = FileNames(spool / "ready");
  CHECK(files.size() == (kThreads + kProcesses) * kEach);
  const std::regex shape(R"(20260528T202640\.000Z-(\d+)-\d{8}\.ndjson)");
  std::set<std::string> pids;
  for (const auto& f : files) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(f, m, shape), f);
    pids.insert(m[1]);
  }
  CHECK(pids.size() == kProcesses + 1);  // the children's and this process's

  SUBCASE("twin: names sort by the wall time first, whatever the pid") {
    auto o = FixedTime();
    o.wall_now = [] { return std::chrono::system_clock::time_point{1'780'000'001s}; };
    auto w = fwdsink::SpoolWriter::Open(spool, o);
    REQUIRE(w.ok());
    REQUIRE(w->Append("{}").ok());
    auto later = w->Seal();
    REQUIRE(later.ok());
    REQUIRE(later->has_value());
    CHECK(**later > *std::max_element(files.begin(), files.end()));
    CHECK((*later)->starts_with("20260528T202641.000Z-"));
  }
}
