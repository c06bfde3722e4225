// SPDX-License-Identifier: Apache-2.0
// Crash safety of the `fwdsink` daemon: SIGKILL it at several points while it forwards
// to a throttled receiver, restart it each time, and check that the receiver ends up
// with every input row exactly once (the cursor is persisted after each ack; a chunk
// re-sent after a crash carries the same Idempotency-Key and is deduplicated), and
// that each restart re-sent at most two chunks per sender that the receiver already
// had (the README's promise, LLP 0023#crash-bound), counted from the receiver's log
// run by run. Every kill lands on an event, not at a fixed time: the receiver just
// accepted a chunk of this run (the cursor save is in flight), or the daemon logged a
// split or a dead letter; the third case then proves from the cursor on disk that the
// kill landed inside the split chunk or before the cursor passed the dead letter.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cstdint>
#include <fstream>
#include <map>
#include <set>

#include "fwdsink/spool.h"
#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"
#include "support/request_log.h"
#include "support/test_files.h"

namespace {

namespace fs = std::filesystem;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;
using fwdsink::test::ReadLines;
using fwdsink::test::ReadyRows;
using fwdsink::test::SettledLogSize;
using fwdsink::test::WaitFor;
using namespace std::chrono_literals;

// ~3 MB of rows is ~450 KB on the wire (zstd); at 150 KB/s after a 64 KB burst the
// whole job needs ~3 s of throttled sending: the kills (after a few chunks each) land
// mid-stream, and the final runs still have most of it to do.
constexpr const char* kSpoolBytes = "3m";
constexpr const char* kPartitions = "4";
constexpr const char* kRate = "150000";
constexpr const char* kBurst = "65536";
constexpr const char* kChunkBytes = "64k";
// Each run is killed once the receiver has accepted this many chunks from it: at that
// moment the daemon is reading the answer and saving the cursor, the point the crash
// bound is about.
constexpr std::size_t kAcceptedBeforeKill[] = {2, 5, 3, 7};
constexpr int kFinalRuns = 5;  // --once passes allowed to finish the job
constexpr auto kRunTimeout = 30s;
constexpr auto kEventTimeout = 20s;  // the longest a run may take to reach its kill event

// Chunk bytes the receiver got again under a key it had already accepted.
std::uint64_t DuplicateBytes(const CentralProcess& central) {
  std::uint64_t n = 0;
  for (const auto& line : central.request_log()) {
    if (line.is_object() && line.value("reason", "") == "duplicate") {
      n += line.value("body_bytes", std::uint64_t{0});
    }
  }
  return n;
}

// The rows in spool/dead/*.ndjson.
std::vector<std::string> DeadRows(const fs::path& spool) {
  std::vector<std::string> rows;
  if (!fs::exists(spool / "dead")) return rows;
  for (const auto& e : fs::directory_iterator(spool / "dead")) {
    if (e.path().extension() != ".ndjson") continue;
    auto part = ReadLines(e.path());
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

// A README promise: a crash re-sends at most `--window` chunks with the same key per
// partition (a split chunk counts as one: its halves come back under their own keys).
// These runs keep a window of 2 in flight. @ref LLP 0023#crash-bound
constexpr std::size_t kMaxResentPerCrash = 2;
constexpr const char* kWindow = "2";

// A key "<partition>:<begin>-<end>", taken apart.
struct KeyRange {
  std::string partition;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool contains(const KeyRange& o) const {
    return partition == o.partition && begin <= o.begin && o.end <= end;
  }
};
KeyRange ParseKey(const std::string& key) {
  const auto colon = key.rfind(':');
  const auto dash = key.rfind('-');
  REQUIRE(colon != std::string::npos);
  REQUIRE(dash != std::string::npos);
  REQUIRE(dash > colon);
  return {key.substr(0, colon), std::stoull(key.substr(colon + 1, dash - colon - 1)),
          std::stoull(key.substr(dash + 1))};
}

// The chunks re-sent as duplicates by the run whose requests are log[from, to), per
// partition; a half of a split chunk stands for the chunk (the widest range logged that
// contains it: chunks are never re-cut, so these do not overlap).
std::map<std::string, std::set<std::pair<std::uint64_t, std::uint64_t>>> ResentChunks(
    const std::vector<nlohmann::json>& log, std::size_t from, std::size_t to) {
  std::vector<KeyRange> all;
  for (const auto& e : log) all.push_back(ParseKey(e.value("key", std::string())));
  std::map<std::string, std::set<std::pair<std::uint64_t, std::uint64_t>>> out;
  for (std::size_t i = from; i < to; ++i) {
    if (log[i].value("reason", "") != "duplicate") continue;
    KeyRange widest = all[i];
    for (const KeyRange& k : all) {
      if (k.contains(widest)) widest = k;
    }
    out[widest.partition].insert({widest.begin, widest.end});
  }
  return out;
}

// Checks the crash bound for one run, given where its requests are in the log.
void CheckResentAtMostTwoPerSender(const std::vector<nlohmann::json>& log, std::size_t from,
                                   std::size_t to, std::size_t senders) {
  std::size_t total = 0;
  for (const auto& [partition, chunks] : ResentChunks(log, from, to)) {
    CAPTURE(partition);
    CHECK(chunks.size() <= kMaxResentPerCrash);  // one sender per partition
    total += chunks.size();
  }
  CHECK(total <= kMaxResentPerCrash * senders);
}

// Starts `forward_args` as run `tag`, waits (bounded) for `ready`, SIGKILLs it and
// reaps it; the daemon must still have been forwarding.
template <typename Ready>
void KillWhen(const fs::path& dir, const std::string& tag,
              const std::vector<std::string>& forward_args, Ready ready) {
  DaemonProcess run(dir, tag, forward_args);
  REQUIRE(run.started());
  const bool reached = WaitFor([&] { return ready(run); }, kEventTimeout);
  run.Signal(SIGKILL);
  const auto code = run.Wait(kRunTimeout);
  REQUIRE(reached);
  REQUIRE(code.has_value());
  CHECK(*code == 128 + SIGKILL);  // it was still forwarding: the kill landed mid-stream
}

// Kills the daemon (run with `extra` flags) at several points, restarts it, lets it
// finish; every row must arrive exactly once, and each restart re-send at most two
// chunks per sender in flight.
void CrashAndFinish(const std::string& tag, const std::vector<std::string>& extra,
                    std::size_t senders) {
  const fs::path dir = CentralProcess::ScratchDir(tag);
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  REQUIRE(central.Start({"--rate", kRate, "--burst", kBurst}));
  const std::string url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";

  DaemonProcess gen(
      dir, "generate",
      {"generate", "--spool", spool.string(), "--bytes", kSpoolBytes, "--partitions", kPartitions});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(kRunTimeout) == std::optional<int>(0));
  std::vector<std::string> input = ReadyRows(spool);
  REQUIRE(input.size() > 10'000);

  const std::vector<std::string> forward = {
      "forward",  "--spool", spool.string(), "--url", url,          "--chunk-bytes", kChunkBytes,
      "--ladder", "0.1,0.2", "--max-wait",   "1",     "--log-json", "--window",      kWindow};
  std::vector<std::string> forward_args = forward;
  forward_args.insert(forward_args.end(), extra.begin(), extra.end());

  std::vector<std::size_t> starts;  // where each run's requests begin in the log
  for (std::size_t i = 0; i < std::size(kAcceptedBeforeKill); ++i) {
    CAPTURE(i);
    starts.push_back(SettledLogSize(central));
    const auto accepted_before = central.Stats()["accepted_chunks"].get<std::size_t>();
    KillWhen(dir, "run" + std::to_string(i), forward_args, [&](const DaemonProcess&) {
      const auto stats = central.Stats();
      return stats.is_object() && stats["accepted_chunks"].get<std::size_t>() >=
                                      accepted_before + kAcceptedBeforeKill[i];
    });
  }
  // Twin of "exactly once": the kills really interrupted the work; some rows were
  // still left to send, so the final run has something to do.
  CHECK(central.received_rows().size() < input.size());

  starts.push_back(SettledLogSize(central));
  std::optional<int> last;
  for (int run = 0; run < kFinalRuns && last != std::optional<int>(0); ++run) {
    // A run still going at the timeout is killed when `once` goes out of scope.
    DaemonProcess once(dir, "final" + std::to_string(run), [&] {
      auto a = forward_args;
      a.push_back("--once");
      return a;
    }());
    REQUIRE(once.started());
    last = once.Wait(kRunTimeout);
  }
  REQUIRE(last == std::optional<int>(0));

  std::vector<std::string> received = central.received_rows();
  CHECK(received.size() == input.size());
  std::sort(input.begin(), input.end());
  std::sort(received.begin(), received.end());
  CHECK(std::adjacent_find(received.begin(), received.end()) == received.end());  // no dups
  CHECK(received == input);

  // Run by run: the first run found nothing to re-send (twin); each run after a kill
  // re-sent at most two chunks per sender. The final passes after the first one follow
  // clean exits, so the first final pass carries the last crash's re-sends.
  const auto log = central.request_log();
  starts.push_back(log.size());
  CHECK(ResentChunks(log, starts[0], starts[1]).empty());
  std::size_t resent = 0;
  for (std::size_t run = 1; run + 1 < starts.size(); ++run) {
    CAPTURE(run);
    CheckResentAtMostTwoPerSender(log, starts[run], starts[run + 1], senders);
    for (const auto& [p, chunks] : ResentChunks(log, starts[run], starts[run + 1]))
      resent += chunks.size();
  }
  MESSAGE(tag << ": chunks re-sent after the " << std::size(kAcceptedBeforeKill)
              << " kills: " << resent);
}

// Returns the JSON lines of `text` whose event is `name`.
std::vector<nlohmann::json> EventLines(const std::string& text, const std::string& name) {
  std::vector<nlohmann::json> out;
  std::size_t start = 0;
  const std::string needle = "\"event\":\"" + name + "\"";
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a line still being written
    const std::string line = text.substr(start, end - start);
    if (line.find(needle) != std::string::npos) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) out.push_back(std::move(j));
    }
    start = end + 1;
  }
  return out;
}

