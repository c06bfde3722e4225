// SPDX-License-Identifier: Apache-2.0
// The reference receiver's request log across daemon runs that are killed and restarted
// (crash and window-storm tests): where one run's requests end and the next's begin.
//
//   starts.push_back(SettledLogSize(central));  // before each run
//   ... const auto log = central.request_log();  // log[starts[i], starts[i + 1]) is run i
//
// Threading: called on the test's own thread; it only reads the receiver's files and
// GET /stats.
#pragma once

#include <cstddef>

#include <doctest/doctest.h>

#include "support/central_process.h"
#include "support/it_support.h"

namespace fwdsink::test {

// Waits until the receiver has decided every POST that reached it (a killed daemon's
// last request is decided as incomplete once its socket closes) and returns the
// length of its request log: the boundary between one run's requests and the next's.
inline std::size_t SettledLogSize(const CentralProcess& central) {
  std::size_t n = 0;
  const bool settled = WaitFor([&] {
    n = central.request_log().size();  // first the log, then the count of arrivals
    const auto stats = central.Stats();
    return stats.is_object() && stats["requests"] == n;
  });
  REQUIRE(settled);
  return n;
}

}  // namespace fwdsink::test
