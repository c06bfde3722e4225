// SPDX-License-Identifier: Apache-2.0
// The journal against a reference model (Vector's disk_v2 model tests are the anchor):
// random sequences of opening ranges, acks in any order, splits, journal saves through
// the real Spool and CursorWriter, and crashes (the window dropped and rebuilt from
// Spool::LoadCursor). After every restart the pieces re-sent are exactly the journaled
// unacknowledged ones, no byte is lost, and no byte is sent under two keys unless the
// first was refused and split. A failure prints its seed; FWDSINK_MODEL_SEED=<n> and
// FWDSINK_MODEL_CASES=<n> replay one. @ref LLP 0020#cursor-v2 @ref LLP 0023#crash-bound
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/cursor_window.h"
#include "fwdsink/spool.h"
#include "spool/cursor_writer.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using fwdsink::CursorRange;
using fwdsink::CursorStatus;
using fwdsink::CursorWindow;
using Ranges = std::vector<CursorRange>;

namespace {

constexpr std::string_view kSuite = "journal_model_test";
constexpr const char* kName = "p";
// A partition of newlines only: every offset is a line start, so line boundaries are
// irrelevant here and any cut is a valid journal boundary.
constexpr std::uint64_t kSize = 3000;
constexpr std::size_t kWindow = 64;
constexpr int kSteps = 50;

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// The reference model of the window: ranges made of pieces, by brute force.
struct RefPiece {
  std::uint64_t b, e;
  bool acked = false;
};
struct RefRange {
  std::vector<RefPiece> pieces;
  [[nodiscard]] std::uint64_t b() const { return pieces.front().b; }
  [[nodiscard]] std::uint64_t e() const { return pieces.back().e; }
  [[nodiscard]] bool done() const {
    for (const RefPiece& p : pieces) {
      if (!p.acked) return false;
    }
    return true;
  }
};
struct Ref {
  std::uint64_t base = 0;
  std::vector<RefRange> ranges;

  [[nodiscard]] std::uint64_t end() const { return ranges.empty() ? base : ranges.back().e(); }
  void Retire() {
    while (!ranges.empty() && ranges.front().done() && ranges.front().b() == base) {
      base = ranges.front().e();
      ranges.erase(ranges.begin());
    }
  }
  [[nodiscard]] Ranges Journal() const {
    Ranges out;
    for (const RefRange& r : ranges) {
      for (const RefPiece& p : r.pieces) {
        if (p.acked && !out.empty() && out.back().acked && out.back().end == p.b) {
          out.back().end = p.e;
        } else {
          out.push_back({p.b, p.e, p.acked});
        }
      }
    }
    return out;
  }
  [[nodiscard]] Ranges Pending() const {
    Ranges out;
    for (const RefRange& r : ranges) {
      for (const RefPiece& p : r.pieces) {
        if (!p.acked) out.push_back({p.b, p.e, false});
      }
    }
    return out;
  }
  static Ref From(std::uint64_t offset, const Ranges& journal) {
    Ref m;
    m.base = offset;
    for (const CursorRange& r : journal) m.ranges.push_back({{{r.begin, r.end, r.acked}}});
    m.Retire();
    return m;
  }
};

std::string Show(const Ranges& rs) {
  std::ostringstream out;
  for (const CursorRange& r : rs) out << r.begin << "-" << r.end << (r.acked ? "a " : "f ");
  return out.str();
}

using Key = std::pair<std::uint64_t, std::uint64_t>;
bool Overlap(const Key& a, const Key& b) { return a.first < b.second && b.first < a.second; }

struct DiskState {
  std::uint64_t offset = 0;
  Ranges ranges;
};

// One random case: the window, the reference model, the server's memory, the disk.
class Case {
 public:
  Case(std::uint64_t seed, fwdsink::Spool& spool) : rng_(seed), spool_(spool) {
    writer_ = std::make_unique<fwdsink::CursorWriter>(spool_);
  }