// The cursor the killed daemon left on disk for `partition` (0 when there is none).
std::uint64_t CursorOnDisk(const fs::path& spool, const std::string& partition) {
  auto opened = fwdsink::Spool::Open(spool);
  REQUIRE(opened.ok());
  const auto cursor = opened->LoadCursor(partition);
  CHECK(cursor.status != fwdsink::CursorStatus::kCorrupt);
  return cursor.offset;
}

// Whether the journal on disk holds [begin, end) of `partition` as acknowledged: a
// range the restart will not send again (LLP 0020#cursor-v2).
bool AckedInJournal(const fs::path& spool, const std::string& partition, std::uint64_t begin,
                    std::uint64_t end) {
  auto opened = fwdsink::Spool::Open(spool);
  REQUIRE(opened.ok());
  for (const fwdsink::CursorRange& r : opened->LoadCursor(partition).ranges) {
    if (r.acked && r.begin <= begin && end <= r.end) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("SIGKILL at several points, restart, finish: every row exactly once") {
  CrashAndFinish("daemon_crash", {"--concurrency", "1"}, 1);
}

// Four partitions in flight at every kill: each sender's cursor is its own partition's,
// and each lags its acks by two chunks at most. @ref LLP 0018#cursors
TEST_CASE("SIGKILL with four senders in flight, restart, finish: every row exactly once") {
  CrashAndFinish("daemon_crash_conc", {"--concurrency", "4"}, 4);
}

TEST_CASE("SIGKILL while splitting (413 and 400) and dead-lettering: every row once") {
  const fs::path dir = CentralProcess::ScratchDir("daemon_crash_split");
  const fs::path spool = dir / "spool";
  CentralProcess central(dir / "central");
  // A 12 KiB body limit makes every 48 KiB chunk split twice (413); the rate keeps the
  // whole run a few seconds long, and the 10 ms before each answer keeps a split chunk
  // (its refusals and halves, ~8 requests) in flight long enough for a kill on its event.
  REQUIRE(central.Start(
      {"--rate", "600000", "--burst", "65536", "--max-body", "12288", "--header-delay-ms", "10"}));
  const std::string url = "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest";
  DaemonProcess gen(dir, "generate",
                    {"generate", "--spool", spool.string(), "--bytes", "900k", "--partitions", "3",
                     "--seed", "7"});
  REQUIRE(gen.started());
  REQUIRE(gen.Wait(kRunTimeout) == std::optional<int>(0));
  // Break every 499th row: the server refuses its chunk with 400, bisection isolates it.
  std::vector<std::string> good, poison;
  for (const auto& e : fs::directory_iterator(spool / "ready")) {
    auto lines = ReadLines(e.path());
    std::ofstream out(e.path(), std::ios::binary | std::ios::trunc);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i % 499 == 250) lines[i] = "{\"broken\":" + std::to_string(i) + e.path().stem().string();
      (lines[i].starts_with("{\"broken") ? poison : good).push_back(lines[i]);
      out << lines[i] << '\n';
    }
  }
  REQUIRE(poison.size() >= 6);
  const std::vector<std::string> forward = {
      "forward", "--spool",       spool.string(), "--url",    url,       "--chunk-bytes",
      "48k",     "--compression", "identity",     "--ladder", "0.1,0.2", "--max-wait",
      "1",       "--log-json",    "--window",     kWindow};

  // Each run is killed on the first event of its kind in its own log; the kill counts
  // when the spool and the receiver prove where it landed (below). A kill that came too
  // late for its proof is tried again, a few times at most.
  const std::string kSplit = "forward.split", kDead = "driver.dead_letter";
  const std::vector<std::string> plan = {kSplit, kDead, kSplit};
  constexpr int kTriesPerKill = 6;
  std::vector<std::size_t> starts;  // where each run's requests begin in the log
  struct Landed {
    std::size_t run;  // the run after the kill re-sends from here
    KeyRange chunk;   // the split chunk, or the dead letter's rows
    bool dead;
    bool acked = false;  // a dead letter's rows acknowledged past a gap in the journal
  };
  std::vector<Landed> landed;
  int runs = 0;
  for (const std::string& event : plan) {
    CAPTURE(event);
    bool proven = false;
    for (int attempt = 0; attempt < kTriesPerKill && !proven; ++attempt, ++runs) {
      starts.push_back(SettledLogSize(central));
      const std::string tag = "run" + std::to_string(runs);
      nlohmann::json e;  // the event the kill came on
      KillWhen(dir, tag, forward, [&](const DaemonProcess& run) {
        const auto lines = EventLines(run.err(), event);
        if (event == kDead) {
          if (!lines.empty()) e = lines.front();
          return !lines.empty();
        }
        // A split of the later half of a chunk whose earlier half went first: the
        // split is under way, some of its halves sent.
        for (const auto& later : lines) {
          for (const auto& first : lines) {
            if (first.value("partition", "") == later.value("partition", "") &&
                first.value("begin", 0ULL) < later.value("begin", 0ULL) &&
                later.value("end", 0ULL) <= first.value("end", 0ULL)) {
              e = later;
              return true;
            }
          }
        }
        return false;
      });
      REQUIRE(e.is_object());
      const std::string partition = e.value("partition", std::string());
      const KeyRange range{partition, e.value("begin", std::uint64_t{0}),
                           e.value("end", std::uint64_t{0})};
      // The partition is still there (not delivered, its cursor not yet removed).
      const bool pending = fs::exists(spool / "ready" / (partition + ".ndjson"));
      const std::uint64_t cursor = CursorOnDisk(spool, partition);
      const auto log = central.request_log();
      if (event == kSplit) {
        // Inside the split chunk: the receiver stored some of its halves, and the cursor
        // on disk is still at (or before) the chunk's start, so the restart re-sends it
        // whole and it is split again at the same lines. @ref LLP 0023#split-window
        KeyRange chunk = range;
        for (const auto& l : log) {
          const KeyRange k = ParseKey(l.value("key", std::string()));
          if (k.contains(chunk)) chunk = k;
        }
        bool half_stored = false;
        for (const auto& l : log) {
          const KeyRange k = ParseKey(l.value("key", std::string()));
          half_stored =
              half_stored || (chunk.contains(k) && k.end - k.begin < chunk.end - chunk.begin &&
                              l.value("status", 0) == 200);
        }
        proven = pending && half_stored && cursor <= chunk.begin;
        if (proven) landed.push_back({starts.size(), chunk, false});
      } else {
        // Before the cursor passed the dead letter: it is written, and either the restart
        // re-sends its rows, bisects them again and rewrites the same dead letter, or
        // (with a window) the journal already holds its rows as acknowledged past a gap,
        // the cursor still before them, and the restart rightly sends nothing of them.
        // The kill lands in one of the two by construction (the journal's save follows
        // the dead letter within a millisecond, so which one is the machine's): each has
        // its check below, and dead/ holds each refused row once either way.
        const fs::path rows_file = spool / "dead" /
                                   (partition + "." + std::to_string(range.begin) + "-" +
                                    std::to_string(range.end) + ".ndjson");
        const bool acked = AckedInJournal(spool, partition, range.begin, range.end);
        if (acked) MESSAGE("the journal holds the dead letter's rows as acknowledged");
        proven = pending && fs::exists(rows_file) && cursor <= range.begin;
        if (proven) landed.push_back({starts.size(), range, true, acked});
      }
      MESSAGE("kill on " << event << " (" << tag << "): cursor " << cursor << ", range "
                         << range.begin << "-" << range.end
                         << std::string(proven ? "" : ": too late"));
    }
    CHECK(proven);
  }
  CHECK(central.Stats()["accepted_chunks"] > 0);
  starts.push_back(SettledLogSize(central));
  std::optional<int> last;
  for (int run = 0; run < kFinalRuns && last != std::optional<int>(0); ++run) {
    auto a = forward;
    a.push_back("--once");
    DaemonProcess once(dir, "final" + std::to_string(run), a);
    last = once.Wait(kRunTimeout);
  }
  REQUIRE(last == std::optional<int>(0));
  std::vector<std::string> received = central.received_rows();
  std::sort(received.begin(), received.end());
  std::sort(good.begin(), good.end());
  CHECK(received.size() == good.size());
  CHECK(received == good);
  std::vector<std::string> dead = DeadRows(spool);
  std::sort(dead.begin(), dead.end());
  std::sort(poison.begin(), poison.end());
  CHECK(dead == poison);  // each refused row once in dead/, none lost, none twice

  // Where each proven kill landed, a later run re-sent it: the split chunk whole (and
  // refused again), the dead letter's rows (refused again as malformed).
  const auto log = central.request_log();
  starts.push_back(log.size());
  for (const Landed& l : landed) {
    CAPTURE(l.dead);
    CAPTURE(l.chunk.begin);
    const std::string key =
        l.chunk.partition + ":" + std::to_string(l.chunk.begin) + "-" + std::to_string(l.chunk.end);
    // The restart re-sends what the journal owed of it: the dead letter's row again (400,
    // the same dead letter rewritten), or the split chunk's pieces under their own keys,
    // never the whole chunk again (no refusal needed to cut it the same way).
    // @ref LLP 0014#journal
    bool resent = false;
    bool whole_again = false;
    for (std::size_t i = starts[l.run]; i < log.size(); ++i) {
      const KeyRange k = ParseKey(log[i].value("key", std::string()));
      if (l.dead) {
        resent = resent ||
                 (log[i].value("key", std::string()) == key && log[i].value("status", 0) == 400);
      } else {
        resent = resent || (l.chunk.contains(k) && k.end - k.begin < l.chunk.end - l.chunk.begin);
        whole_again = whole_again || log[i].value("key", std::string()) == key;
      }
    }
    // A dead letter's row comes back, unless the journal held it acknowledged (then it
    // must not); a split chunk's pieces come back unless the journal on disk had them
    // all acknowledged already (then nothing of it is re-sent).
    CAPTURE(l.acked);
    if (l.dead) CHECK(resent == !l.acked);
    CHECK_FALSE(whole_again);
  }
  // Run by run, a split chunk counting as one: the first run re-sent nothing (twin),
  // each later one at most two chunks per partition (one sender each).
  CHECK(ResentChunks(log, starts[0], starts[1]).empty());
  for (std::size_t run = 1; run + 1 < starts.size(); ++run) {
    CAPTURE(run);
    CheckResentAtMostTwoPerSender(log, starts[run], starts[run + 1], 3);
    std::map<std::string, std::uint64_t> bytes;  // duplicate bytes per partition
    for (std::size_t i = starts[run]; i < starts[run + 1]; ++i) {
      if (log[i].value("reason", "") != "duplicate") continue;
      bytes[ParseKey(log[i].value("key", std::string())).partition] +=
          log[i].value("body_bytes", std::uint64_t{0});
    }
    for (const auto& [partition, n] : bytes) {
      CAPTURE(partition);
      CHECK(n <= kMaxResentPerCrash * 48 * 1024);
    }
  }
  // Two chunks' worth per crash, halves of a split chunk included (identity: wire bytes
  // are chunk bytes).
  CHECK(DuplicateBytes(central) <= kMaxResentPerCrash * 48 * 1024 * std::size_t(runs));
}
