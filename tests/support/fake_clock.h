// SPDX-License-Identifier: Apache-2.0
// FakeClock: a manual TimeSource and Sleeper for tests and bench tools. Not installed:
// test helpers stay out of the library's API.
#pragma once

#include <chrono>
#include <mutex>
#include <stop_token>
#include <vector>

#include "fwdsink/clock.h"

namespace fwdsink {

// A manual clock for tests. Sleeping advances both times by the slept duration and
// records it, so code under test "waits" 300 s in no time. Ignores real time entirely.
// Thread-safe: any thread may call any method (state guarded by mu_).
class FakeClock final : public TimeSource, public Sleeper {
 public:
  // Starts at a fixed, recognisable epoch so test failures print stable times.
  FakeClock() : FakeClock(SystemTime{std::chrono::seconds{1'700'000'000}}) {}
  explicit FakeClock(SystemTime system_start)
      : mono_(MonotonicTime{std::chrono::hours{1}}), system_(system_start) {}

  [[nodiscard]] MonotonicTime MonotonicNow() const override {
    std::lock_guard lock(mu_);
    return mono_;
  }
  [[nodiscard]] SystemTime SystemNow() const override {
    std::lock_guard lock(mu_);
    return system_;
  }
  [[nodiscard]] bool SleepFor(std::chrono::milliseconds duration, std::stop_token stop) override {
    std::lock_guard lock(mu_);
    sleeps_.push_back(duration);
    if (stop.stop_requested()) return false;
    if (duration.count() > 0) {
      mono_ += duration;
      system_ += duration;
    }
    return true;
  }

  // Moves both clocks forward by `d` (tests simulate request time with this).
  void Advance(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    mono_ += d;
    system_ += d;
  }
  // Steps the wall clock alone (an NTP step), leaving monotonic time untouched.
  void StepSystem(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    system_ += d;
  }
  // Returns every duration passed to SleepFor, in order.
  [[nodiscard]] std::vector<std::chrono::milliseconds> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;
  MonotonicTime mono_;                             // guarded by mu_
  SystemTime system_;                              // guarded by mu_
  std::vector<std::chrono::milliseconds> sleeps_;  // guarded by mu_
};

}  // namespace fwdsink