  // Runs the case; returns the first broken rule, or "" when all held.
  std::string Run() {
    for (step_ = 0; step_ < kSteps && error_.empty(); ++step_) {
      const int op = Pick(100);
      if (op < 30) {
        OpenRange();
      } else if (op < 45) {
        Refill();
      } else if (op < 75) {
        AckPiece();
      } else if (op < 88) {
        SplitPiece();
      } else {
        Crash();
      }
      if (error_.empty()) Compare();
    }
    writer_.reset();
    return error_;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  void Fail(const std::string& what) {
    if (error_.empty()) error_ = "step " + std::to_string(step_) + ": " + what;
  }

  void OpenRange() {
    if (w_.open() >= kWindow || w_.end() >= kSize) return;
    const std::uint64_t b = w_.end();
    const std::uint64_t e = std::min<std::uint64_t>(kSize, b + 1 + rng_() % 60);
    if (!w_.Open(b, e)) return Fail("Open(" + std::to_string(b) + ", " + std::to_string(e) + ")");
    ref_.ranges.push_back({{{b, e, false}}});
  }

  // The journal-before-sending rule: the journal is durable, then every owed piece
  // (new ranges, split pieces, re-sends) leaves.
  void Refill() {
    if (!Submit()) return;
    if (!writer_->Sync()) return Fail("Sync failed");
    possible_ = {possible_.back()};
    for (const CursorRange& p : w_.Pending()) Send({p.begin, p.end});
  }

  bool Submit() {
    DiskState s{w_.durable_end(), w_.Journal()};
    if (!writer_->Submit(kName, s.offset, s.ranges)) {
      Fail("Submit refused");
      return false;
    }
    possible_.push_back(std::move(s));
    return true;
  }

  void Send(const Key& k) {
    for (const Key& j : sent_) {
      // A byte is sent again only under the key it was sent under, or under a piece of
      // a key that was refused and split; never under a wider or a shifted key.
      if (Overlap(j, k) && j != k && !(j.first <= k.first && k.second <= j.second)) {
        return Fail("key " + std::to_string(k.first) + "-" + std::to_string(k.second) +
                    " overlaps key " + std::to_string(j.first) + "-" + std::to_string(j.second) +
                    " sent before");
      }
    }
    sent_.insert(k);
  }

  // A random owed piece that has been sent (only those can be answered); for a refusal,
  // one the server has not accepted before (a deduplicating server answers a re-sent
  // accepted key with 2xx).
  bool SentPiece(CursorRange& out, bool refusable = false) {
    std::vector<CursorRange> owed;
    for (const CursorRange& p : w_.Pending()) {
      if (sent_.count({p.begin, p.end}) && !(refusable && accepted_.count({p.begin, p.end}))) {
        owed.push_back(p);
      }
    }
    if (owed.empty()) return false;
    out = owed[static_cast<std::size_t>(Pick(static_cast<int>(owed.size())))];
    return true;
  }

  RefPiece* RefFind(std::uint64_t b, std::uint64_t e, RefRange** range = nullptr) {
    for (RefRange& r : ref_.ranges) {
      for (RefPiece& p : r.pieces) {
        if (p.b == b && p.e == e) {
          if (range) *range = &r;
          return &p;
        }
      }
    }
    return nullptr;
  }

  void AckPiece() {
    CursorRange p;
    if (!SentPiece(p)) return;
    const Key k{p.begin, p.end};
    for (const Key& j : accepted_) {
      if (Overlap(j, k) && j != k) return Fail("bytes accepted under two keys");
    }
    accepted_.insert(k);
    for (std::uint64_t i = p.begin; i < p.end; ++i) server_acked_[i] = true;
    if (!w_.Ack(p.begin, p.end)) return Fail("Ack refused a sent piece");
    RefPiece* rp = RefFind(p.begin, p.end);
    if (!rp) return Fail("the model has no such piece");
    rp->acked = true;
    ref_.Retire();
    (void)Submit();  // after an ack: no wait (grouped)
  }

  void SplitPiece() {
    CursorRange p;
    if (!SentPiece(p, /*refusable=*/true) || p.end - p.begin < 2) return;
    const std::uint64_t mid = p.begin + 1 + rng_() % (p.end - p.begin - 1);
    if (!w_.Split(p.begin, mid, p.end)) return Fail("Split refused");
    RefRange* r = nullptr;
    RefPiece* rp = RefFind(p.begin, p.end, &r);
    if (!rp) return Fail("the model has no such piece");
    const auto at = r->pieces.begin() + (rp - r->pieces.data());
    *at = RefPiece{mid, p.end, false};
    r->pieces.insert(at, RefPiece{p.begin, mid, false});
  }

  // The process dies: the disk holds the last synced state or any state submitted after
  // it (grouped saves skip states but never reorder them).
  void Crash() {
    writer_.reset();
    const DiskState& disk =
        possible_[static_cast<std::size_t>(Pick(static_cast<int>(possible_.size())))];
    if (!spool_.SaveCursor(kName, disk.offset, disk.ranges).ok()) return Fail("SaveCursor");
    const fwdsink::CursorState c = spool_.LoadCursor(kName);
    if (c.status != CursorStatus::kOk || c.offset != disk.offset || c.ranges != disk.ranges) {
      return Fail("LoadCursor gave " + std::to_string(c.offset) + " " + Show(c.ranges) + " for " +
                  std::to_string(disk.offset) + " " + Show(disk.ranges));
    }
    w_ = CursorWindow::Restore(c.offset, c.ranges);
    ref_ = Ref::From(c.offset, c.ranges);
    writer_ = std::make_unique<fwdsink::CursorWriter>(spool_);
    possible_ = {DiskState{c.offset, c.ranges}};
    CheckRestart(c);
  }

  void CheckRestart(const fwdsink::CursorState& c) {
    Ranges owed;
    for (const CursorRange& r : c.ranges) {
      if (!r.acked) owed.push_back(r);
    }
    if (w_.Pending() != owed) {
      return Fail("re-sent " + Show(w_.Pending()) + " for the journal's " + Show(c.ranges));
    }
    // No byte lost: what the window will not send again was accepted by the server.
    for (std::uint64_t i = 0; i < w_.end(); ++i) {
      bool owed_byte = false;
      for (const CursorRange& r : owed) owed_byte |= r.begin <= i && i < r.end;
      if (!owed_byte && !server_acked_[i]) {
        return Fail("byte " + std::to_string(i) + " is lost: neither owed nor accepted");
      }
    }
    // Nothing sent lies past where the window cuts new chunks.
    for (const Key& k : sent_) {
      if (k.second > w_.end()) return Fail("a key sent before lies past end() after a restart");
    }
    for (const CursorRange& r : owed) Send({r.begin, r.end});  // re-sent at once
  }

  void Compare() {
    if (w_.Journal() != ref_.Journal()) {
      Fail("Journal " + Show(w_.Journal()) + " vs model " + Show(ref_.Journal()));
    } else if (w_.Pending() != ref_.Pending()) {
      Fail("Pending " + Show(w_.Pending()) + " vs model " + Show(ref_.Pending()));
    } else if (w_.durable_end() != ref_.base || w_.end() != ref_.end()) {
      Fail("durable_end/end " + std::to_string(w_.durable_end()) + "/" + std::to_string(w_.end()) +
           " vs model " + std::to_string(ref_.base) + "/" + std::to_string(ref_.end()));
    }
  }

  std::mt19937_64 rng_;
  fwdsink::Spool& spool_;
  std::unique_ptr<fwdsink::CursorWriter> writer_;
  CursorWindow w_;
  Ref ref_;
  std::set<Key> sent_;      // every key the server has seen
  std::set<Key> accepted_;  // every key it accepted
  std::vector<bool> server_acked_ = std::vector<bool>(kSize, false);
  std::vector<DiskState> possible_{DiskState{}};
  int step_ = 0;
  std::string error_;
};

// A tmpfs keeps thousands of saves well under a second; the real disk's fsync would
// take minutes, so without one the case count drops.
fs::path ModelDir(std::uint64_t& cases) {
  const fs::path shm = "/dev/shm";
  std::error_code ec;
  if (fs::is_directory(shm, ec) && ::access(shm.c_str(), W_OK) == 0) {
    const fs::path dir = shm / ("fwdsink-journal-model-" + std::to_string(::getpid()));
    fs::remove_all(dir, ec);
    return dir;
  }
  cases = std::min<std::uint64_t>(cases, 100);
  return fwdsink::test::FreshDir(kSuite, "model");
}

}  // namespace

TEST_CASE("JournalModel: restarts re-send exactly the journaled owed pieces, lose nothing") {
  std::uint64_t cases = EnvOr("FWDSINK_MODEL_CASES", 2000);
  const std::uint64_t first_seed = EnvOr("FWDSINK_MODEL_SEED", 1);
  const fs::path dir = ModelDir(cases);
  auto spool = fwdsink::Spool::Open(dir);
  REQUIRE(spool.ok());
  REQUIRE(fwdsink::test::WriteFile(spool->PartitionPath(kName), std::string(kSize, '\n')));
  std::uint64_t failed = 0;
  for (std::uint64_t seed = first_seed; seed < first_seed + cases && failed == 0; ++seed) {
    std::error_code ec;
    fs::remove(spool->state_dir() / "p.cursor", ec);
    const std::string error = Case(seed, *spool).Run();
    if (!error.empty()) {
      ++failed;
      FAIL_CHECK("FWDSINK_MODEL_SEED=" << seed << " FWDSINK_MODEL_CASES=1: " << error);
    }
  }
  MESSAGE(cases << " cases from seed " << first_seed << " in " << dir.string());
  std::error_code ec;
  if (dir.string().starts_with("/dev/shm/")) fs::remove_all(dir, ec);
}

// ---- A crash at every open, write, fsync and rename of a cursor save ----

namespace {

extern "C" char** environ;

// Runs cursor_save_child with `extra` added to the environment; returns its exit code
// (-1 when it did not exit normally).
int RunChild(const std::vector<std::string>& extra, const std::vector<std::string>& args) {
  // An entry of `extra` replaces the inherited one of its name (the first of two wins in
  // getenv, and scripts/test.sh exports ASAN_OPTIONS under --sanitize).
  const auto overridden = [&extra](std::string_view e) {
    const std::string_view name = e.substr(0, e.find('='));
    return std::any_of(extra.begin(), extra.end(), [name](const std::string& x) {
      return x.size() > name.size() && x.starts_with(name) && x[name.size()] == '=';
    });
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (!overridden(*e)) env.emplace_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<char*> envp, argv;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> all{FWDSINK_CURSOR_SAVE_CHILD};
  all.insert(all.end(), args.begin(), args.end());
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("JournalCrash: a save killed at any write, fsync or rename leaves the old or new state") {
  const fs::path dir = fwdsink::test::FreshDir(kSuite, "crash");
  auto spool = fwdsink::Spool::Open(dir / "spool");
  REQUIRE(spool.ok());
  REQUIRE(fwdsink::test::WriteFile(spool->PartitionPath(kName), std::string(100, '\n')));
  const DiskState old_state{8, {{8, 16}, {16, 24, true}, {24, 40}}};
  const DiskState new_state{16, {{16, 24, true}, {24, 32}, {32, 40}, {40, 48}}};
  const std::vector<std::string> new_args{
      (dir / "spool").string(), kName, "16", "16-24:a", "24-32:f", "32-40:f", "40-48:f"};
  struct Point {
    const char* op;
    const char* action;
  };
  for (const Point point :
       {Point{"open", "crash"}, Point{"write", "crash"}, Point{"write", "torn"},
        Point{"fsync", "crash"}, Point{"rename", "crash"}, Point{"open", "fail"},
        Point{"write", "fail"}, Point{"fsync", "fail"}, Point{"rename", "fail"}}) {
    int hits = 0;
    const std::string where = std::string(point.op) + " " + point.action;
    for (int nth = 1; nth <= 10; ++nth) {
      CAPTURE(where);
      CAPTURE(nth);
      REQUIRE(spool->SaveCursor(kName, old_state.offset, old_state.ranges).ok());
      const fs::path log = dir / "fault.log";
      std::error_code ec;
      fs::remove(log, ec);
      const int code =
          RunChild({"FWDSINK_FAULT_LOG=" + log.string(), "LD_PRELOAD=" FWDSINK_FAULT_SHIM,
                    "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0",
                    std::string("FWDSINK_FAULT_OP=") + point.op, "FWDSINK_FAULT_PATH=/state",
                    "FWDSINK_FAULT_NTH=" + std::to_string(nth),
                    std::string("FWDSINK_FAULT_ACTION=") + point.action},
                   new_args);
      REQUIRE((code == 0 || code == 1 || code == 86));
      const fwdsink::CursorState c = spool->LoadCursor(kName);
      // A process killed mid-save leaves the old record or the new one, never a torn or
      // half one: the record's name is only ever the target of a rename.
      CHECK(c.status == CursorStatus::kOk);
      const bool is_old = c.offset == old_state.offset && c.ranges == old_state.ranges;
      const bool is_new = c.offset == new_state.offset && c.ranges == new_state.ranges;
      CHECK((is_old || is_new));
      if (!fs::exists(log)) {
        CHECK(code == 0);
        CHECK(is_new);  // the nth call never came: the save went through
        break;
      }
      ++hits;
      // The next save after a crash or a failure works (a stale temp file is replaced).
      if (nth == 1) {
        REQUIRE(spool->SaveCursor(kName, new_state.offset, new_state.ranges).ok());
        CHECK(spool->LoadCursor(kName).ranges == new_state.ranges);
      }
    }
    CAPTURE(where);
    MESSAGE(where << ": " << hits << " calls hit");
    CHECK(hits >= 1);  // the point was reached at least once
  }
}
