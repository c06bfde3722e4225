// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/credentials.h"

#include <utility>

namespace fwdsink {

void CredentialsBox::Publish(RequestCredentials credentials) {
  std::lock_guard lock(mu_);
  current_ = std::move(credentials);
  ++generation_;
}

std::optional<RequestCredentials> CredentialsBox::TakeIfNewer(std::uint64_t& seen) const {
  std::lock_guard lock(mu_);
  if (generation_ <= seen) return std::nullopt;
  seen = generation_;
  return current_;
}

std::uint64_t CredentialsBox::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

}  // namespace fwdsink
