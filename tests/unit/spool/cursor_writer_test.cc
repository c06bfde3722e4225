// SPDX-License-Identifier: Apache-2.0
// CursorWriter: saves land on disk by Flush(), newest wins, errors stop the sender; and
// as the sink's CursorLog, the journal and the acks reach it with no driver in between.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fwdsink/forward_sink.h"
#include "fwdsink/spool.h"
#include "spool/cursor_writer.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

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

// ---- Grouped saves (issue 22): Submit() returns at once, states submitted while a save
// runs are written by the next save together, the newest winning. @ref LLP 0021#async-cursor

namespace {

// A disk that blocks each save until the test lets it through. The wait is bounded so
// that a Submit() which (wrongly) waited for the save in flight fails the test instead
// of hanging it.
class Gate {
 public:
  void Hook() {
    std::unique_lock lock(mu_);
    ++entered_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return open_; })) timed_out_ = true;
  }
  void WaitEntered(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool timed_out() {
    std::lock_guard lock(mu_);
    return timed_out_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool open_ = false;
  bool timed_out_ = false;
};

constexpr const char* kTenRows =
    "{\"a\":0}\n{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n{\"a\":5}\n{\"a\":6}\n{\"a\":7}\n";
using Ranges = std::vector<fwdsink::CursorRange>;

}  // namespace

TEST_CASE("SubmitsWhileASaveRunsEndInOneMoreSaveAndTheNewestStateWins") {
  auto spool = fwdsink::Spool::Open(FreshDir(kSuite, "grouped"));
  REQUIRE(spool.ok());
  REQUIRE(WriteFile(spool->PartitionPath("p"), kTenRows));
  Gate gate;
  fwdsink::CursorWriter writer(*spool, [&] { gate.Hook(); });
  REQUIRE(writer.Submit("p", 0, Ranges{{0, 8}, {8, 16}}));
  gate.WaitEntered(1);  // the first save is in flight, blocked
  // Three acks' states while it runs: each Submit returns at once.
  CHECK(writer.Submit("p", 8, Ranges{{8, 16}, {16, 24}}));
  CHECK(writer.Submit("p", 8, Ranges{{8, 16}, {16, 24, true}, {24, 32}}));
  CHECK(writer.Submit("p", 16, Ranges{{16, 24, true}, {24, 32}}));
  CHECK(writer.saves() == 0);
  gate.Open();
  CHECK(writer.Sync());
  CHECK_FALSE(gate.timed_out());  // no Submit waited for the save in flight
  CHECK(writer.saves() == 2);     // the first, and one for the three grouped
  const auto c = spool->LoadCursor("p");
  CHECK(c.status == fwdsink::CursorStatus::kOk);
  CHECK(c.offset == 16);
  CHECK(c.ranges == Ranges{{16, 24, true}, {24, 32}});
  SUBCASE("twin: a Submit after the save landed is a save of its own") {
    CHECK(writer.Submit("p", 32));
    CHECK(writer.Sync());
    CHECK(writer.saves() == 3);
    CHECK(spool->LoadCursor("p").ranges.empty());
  }
}

TEST_CASE("GroupedSavesNeverDropAnotherPartitionsState") {
  auto spool = fwdsink::Spool::Open(FreshDir(kSuite, "two"));
  REQUIRE(spool.ok());
  REQUIRE(WriteFile(spool->PartitionPath("p"), kTenRows));
  REQUIRE(WriteFile(spool->PartitionPath("q"), kTenRows));
  Gate gate;
  fwdsink::CursorWriter writer(*spool, [&] { gate.Hook(); });
  REQUIRE(writer.Submit("p", 8));
  gate.WaitEntered(1);
  CHECK(writer.Submit("q", 16, Ranges{{16, 24}}));
  CHECK(writer.Submit("p", 24));
  gate.Open();
  CHECK(writer.Sync());
  CHECK(writer.saves() == 3);
  CHECK(spool->LoadCursor("p").offset == 24);
  CHECK(spool->LoadCursor("q").offset == 16);
  CHECK(spool->LoadCursor("q").ranges == Ranges{{16, 24}});
}

TEST_CASE("SyncWaitsForTheSaveAndReportsAFailureWhichFlushKeeps") {
  auto spool = fwdsink::Spool::Open(FreshDir(kSuite, "sync"));
  REQUIRE(spool.ok());
  REQUIRE(WriteFile(spool->PartitionPath("p"), kTenRows));
  fwdsink::CursorWriter writer(*spool);
  REQUIRE(writer.Submit("p", 8, Ranges{{8, 16}}));
  CHECK(writer.Sync());
  // Sync returned: the journal is on disk, before any byte of [8, 16) would leave.
  CHECK(spool->LoadCursor("p").ranges == Ranges{{8, 16}});
  SUBCASE("a failed save: Sync says so, the error stays for Flush, Submit refuses") {
    REQUIRE(writer.Submit("p", 8, Ranges{{16, 24}}));  // a gap: refused by the spool
    CHECK_FALSE(writer.Sync());
    CHECK_FALSE(writer.Sync());  // still kept
    CHECK_FALSE(writer.Submit("p", 16));
    const auto st = writer.Flush();
    CHECK(st.code() == fwdsink::StatusCode::kInvalidArgument);
    CHECK(writer.Sync());                                     // cleared by Flush
    CHECK(spool->LoadCursor("p").ranges == Ranges{{8, 16}});  // the good record stands
  }
}

