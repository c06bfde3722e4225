// SPDX-License-Identifier: Apache-2.0
// ConnectionPool: the connection given back last goes out first, so the others age and
// close after the keep-alive (on a fake clock; nothing is posted, so nothing connects).
#include <doctest/doctest.h>

#include <chrono>

#include "engine/connection_pool.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;

TEST_CASE("TakeHandsOutTheConnectionGivenBackLast") {
  fwdsink::FakeClock clock;
  fwdsink::ConnectionPool pool({"http://127.0.0.1:9/a"}, {}, clock, 30s);
  const int a = pool.Take();
  const int b = pool.Take();
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(a != b);
  CHECK(pool.open() == 2);
  pool.Give(a);
  pool.Give(b);
  CHECK(pool.Take() == b);
  SUBCASE("twin: then the one given back before it, then a new one") {
    CHECK(pool.Take() == a);
    const int c = pool.Take();
    CHECK(c != a);
    CHECK(c != b);
    CHECK(pool.open() == 3);
  }
}

TEST_CASE("AConnectionIdleForTheKeepAliveCloses") {
  fwdsink::FakeClock clock;
  fwdsink::ConnectionPool pool({"http://127.0.0.1:9/a", "http://127.0.0.1:9/b"}, {}, clock, 30s);
  const int a = pool.Take();
  const int b = pool.Take();
  pool.Give(a);
  clock.Advance(10s);
  pool.Give(b);
  clock.Advance(19s);
  CHECK(pool.CloseIdle(clock.MonotonicNow()) == 0);  // a idle 29 s: kept
  clock.Advance(1s);
  CHECK(pool.CloseIdle(clock.MonotonicNow()) == 1);  // a idle 30 s: closed
  CHECK(pool.open() == 1);
  SUBCASE("twin: the later one stays until its own keep-alive, and a busy one never closes") {
    CHECK(pool.Take() == b);  // busy now
    clock.Advance(1h);
    CHECK(pool.CloseIdle(clock.MonotonicNow()) == 0);
    CHECK(pool.open() == 1);
    pool.Give(b);
    clock.Advance(30s);
    CHECK(pool.CloseIdle(clock.MonotonicNow()) == 1);
    CHECK(pool.open() == 0);
  }
  SUBCASE("twin: a keep-alive of 0 keeps every connection") {
    fwdsink::ConnectionPool forever({"http://127.0.0.1:9/a"}, {}, clock, 0ms);
    forever.Give(forever.Take());
    clock.Advance(24h);
    CHECK(forever.CloseIdle(clock.MonotonicNow()) == 0);
    CHECK(forever.open() == 1);
  }
}
