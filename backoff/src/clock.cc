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

// A fixed, recognisable epoch so test failures print stable times.
FakeClock::FakeClock()
    : FakeClock(SystemTime{std::chrono::seconds{1'700'000'000}}) {}

FakeClock::FakeClock(SystemTime system_start)
    : mono_(MonotonicTime{std::chrono::hours{1}}), system_(system_start) {}

MonotonicTime FakeClock::MonotonicNow() const {
  std::lock_guard lock(mu_);
  return mono_;
}

SystemTime FakeClock::SystemNow() const {
  std::lock_guard lock(mu_);
  return system_;
}

bool FakeClock::SleepFor(std::chrono::milliseconds duration, std::stop_token stop) {
  std::lock_guard lock(mu_);
  sleeps_.push_back(duration);
  if (stop.stop_requested()) return false;
  if (duration.count() > 0) {
    mono_ += duration;
    system_ += duration;
  }
  return true;
}

void FakeClock::Advance(std::chrono::milliseconds d) {
  std::lock_guard lock(mu_);
  mono_ += d;
  system_ += d;
}

void FakeClock::StepSystem(std::chrono::milliseconds d) {
  std::lock_guard lock(mu_);
  system_ += d;
}

std::vector<std::chrono::milliseconds> FakeClock::sleeps() const {
  std::lock_guard lock(mu_);
  return sleeps_;
}

}  // namespace fwdsink
