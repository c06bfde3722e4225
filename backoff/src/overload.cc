// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/overload.h"

namespace fwdsink {

OverloadLevel::OverloadLevel(std::vector<std::chrono::milliseconds> steps)
    : steps_(std::move(steps)) {
  if (steps_.empty()) steps_.push_back(std::chrono::seconds{1});
  for (auto& s : steps_) {
    if (s <= std::chrono::milliseconds::zero()) s = std::chrono::milliseconds{1};
  }
}

std::size_t OverloadLevel::Record(bool throttled, bool progress) {
  if (progress) {
    if (level_ > 0) --level_;
  } else if (throttled) {
    if (level_ + 1 < steps_.size()) ++level_;
  }
  return level_;
}

}  // namespace fwdsink