// ---- The writer as the sink's CursorLog: handed over in ForwardStart, it takes the
// journal before new ranges leave and the cursor after each ack, without a callback of
// the driver's in between. @ref LLP 0021#cursor-road

namespace {

using namespace std::chrono_literals;
using fwdsink::Outcome;

// Rows of 25 bytes and chunks of at most 64: two rows a chunk, [0, 50) and [50, 100).
constexpr const char* kFourRows =
    "{\"i\":0,\"pad\":\"xxxxxxxx\"}\n{\"i\":1,\"pad\":\"xxxxxxxx\"}\n"
    "{\"i\":2,\"pad\":\"xxxxxxxx\"}\n{\"i\":3,\"pad\":\"xxxxxxxx\"}\n";

// A sink of one chunk in flight at a time (a refill per chunk, so a journal per chunk
// after the first), on the fake clock.
std::unique_ptr<fwdsink::ForwardSink> OneChunkAtATime(const std::string& url,
                                                      fwdsink::FakeClock& clock) {
  fwdsink::ForwardOptions o;
  o.url = url;
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = 64;
  o.transport.read_timeout = 5s;
  o.backpressure.jitter = 0;
  o.window = 1;
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  deps.sleeper = &clock;
  auto created = fwdsink::ForwardSink::Create(std::move(o), std::move(deps));
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  return std::move(created).value();
}

}  // namespace

TEST_CASE("HandedToTheSinkTheWriterTakesTheJournalAndEachAckWithoutCallbacks") {
  auto spool = fwdsink::Spool::Open(FreshDir(kSuite, "as_log"));
  REQUIRE(spool.ok());
  fwdsink_test::ScriptedServer server;
  fwdsink::FakeClock clock;
  auto sink = OneChunkAtATime(server.url(), clock);
  fwdsink::CursorWriter writer(*spool);
  const auto forward = [&] {
    return sink->ForwardPartition("p", spool->PartitionPath("p"),
                                  fwdsink::ForwardStart{.cursor_log = &writer},
                                  /*on_ack=*/{});
  };
  SUBCASE("the second chunk's journal, durable before it left, is what its refusal leaves") {
    REQUIRE(WriteFile(spool->PartitionPath("p"), kFourRows));
    server.Then(200);
    server.Then(404);  // not retried: the call ends with the journal as the last record
    const auto r = forward();
    CHECK(r.outcome == Outcome::kRespooled);
    CHECK(server.requests().size() == 2);
    REQUIRE(writer.Flush().ok());
    const auto c = spool->LoadCursor("p");
    CHECK(c.status == fwdsink::CursorStatus::kOk);
    CHECK(c.offset == 50);
    CHECK(c.ranges == Ranges{{50, 100}});  // owed: only a journal names it
  }
  SUBCASE("an acknowledged chunk's cursor is what a torn tail after it leaves") {
    REQUIRE(WriteFile(spool->PartitionPath("p"), std::string(kFourRows) + "{\"i\":4"));
    const auto r = forward();
    CHECK(r.outcome == Outcome::kPartitionError);
    CHECK(r.resume_offset == 100);
    REQUIRE(writer.Flush().ok());
    const auto c = spool->LoadCursor("p");
    CHECK(c.status == fwdsink::CursorStatus::kOk);
    CHECK(c.offset == 100);  // the second ack's (its journal said 50)
    CHECK(c.ranges.empty());
  }
  SUBCASE("twin: the final chunk's ack writes no cursor") {
    REQUIRE(WriteFile(spool->PartitionPath("p"), kFourRows));
    const auto r = forward();
    CHECK(r.outcome == Outcome::kDelivered);
    REQUIRE(writer.Flush().ok());
    const auto c = spool->LoadCursor("p");
    CHECK(c.offset == 50);  // still the journal of [50, 100), not a cursor at 100
    CHECK(c.ranges == Ranges{{50, 100}});
  }
  SUBCASE("twin: a partition of one chunk costs no record at all") {
    REQUIRE(WriteFile(spool->PartitionPath("p"), "{\"a\":1}\n"));
    CHECK(forward().outcome == Outcome::kDelivered);
    REQUIRE(writer.Flush().ok());
    CHECK(writer.saves() == 0);
    CHECK(spool->LoadCursor("p").status == fwdsink::CursorStatus::kMissing);
  }
}
