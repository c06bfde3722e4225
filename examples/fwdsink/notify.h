// SPDX-License-Identifier: Apache-2.0
// systemd integration for `fwdsink forward`: sd_notify READY=1 / STOPPING=1 / STATUS= /
// WATCHDOG=1 through libsystemd. A no-op outside systemd (no NOTIFY_SOCKET).
// @ref LLP 0025#systemd
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "fwdsink/driver.h"
#include "fwdsink/forward_sink.h"

namespace fwdsink_cli {

// One look at the working loop, for LoopWatch.
struct LoopSample {
  // Any number that moves whenever the loop does something (ticks, requests, waits).
  std::uint64_t progress = 0;
  fwdsink::ForwardSink::State::Phase phase = fwdsink::ForwardSink::State::Phase::kIdle;
  std::chrono::steady_clock::time_point wait_until{};  // the wait's end, when waiting
};

// Decides whether the driver's loop is healthy enough to pet the watchdog: it is, unless
// nothing has moved for longer than `stall` — counted from the end of the current wait
// when the sender is in a (bounded) backoff wait. Pure: the caller passes the time.
// One thread (the notifier's).
class LoopWatch {
 public:
  explicit LoopWatch(std::chrono::milliseconds stall) : stall_(stall) {}
  [[nodiscard]] bool Healthy(const LoopSample& s, std::chrono::steady_clock::time_point now);

 private:
  const std::chrono::milliseconds stall_;
  bool seen_ = false;
  LoopSample last_{};
  std::chrono::steady_clock::time_point changed_at_{};
};

// How long the loop may stand still before the watchdog stops being petted: longer than
// the longest pause between ticks (jitter included) and than one request may take.
[[nodiscard]] std::chrono::milliseconds StallLimit(const fwdsink::DriverOptions& options);
// The progress number LoopWatch looks at, from the driver's and sink's counters.
[[nodiscard]] LoopSample SampleLoop(const fwdsink::Driver& driver);

// Talks to the service manager. Ready(), Stopping() and Start()/Stop() are called from
// the daemon's main thread; the loop thread sends WATCHDOG=1 and STATUS=.
class ServiceNotifier {
 public:
  ServiceNotifier();
  ~ServiceNotifier() { Stop(); }
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // Whether NOTIFY_SOCKET is set (systemd is listening).
  [[nodiscard]] bool enabled() const { return enabled_; }
  // Returns the watchdog period systemd asked for (WATCHDOG_USEC), or 0.
  [[nodiscard]] std::chrono::microseconds watchdog() const { return watchdog_; }

  // Sends READY=1 with a first STATUS=.
  void Ready(std::string_view status);
  // Sends STOPPING=1.
  void Stopping();
  // Starts the loop thread: every half watchdog period (or every `status_period` without
  // a watchdog), STATUS=<status()>, and WATCHDOG=1 when healthy() says so.
  void Start(std::function<bool()> healthy, std::function<std::string()> status,
             std::chrono::milliseconds status_period);
  // Stops the loop thread; prompt, idempotent.
  void Stop();

 private:
  void Send(const std::string& message) const;
  void Loop(std::chrono::milliseconds period);

  bool enabled_ = false;
  std::chrono::microseconds watchdog_{0};
  std::function<bool()> healthy_;
  std::function<std::string()> status_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace fwdsink_cli
