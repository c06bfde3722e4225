// SPDX-License-Identifier: Apache-2.0
// CursorWindow: acknowledgements in any order in, the contiguous acknowledged end out.
#include "engine/cursor_window.h"

#include <doctest/doctest.h>

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
