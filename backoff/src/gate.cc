// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/gate.h"

namespace fwdsink {

void EndpointGate::HoldUntil(MonotonicTime until, std::string reason) {
  std::lock_guard lock(mu_);
  if (until <= until_) return;  // never shorten what a server asked for
  until_ = until;
  reason_ = std::move(reason);
  ++holds_;
}

EndpointGate::Hold EndpointGate::Remaining(MonotonicTime now) const {
  std::lock_guard lock(mu_);
  Hold h;
  if (now < until_) {
    h.remaining = std::chrono::ceil<std::chrono::milliseconds>(until_ - now);
    h.reason = reason_;
  }
  return h;
}

std::uint64_t EndpointGate::holds() const {
  std::lock_guard lock(mu_);
  return holds_;
}

}  // namespace fwdsink
