// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/abortable_wait.h"

#include <condition_variable>
#include <mutex>

namespace fwdsink {

bool WaitFor(std::stop_token stop, std::chrono::nanoseconds duration) {
  if (stop.stop_requested()) return false;
  if (duration <= std::chrono::nanoseconds::zero()) return true;
  // The stop_token overload of wait_until registers a stop_callback that notifies this
  // condition variable, so a stop request from any thread wakes us without polling.
  // A deadline (not a relative wait) keeps spurious wake-ups from stretching the pause.
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  const auto deadline = std::chrono::steady_clock::now() + duration;
  cv.wait_until(lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace fwdsink
