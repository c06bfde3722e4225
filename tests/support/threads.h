// SPDX-License-Identifier: Apache-2.0
// The threads of this process (Linux: one entry per thread in /proc/self/task), for
// tests that bound them.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <thread>

namespace fwdsink::test {

inline std::size_t ThreadCount() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// A joined thread may stay listed for a moment after join() returns: waits (yielding,
// at most 5 s of real time) until the count is `n`, and says whether it got there.
inline bool ThreadsSettleAt(std::size_t n) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ThreadCount() != n) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// The count once no thread is on its way out: the same over many looks.
inline std::size_t SettledThreadCount() {
  std::size_t n = ThreadCount();
  for (int same = 0; same < 200; ++same) {
    std::this_thread::yield();
    if (const std::size_t now = ThreadCount(); now != n) {
      n = now;
      same = 0;
    }
  }
  return n;
}

}  // namespace fwdsink::test
