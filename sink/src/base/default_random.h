// SPDX-License-Identifier: Apache-2.0
// The default jitter source. Internal to the sink (not installed).
#pragma once

#include <memory>
#include <mutex>
#include <random>

#include "fwdsink/backoff.h"

namespace fwdsink {

// Returns a UniformRandom over a private generator seeded from std::random_device, so
// two processes started together jitter differently. Safe to call from any thread (the
// generator is guarded by its own mutex); copies share the generator.
inline UniformRandom MakeDefaultRandom() {
  struct State {
    std::mutex mu;
    std::mt19937_64 engine{std::random_device{}()};  // guarded by mu
    std::uniform_real_distribution<double> unit{0.0, 1.0};
  };
  auto state = std::make_shared<State>();
  return [state] {
    std::lock_guard lock(state->mu);
    return state->unit(state->engine);
  };
}

}  // namespace fwdsink
