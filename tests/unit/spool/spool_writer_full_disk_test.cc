// SPDX-License-Identifier: Apache-2.0
// SpoolWriter, the producer's writer, on a full disk (issue 25 item 1), called from C++
// and through the C API. A failed append cuts the file back to its last whole row, keeps
// the partition open and says the row was not taken; once space returns, append and seal
// go on and every accepted row reaches ready/. The disk fills two ways: a per-process
// file size limit (RLIMIT_FSIZE, EFBIG, runs anywhere) and a small tmpfs mounted here
// (real ENOSPC; skipped when mount is refused). A file of its own: the limit and the
// ignored SIGXFSZ are the whole process's. @ref LLP 0023#writer-enospc
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fwdsink/fwdsink.h"
#include "fwdsink/spool.h"
#include "fwdsink/spool_writer.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using fwdsink::SpoolWriter;
using fwdsink::test::FreshDir;
using fwdsink::test::ReadLines;

namespace {

constexpr std::string_view kSuite = "spool_writer_full_disk_test";
constexpr std::size_t kRowPad = 90;            // ~100-byte rows
constexpr std::uint64_t kFileLimit = 200'000;  // RLIMIT_FSIZE: not a multiple of a row
constexpr int kMaxRows = 100'000;              // a full disk is reached long before

std::string Row(int i) {
  return "{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::string(kRowPad, 'x') + "\"}";
}

// The one partition file in `dir` (incoming/ or ready/), or "".
fs::path OnlyFile(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  return files.front();
}

// Rows 0..n-1, in order, once each.
void CheckRows(const std::vector<std::string>& lines, int n) {
  REQUIRE(lines.size() == static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (lines[static_cast<std::size_t>(i)] != Row(i)) {
      FAIL("row " << i << " is " << lines[static_cast<std::size_t>(i)].substr(0, 40));
    }
  }
}

// Appends rows until the disk refuses one; then checks the partition kept every
// accepted row, refuses again while full, and seals them all once `make_room` ran.
// `append` returns whether the row was accepted (the C++ or the C API).
void FillThenRecover(const fs::path& spool, const std::function<bool(const std::string&)>& append,
                     const std::function<bool()>& seal, const std::function<void()>& make_room) {
  int accepted = 0;
  while (accepted < kMaxRows && append(Row(accepted))) ++accepted;
  REQUIRE(accepted < kMaxRows);  // the disk did fill
  REQUIRE(accepted > 100);
  // The partition is still open, cut back to whole rows (no half row at its end).
  const fs::path temp = OnlyFile(spool / "incoming");
  const std::string bytes = fwdsink::test::ReadFile(temp);
  CHECK((bytes.empty() || bytes.back() == '\n'));
  // Still full: still refused, and a seal cannot happen either; nothing is lost by it.
  CHECK_FALSE(append(Row(accepted)));
  CHECK_FALSE(seal());
  make_room();
  // The refused row, appended again, is taken once; then the seal hands everything over.
  REQUIRE(append(Row(accepted)));
  ++accepted;
  REQUIRE(seal());
  CheckRows(ReadLines(OnlyFile(spool / "ready")), accepted);
  CHECK(fs::is_empty(spool / "incoming"));
}

// Lowers RLIMIT_FSIZE for this process while alive (SIGXFSZ ignored: write fails EFBIG).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_) == 0);
    std::signal(SIGXFSZ, SIG_IGN);
    Set(bytes);
  }
  ~FileSizeLimit() { (void)::setrlimit(RLIMIT_FSIZE, &old_); }
  void Lift() { REQUIRE(::setrlimit(RLIMIT_FSIZE, &old_) == 0); }

 private:
  void Set(rlim_t bytes) {
    rlimit r = old_;
    r.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &r) == 0);
  }
  rlimit old_{};
};

// A 1 MiB tmpfs mounted on `dir` while alive; mounted() is false without the privilege.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(fs::path dir) : dir_(std::move(dir)) {
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=1m") == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  [[nodiscard]] bool mounted() const { return mounted_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

// Fills the tmpfs but for ~150 KB with a file that make_room() deletes.
fs::path FillTmpfs(const fs::path& dir) {
  const fs::path filler = dir / "filler";
  REQUIRE(fwdsink::test::WriteFile(filler, std::string((1 << 20) - 150'000, 'f')));
  return filler;
}

}  // namespace

TEST_CASE("ENOSPC: SpoolWriter keeps the accepted rows, and seals them once space returns") {
  SUBCASE("a file size limit (EFBIG)") {
    const fs::path spool = FreshDir(kSuite, "fsize") / "spool";
    auto w = SpoolWriter::Open(spool);
    REQUIRE(w.ok());
    FileSizeLimit limit(kFileLimit);
    FillThenRecover(
        spool, [&](const std::string& row) { return w->Append(row).ok(); },
        [&] {
          auto r = w->Seal();
          return r.ok() && r->has_value();
        },
        [&] { limit.Lift(); });
  }
  SUBCASE("a full tmpfs (ENOSPC)") {
    const fs::path dir = FreshDir(kSuite, "tmpfs");
    SmallTmpfs tmpfs(dir);
    if (!tmpfs.mounted()) {
      MESSAGE("mount tmpfs refused (not root?): skipped");
      return;
    }
    const fs::path filler = FillTmpfs(dir);
    auto w = SpoolWriter::Open(dir / "spool");
    REQUIRE(w.ok());
    std::string last_error;
    FillThenRecover(
        dir / "spool",
        [&](const std::string& row) {
          const fwdsink::Status st = w->Append(row);
          if (!st.ok()) last_error = st.message();
          return st.ok();
        },
        [&] {
          auto r = w->Seal();
          return r.ok() && r->has_value();
        },
        [&] { fs::remove(filler); });
    CHECK(last_error.find("No space left on device") != std::string::npos);
    CHECK(last_error.find("stays open") != std::string::npos);
  }
}

TEST_CASE("ENOSPC: fwdsink_writer_append (C API) keeps the accepted rows too") {
  const fs::path spool = FreshDir(kSuite, "capi") / "spool";
  char err[512] = "";
  fwdsink_writer_t* w = fwdsink_writer_open(spool.c_str(), 0, 0, err, sizeof err);
  REQUIRE(w != nullptr);
  {
    FileSizeLimit limit(kFileLimit);
    FillThenRecover(
        spool,
        [&](const std::string& row) {
          return fwdsink_writer_append(w, row.data(), row.size(), err, sizeof err) == 0;
        },
        [&] { return fwdsink_writer_seal(w, err, sizeof err) == 1; }, [&] { limit.Lift(); });
  }
  CHECK(fwdsink_writer_close(w, err, sizeof err) == 0);
}

TEST_CASE("twin: with room, every row is accepted and sealed once, in order") {
  const fs::path spool = FreshDir(kSuite, "room") / "spool";
  auto w = SpoolWriter::Open(spool);
  REQUIRE(w.ok());
  constexpr int kRows = 5000;  // past several 64 KiB write blocks
  for (int i = 0; i < kRows; ++i) REQUIRE(w->Append(Row(i)).ok());
  auto sealed = w->Seal();
  REQUIRE(sealed.ok());
  REQUIRE(sealed->has_value());
  CheckRows(ReadLines(OnlyFile(spool / "ready")), kRows);
}
