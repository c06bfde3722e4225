// SPDX-License-Identifier: Apache-2.0
// CursorWriter: saves land on disk by Flush(), newest wins, errors stop the sender.
#include <doctest/doctest.h>

#include <string>

#include "spool/cursor_writer.h"
#include "test_files.h"

using fwdsink::test::FreshDir;
using fwdsink::test::WriteFile;

namespace {
constexpr std::string_view kSuite = "cursor_writer_test";
constexpr const char* kRows = "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n";  // lines end at 8, 16, 24
}  // namespace

TEST_CASE("FlushWaitsUntilTheNewestSubmittedCursorIsOnDisk") {
  auto spool = fwdsink::Spool::Open(FreshDir(kSuite, "flush"));
  REQUIRE(spool.ok());
  REQUIRE(WriteFile(spool->PartitionPath("p"), kRows));
  fwdsink::CursorWriter writer(*spool);
  CHECK(writer.Submit("p", 8));
  CHECK(writer.Submit("p", 16));
  CHECK(writer.Submit("p", 24));
  CHECK(writer.Flush().ok());
  const auto c = spool->LoadCursor("p");
  CHECK(c.status == fwdsink::CursorStatus::kOk);
  CHECK(c.offset == 24);
  SUBCASE("twin: nothing submitted, nothing written") {
    REQUIRE(WriteFile(spool->PartitionPath("q"), kRows));
    CHECK(writer.Flush().ok());
    CHECK(spool->LoadCursor("q").status == fwdsink::CursorStatus::kMissing);
  }
}

TEST_CASE("AFailedSaveRefusesTheNextSubmitAndIsReportedByFlush") {
  auto spool = fwdsink::Spool::Open(FreshDir(kSuite, "error"));
  REQUIRE(spool.ok());
  fwdsink::CursorWriter writer(*spool);
  // An invalid partition name cannot be saved.
  CHECK(writer.Submit("../escape", 8));
  const auto status = writer.Flush();
  CHECK_FALSE(status.ok());
  CHECK_FALSE(status.message().empty());
  SUBCASE("the error is reported once; after it, saves work again") {
    REQUIRE(WriteFile(spool->PartitionPath("p"), kRows));
    CHECK(writer.Submit("p", 8));
    CHECK(writer.Flush().ok());
  }
  SUBCASE("a Submit after the failure, before Flush, is refused") {
    CHECK(writer.Submit("../escape", 8));
    writer.WaitIdle();  // the failure has landed; the error is kept
    CHECK_FALSE(writer.Submit("../escape", 16));
    CHECK_FALSE(writer.Flush().ok());
  }
}
