// SPDX-License-Identifier: Apache-2.0
// README "Effectively once": cursors are saved grouped, one save in flight at most, and
// the acks that arrive during a save are written by the next one. Checked on a slow disk: this
// executable defines fsync(2) itself (the static library's calls resolve to it), and while
// `g_slow_state` is set every fsync of a file under state/ takes kSlowFsync before the real one.
// That models a disk busy with someone else's writeback; the test thread itself never sleeps.
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "fwdsink/spool.h"
#include "spool/cursor_writer.h"
#include "support/test_files.h"

namespace {

constexpr auto kSlowFsync = std::chrono::milliseconds(40);
std::atomic<bool> g_slow_state{false};
std::atomic<int> g_state_fsyncs{0};  // fsyncs of files under state/ finished so far

bool UnderState(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char path[4096];
  const ssize_t n = ::readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return std::strstr(path, "/state/") != nullptr;
}

}  // namespace

extern "C" int fsync(int fd) {
  const bool state = UnderState(fd);
  if (state && g_slow_state.load()) std::this_thread::sleep_for(kSlowFsync);
  const int rc = static_cast<int>(::syscall(SYS_fsync, fd));
  if (state) g_state_fsyncs.fetch_add(1);
  return rc;
}

namespace {
constexpr std::string_view kSuite = "cursor_save_bound_test";
// Lines end at 8, 16, 24 and 32.
constexpr const char* kRows = "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n";

struct SlowState {
  SlowState() { g_slow_state = true; }
  ~SlowState() { g_slow_state = false; }
};
}  // namespace

TEST_CASE("OnASlowDiskAcksWhileASaveRunsAreGroupedIntoOneMoreSave") {
  auto spool = fwdsink::Spool::Open(fwdsink::test::FreshDir(kSuite, "bound"));
  REQUIRE(spool.ok());
  REQUIRE(fwdsink::test::WriteFile(spool->PartitionPath("p"), kRows));
  fwdsink::CursorWriter writer(*spool);
  const int fsyncs_before = g_state_fsyncs.load();
  SlowState slow;

  // The journal of a refill first, made durable before its chunks would leave.
  REQUIRE(writer.Submit("p", 0, {{0, 8}, {8, 16}, {16, 24}, {24, 32}}));
  REQUIRE(writer.Sync());
  CHECK(spool->LoadCursor("p").ranges.size() == 4);
  CHECK(g_state_fsyncs.load() - fsyncs_before == 1);
  // Then four acks, each Submit returning at once while the disk is slow.
  REQUIRE(writer.Submit("p", 8, {{8, 16}, {16, 24}, {24, 32}}));
  REQUIRE(writer.Submit("p", 16, {{16, 24}, {24, 32}}));
  REQUIRE(writer.Submit("p", 24, {{24, 32}}));
  REQUIRE(writer.Submit("p", 32));
  CHECK(writer.Flush().ok());
  const auto c = spool->LoadCursor("p");
  CHECK(c.offset == 32);
  CHECK(c.ranges.empty());
  // Grouped: the three acks that came during the first one's 40 ms fsync took one more
  // save (or none, if all four came before the worker started), not one each.
  const int ack_fsyncs = g_state_fsyncs.load() - fsyncs_before - 1;
  CHECK(ack_fsyncs >= 1);
  CHECK(ack_fsyncs <= 2);
  CHECK(writer.saves() == static_cast<std::uint64_t>(1 + ack_fsyncs));
}
