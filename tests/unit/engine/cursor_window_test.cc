// SPDX-License-Identifier: Apache-2.0
// CursorWindow: acknowledgements in any order in, the contiguous acknowledged end out.
#include "engine/cursor_window.h"

#include <doctest/doctest.h>

#include <vector>

using fwdsink::CursorWindow;

TEST_CASE("CursorWindow: acknowledgements out of order move the cursor only without a gap") {
  CursorWindow w(100);
  REQUIRE(w.Open(100, 200));
  REQUIRE(w.Open(200, 300));
  REQUIRE(w.Open(300, 400));
  CHECK(w.Ack(200, 300));
  CHECK(w.durable_end() == 100);  // [100, 200) is not acknowledged: nothing past the gap
  CHECK(w.acked_end() == 100);
  CHECK(w.Ack(300, 400));
  CHECK(w.durable_end() == 100);
  CHECK(w.open() == 3);
  CHECK(w.Ack(100, 200));  // the gap closes: the cursor runs to the end of all three
  CHECK(w.durable_end() == 400);
  CHECK(w.acked_end() == 400);
  CHECK(w.open() == 0);
}

TEST_CASE("CursorWindow: a split range is durable only when every part is acknowledged") {
  CursorWindow w(0);
  REQUIRE(w.Open(0, 1000));
  CHECK(w.Open(0, 500));  // a half of the split chunk opens nothing new
  CHECK(w.open() == 1);
  CHECK(w.Ack(0, 250));
  CHECK(w.acked_end() == 250);
  CHECK(w.durable_end() == 0);
  CHECK(w.Inside(250));  // a cursor here would cut the chunk anew after a restart
  CHECK(w.Ack(250, 500));
  CHECK(w.acked_end() == 500);
  CHECK(w.durable_end() == 0);
  CHECK(w.Ack(500, 1000));
  CHECK(w.durable_end() == 1000);
  CHECK_FALSE(w.Inside(1000));
  CHECK(w.open() == 0);
}

TEST_CASE("CursorWindow: the parts of a split range in any order") {
  CursorWindow w(0);
  REQUIRE(w.Open(0, 90));
  CHECK(w.Ack(60, 90));
  CHECK(w.acked_end() == 0);  // the first part is missing: nothing contiguous
  CHECK(w.Ack(0, 30));
  CHECK(w.acked_end() == 30);
  CHECK(w.durable_end() == 0);
  CHECK(w.Ack(30, 60));
  CHECK(w.durable_end() == 90);
}

TEST_CASE("CursorWindow: what it refuses changes nothing") {
  CursorWindow w(10);
  CHECK_FALSE(w.Open(0, 20));   // before the durable end
  CHECK_FALSE(w.Open(20, 20));  // empty
  REQUIRE(w.Open(10, 20));
  CHECK_FALSE(w.Open(15, 30));  // overlaps without lying inside
  CHECK_FALSE(w.Ack(20, 30));   // no open range holds it
  CHECK(w.durable_end() == 10);
  CHECK(w.acked_end() == 10);
  CHECK(w.open() == 1);
  // A range opened past an unopened gap is never durable over the gap.
  CursorWindow g(100);
  REQUIRE(g.Open(200, 300));
  CHECK(g.Ack(200, 300));
  CHECK(g.durable_end() == 100);
  CHECK(g.acked_end() == 100);
  // Twin: a chunk acknowledged whole is durable at once, and nothing is inside.
  CHECK(w.Ack(10, 20));
  CHECK(w.durable_end() == 20);
  CHECK_FALSE(w.Inside(15));
}

// ---- The window of chunks and its journal (issue 22). @ref LLP 0020#cursor-v2 ----

namespace {
using fwdsink::CursorRange;
using Ranges = std::vector<CursorRange>;
CursorRange Owed(std::uint64_t b, std::uint64_t e) { return {.begin = b, .end = e}; }
CursorRange Acked(std::uint64_t b, std::uint64_t e) {
  return {.begin = b, .end = e, .acked = true};
}
}  // namespace

TEST_CASE("CursorWindow: a window of ranges acknowledged in any order") {
  CursorWindow w(0);
  for (std::uint64_t b = 0; b < 64 * 10; b += 10) REQUIRE(w.Open(b, b + 10));
  CHECK(w.open() == 64);
  CHECK(w.end() == 640);
  // Every range but the first, last to first: the gap at 0 holds the cursor.
  for (std::uint64_t b = 630; b >= 10; b -= 10) CHECK(w.Ack(b, b + 10));
  CHECK(w.durable_end() == 0);
  CHECK(w.acked_end() == 0);
  CHECK(w.Pending() == Ranges{Owed(0, 10)});
  CHECK(w.Journal() == Ranges{Owed(0, 10), Acked(10, 640)});  // merged across ranges
  CHECK(w.Ack(0, 10));
  CHECK(w.durable_end() == 640);
  CHECK(w.Journal().empty());
  CHECK(w.Pending().empty());
  // Twin: with nothing open, end() is the durable end, where the next chunk is cut.
  CHECK(w.end() == 640);
  CHECK(CursorWindow(77).end() == 77);
}

