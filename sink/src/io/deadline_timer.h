// SPDX-License-Identifier: Apache-2.0
// One thread for the deadlines of every request in the process. Internal to the sink.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace fwdsink {

// Calls each armed function once its steady-clock deadline has passed, on the timer's
// one thread (started by the first Arm()). A request's deadlines (LLP 0023#deadlines)
// had a thread each per connection, waiting out a deadline that almost never fires; one
// thread for them all is what keeps threads bounded by the work (@ref LLP 0014#threads).
// The functions run outside the timer's lock and must be short: shutting a socket down,
// waking a waiter.
//
// Threads: Arm() and Cancel() from any thread but the timer's own.
class DeadlineTimer {
 public:
  using Time = std::chrono::steady_clock::time_point;
  using Id = std::uint64_t;

  DeadlineTimer() = default;
  ~DeadlineTimer();
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  // Arms `fire` for `at`; the id cancels it.
  [[nodiscard]] Id Arm(Time at, std::function<void()> fire);
  // Disarms `id`: true when it had not fired. When it is firing now, waits until its
  // function has returned (so what it touches may go away after Cancel()).
  bool Cancel(Id id);

  // The process's timer, shared by every holder: made by the first call after none was
  // held, gone (joined) with the last holder.
  static std::shared_ptr<DeadlineTimer> Shared();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<Time, Id>, std::function<void()>> armed_;  // guarded by mu_
  std::map<Id, Time> at_;                                       // guarded by mu_
  Id next_ = 1;                                                 // guarded by mu_
  Id firing_ = 0;      // the id whose function runs now, 0 for none; guarded by mu_
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace fwdsink
