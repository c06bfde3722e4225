// SPDX-License-Identifier: Apache-2.0
#include "notify.h"

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdlib>

namespace fwdsink_cli {

bool LoopWatch::Healthy(const LoopSample& s, std::chrono::steady_clock::time_point now) {
  using Phase = fwdsink::ForwardSink::State::Phase;
  if (!seen_ || s.progress != last_.progress || s.phase != last_.phase ||
      s.wait_until != last_.wait_until) {
    seen_ = true;
    last_ = s;
    changed_at_ = now;
    return true;
  }
  // A backoff wait is bounded by --max-wait: stillness inside it is the job. The stall
  // clock starts again when the wait should have ended. @ref LLP 0025#watchdog
  auto since = changed_at_;
  if (s.phase == Phase::kWaiting) since = std::max(since, s.wait_until);
  return now - since < stall_;
}

std::chrono::milliseconds StallLimit(const fwdsink::DriverOptions& o) {
  using std::chrono::milliseconds;
  const milliseconds longest_pause = *std::max_element(o.tick_pauses.begin(), o.tick_pauses.end());
  const double spread = 1.0 + std::max(0.0, o.forward.backpressure.jitter);
  const auto pauses = milliseconds(static_cast<std::int64_t>(2 * spread * longest_pause.count()));
  const auto& t = o.forward.transport;
  const auto upload = milliseconds(static_cast<std::int64_t>(
      1000.0 * static_cast<double>(o.forward.chunker.chunk_bytes) /
      static_cast<double>(std::max<std::uint64_t>(1, t.min_throughput_bytes_per_s))));
  const auto request = t.connect_timeout + upload + t.response_timeout + t.read_timeout;
  return std::max(pauses, request) + std::chrono::seconds(10);
}

LoopSample SampleLoop(const fwdsink::Driver& d) {
  const fwdsink::CountersSnapshot c = d.sink_counters();  // every sender's, summed
  // With several senders: sending if any sends, else waiting until the latest wait ends.
  using Phase = fwdsink::ForwardSink::State::Phase;
  LoopSample sample{.progress = d.counters().ticks.load(std::memory_order_relaxed) + c.chunks_sent +
                                c.transport_errors + c.waits + c.gate_waits + c.pacer_waits +
                                c.respools,
                    .phase = Phase::kIdle,
                    .wait_until = {}};
  for (const auto& state : d.sender_states()) {
    if (state.phase == Phase::kSending) sample.phase = Phase::kSending;
    if (state.phase == Phase::kWaiting && sample.phase != Phase::kSending) {
      sample.phase = Phase::kWaiting;
      sample.wait_until = std::max(sample.wait_until, state.until);
    }
  }
  return sample;
}

ServiceNotifier::ServiceNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket && *socket;
  std::uint64_t usec = 0;
  // sd_watchdog_enabled checks WATCHDOG_PID too: a watchdog meant for a parent is not ours.
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0) watchdog_ = std::chrono::microseconds(usec);
}

void ServiceNotifier::Send(const std::string& message) const {
  if (enabled_) (void)sd_notify(0, message.c_str());
}

void ServiceNotifier::Ready(std::string_view status) {
  Send("READY=1\nSTATUS=" + std::string(status));
}

void ServiceNotifier::Stopping() {
  Stop();  // no WATCHDOG=1 or STATUS= after STOPPING=1
  Send("STOPPING=1\nSTATUS=stopping");
}

void ServiceNotifier::Start(std::function<bool()> healthy, std::function<std::string()> status,
                            std::chrono::milliseconds status_period) {
  if (!enabled_ || thread_.joinable()) return;
  healthy_ = std::move(healthy);
  status_ = std::move(status);
  // Half the watchdog period, as sd_watchdog_enabled(3) advises.
  auto period = status_period;
  if (watchdog_.count() > 0) {
    period = std::max(std::chrono::milliseconds(1),
                      std::chrono::duration_cast<std::chrono::milliseconds>(watchdog_ / 2));
  }
  thread_ = std::thread([this, period] { Loop(period); });
}

void ServiceNotifier::Loop(std::chrono::milliseconds period) {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
    std::string message = "STATUS=" + status_();
    if (watchdog_.count() > 0 && healthy_()) message = "WATCHDOG=1\n" + message;
    Send(message);
  }
}

void ServiceNotifier::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fwdsink_cli
