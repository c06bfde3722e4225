// SPDX-License-Identifier: Apache-2.0
// Time sources and sleepers, injected everywhere fwdsink needs "now" or a pause.
//
// Monotonic time is for intervals, budgets and deadlines; system (wall) time is used
// only to turn an HTTP-date into a delay and to stamp records. Tests use FakeClock,
// whose sleeps advance time instantly, so no unit test sleeps to check timing (it lives
// in tests/support/fake_clock.h, which is not installed).
#pragma once

#include <chrono>
#include <stop_token>

namespace fwdsink {

using MonotonicTime = std::chrono::steady_clock::time_point;
using SystemTime = std::chrono::system_clock::time_point;

// A source of both kinds of time. Implementations are safe to call from any thread.
class TimeSource {
 public:
  virtual ~TimeSource() = default;
  // Returns monotonic "now": never goes backwards, unaffected by wall-clock steps.
  [[nodiscard]] virtual MonotonicTime MonotonicNow() const = 0;
  // Returns wall-clock "now": for HTTP-dates and timestamps only, never for intervals.
  [[nodiscard]] virtual SystemTime SystemNow() const = 0;
};

// Pauses the calling thread. Implementations are safe to call from any thread.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Sleeps up to `duration`; returns true if it elapsed in full, false as soon as
  // `stop` is requested (at once if it already was). Non-positive durations return
  // immediately with !stop.stop_requested().
  [[nodiscard]] virtual bool SleepFor(std::chrono::milliseconds duration, std::stop_token stop) = 0;
};

// The process's real clocks (std::chrono::steady_clock and system_clock).
[[nodiscard]] TimeSource& RealTimeSource();
// A sleeper built on WaitFor() (see abortable_wait.h): a real pause that stop aborts.
[[nodiscard]] Sleeper& RealSleeper();

}  // namespace fwdsink