TEST_CASE("CursorWindow: a gap in the middle holds the cursor at the gap") {
  CursorWindow w(100);
  REQUIRE(w.Open(100, 200));
  REQUIRE(w.Open(200, 300));
  REQUIRE(w.Open(300, 400));
  CHECK(w.Ack(100, 200));
  CHECK(w.Ack(300, 400));
  CHECK(w.durable_end() == 200);  // [200, 300) is owed
  CHECK(w.Journal() == Ranges{Owed(200, 300), Acked(300, 400)});
  CHECK(w.Pending() == Ranges{Owed(200, 300)});
}

TEST_CASE("CursorWindow: Split cuts an owed piece into two, each journaled on its own") {
  CursorWindow w(0);
  REQUIRE(w.Open(0, 100));
  REQUIRE(w.Open(100, 200));
  CHECK(w.Split(0, 40, 100));
  CHECK(w.Pending() == Ranges{Owed(0, 40), Owed(40, 100), Owed(100, 200)});
  SUBCASE("a piece splits again; the halves are acknowledged one by one") {
    CHECK(w.Split(40, 70, 100));
    CHECK(w.Pending() == Ranges{Owed(0, 40), Owed(40, 70), Owed(70, 100), Owed(100, 200)});
    CHECK(w.Ack(40, 70));
    CHECK(w.Journal() == Ranges{Owed(0, 40), Acked(40, 70), Owed(70, 100), Owed(100, 200)});
    CHECK(w.Ack(0, 40));
    CHECK(w.acked_end() == 70);
    CHECK(w.durable_end() == 0);  // the split range is not whole yet
    CHECK(w.Journal() == Ranges{Acked(0, 70), Owed(70, 100), Owed(100, 200)});
    CHECK(w.Ack(70, 100));
    CHECK(w.durable_end() == 100);
    CHECK(w.Journal() == Ranges{Owed(100, 200)});
  }
  SUBCASE("what Split refuses changes nothing") {
    CHECK_FALSE(w.Split(0, 50, 100));  // no longer a piece: it was split
    CHECK_FALSE(w.Split(0, 0, 40));    // mid not strictly inside
    CHECK_FALSE(w.Split(0, 40, 40));
    CHECK_FALSE(w.Split(0, 20, 30));      // inside a piece, not a piece
    CHECK_FALSE(w.Split(200, 250, 300));  // nothing open there
    CHECK(w.Ack(0, 40));
    CHECK_FALSE(w.Split(0, 20, 40));  // acknowledged whole
    CHECK(w.Journal() == Ranges{Acked(0, 40), Owed(40, 100), Owed(100, 200)});
  }
}

TEST_CASE("CursorWindow: a piece acknowledged in part is owed whole") {
  CursorWindow w(0);
  REQUIRE(w.Open(0, 100));
  CHECK(w.Ack(0, 30));  // a part the window was not told about (no Split)
  CHECK(w.Pending() == Ranges{Owed(0, 100)});
  CHECK(w.Journal() == Ranges{Owed(0, 100)});
}

TEST_CASE("CursorWindow: Restore from a journal re-sends exactly its owed ranges") {
  CursorWindow w(0);
  REQUIRE(w.Open(0, 100));
  REQUIRE(w.Open(100, 200));
  REQUIRE(w.Open(200, 300));
  REQUIRE(w.Split(100, 130, 200));
  REQUIRE(w.Ack(0, 100));
  REQUIRE(w.Ack(130, 200));
  const std::uint64_t offset = w.durable_end();
  const Ranges journal = w.Journal();
  REQUIRE(offset == 100);
  REQUIRE(journal == Ranges{Owed(100, 130), Acked(130, 200), Owed(200, 300)});

  CursorWindow r = CursorWindow::Restore(offset, journal);
  // The same begin and end, so the same keys `<partition>:<begin>-<end>`.
  CHECK(r.Pending() == w.Pending());
  CHECK(r.Pending() == Ranges{Owed(100, 130), Owed(200, 300)});
  CHECK(r.Journal() == journal);
  CHECK(r.durable_end() == 100);
  CHECK(r.end() == 300);
  // A restored owed piece is a range of its own: it is acknowledged whole...
  CHECK(r.Ack(100, 130));
  CHECK(r.durable_end() == 200);
  // ... and the next chunk is cut where the journal ended.
  CHECK(r.Open(r.end(), 400));
  CHECK(r.Pending() == Ranges{Owed(200, 300), Owed(300, 400)});
}

TEST_CASE("CursorWindow: Restore moves the durable end past an acknowledged prefix at once") {
  const Ranges journal{Acked(50, 80), Acked(80, 90), Owed(90, 120), Acked(120, 130)};
  CursorWindow r = CursorWindow::Restore(50, journal);
  CHECK(r.durable_end() == 90);
  CHECK(r.Pending() == Ranges{Owed(90, 120)});
  CHECK(r.Journal() == Ranges{Owed(90, 120), Acked(120, 130)});
  CHECK(r.end() == 130);
  // Twin: an owed head keeps the durable end at the offset.
  CursorWindow h = CursorWindow::Restore(50, Ranges{Owed(50, 80), Acked(80, 90)});
  CHECK(h.durable_end() == 50);
  CHECK(h.Journal() == Ranges{Owed(50, 80), Acked(80, 90)});
  // An empty journal is a window with nothing open at the offset.
  CursorWindow e = CursorWindow::Restore(50, {});
  CHECK(e.durable_end() == 50);
  CHECK(e.end() == 50);
  CHECK(e.open() == 0);
}
