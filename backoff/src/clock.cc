// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/clock.h"

#include "fwdsink/abortable_wait.h"

namespace fwdsink {
namespace {

class RealTime final : public TimeSource {
 public:
  MonotonicTime MonotonicNow() const override { return std::chrono::steady_clock::now(); }
  SystemTime SystemNow() const override { return std::chrono::system_clock::now(); }
};

class RealSleep final : public Sleeper {
 public:
  bool SleepFor(std::chrono::milliseconds duration, std::stop_token stop) override {
    return WaitFor(std::move(stop), duration);
  }
};

}  // namespace

TimeSource& RealTimeSource() {
  static RealTime instance;
  return instance;
}

Sleeper& RealSleeper() {
  static RealSleep instance;
  return instance;
}

}  // namespace fwdsink
