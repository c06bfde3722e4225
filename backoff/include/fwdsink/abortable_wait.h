// SPDX-License-Identifier: Apache-2.0
// An abortable pause, shaped like absl::Notification::WaitForNotificationWithTimeout.
#pragma once

#include <chrono>
#include <stop_token>

namespace fwdsink {

// Blocks the calling thread for up to `duration`, or until `stop` is requested from
// any thread. Returns true if the full duration elapsed, false if it was cut short by
// a stop request — including one made before the call began, which returns at once.
// Built on std::condition_variable_any's stop_token wait: no polling, no lost wake-up.
[[nodiscard]] bool WaitFor(std::stop_token stop, std::chrono::nanoseconds duration);

}  // namespace fwdsink
