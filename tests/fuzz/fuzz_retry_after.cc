// SPDX-License-Identifier: Apache-2.0
// libFuzzer: ParseRetryAfter never crashes, and a value it returns is never negative.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fwdsink/retry_after.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'780'000'000));
  const auto parsed = fwdsink::ParseRetryAfter(text, now);
  if (parsed && parsed->count() < 0) __builtin_trap();
  return 0;
}
