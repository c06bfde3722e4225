// SPDX-License-Identifier: Apache-2.0
// Phase waits for the real-time bounds of the integration tests: before a test times
// how fast a pause or a request is cut short, it waits until the thread to be cut short
// is really blocked in it. A short sleep "to reach the blocking call" passes without
// exercising anything when the thread is late (the stop is then seen before the wait
// begins); these helpers ask the kernel instead (Linux: /proc/self/task/TID/syscall).
//
//   PhaseSleeper sleeper;                 // ForwardDeps::sleeper = &sleeper
//   ... start the driver ...
//   REQUIRE(WaitFor([&] { return sleeper.sleeping(); }));
//   ... now time Close() ...
//
// Threading: ThisThreadId() and BlockedSyscall() may be called from any thread;
// PhaseSleeper is called by the threads that sleep and read by any thread.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <stop_token>
#include <string>

#include "fwdsink/clock.h"

namespace fwdsink::test {

// Returns the kernel's id of the calling thread.
inline pid_t ThisThreadId() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Returns the number of the system call thread `tid` of this process is blocked in, or
// -1 when it is running, in user space, or gone.
inline long BlockedSyscall(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string first;
  if (!(in >> first) || first == "running") return -1;
  try {
    return std::stol(first);
  } catch (...) {
    return -1;
  }
}

// Returns whether thread `tid` is blocked on a futex: a condition variable's wait (an
// abortable pause) or a mutex.
inline bool BlockedOnFutex(pid_t tid) { return BlockedSyscall(tid) == SYS_futex; }

// Returns whether thread `tid` is blocked in a system call other than a futex wait (a
// poll or recv on a socket, say).
inline bool BlockedOnIo(pid_t tid) {
  const long n = BlockedSyscall(tid);
  return n >= 0 && n != SYS_futex;
}

// The real sleeper (RealSleeper(), the abortable WaitFor), recording which thread
// entered it, so that a test can wait until that thread is blocked in the pause.
class PhaseSleeper final : public fwdsink::Sleeper {
 public:
  [[nodiscard]] bool SleepFor(std::chrono::milliseconds duration, std::stop_token stop) override {
    tid_.store(ThisThreadId());
    entered_.fetch_add(1);
    return fwdsink::RealSleeper().SleepFor(duration, std::move(stop));
  }
  // Returns how many pauses were begun.
  [[nodiscard]] int entered() const { return entered_.load(); }
  // Returns whether the thread of the last pause begun is blocked in it now.
  [[nodiscard]] bool sleeping() const { return entered() > 0 && BlockedOnFutex(tid_.load()); }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<int> entered_{0};
};

}  // namespace fwdsink::test
