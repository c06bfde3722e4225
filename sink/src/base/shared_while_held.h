// SPDX-License-Identifier: Apache-2.0
// One instance of T for the process while anyone holds it. Internal to the sink.
#pragma once

#include <memory>
#include <mutex>
#include <utility>

namespace fwdsink {

// Returns the process's T, made from `args` by the first call after no holder was left
// and destroyed with the last holder (so a thread it runs ends with the last sink, and
// nothing outlives main()). One call site per T: the instance is per instantiation.
template <typename T, typename... Args>
std::shared_ptr<T> SharedWhileHeld(Args&&... args) {
  static std::mutex mu;
  static std::weak_ptr<T> shared;
  std::lock_guard lock(mu);
  std::shared_ptr<T> instance = shared.lock();
  if (!instance) {
    instance = std::make_shared<T>(std::forward<Args>(args)...);
    shared = instance;
  }
  return instance;
}

}  // namespace fwdsink
