// SPDX-License-Identifier: Apache-2.0
// Jain's fairness index of senders' shares: 1 when they are equal, 1/n when one sender
// holds everything (LLP 0016#fairness). Shared by the pacer tests.
#pragma once

#include <vector>

namespace fwdsink {

inline double Jain(const std::vector<double>& x) {
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq > 0 ? sum * sum / (static_cast<double>(x.size()) * sq) : 0;
}

}  // namespace fwdsink
