// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the error-body reason extractor on hostile, truncated bodies.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/verdict.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)fwdsink::ExtractReason(body);
  if (fwdsink::ScanStringField(body, "status").size() > 256) __builtin_trap();
  // The whole verdict, as the sink would call it, for a few statuses.
  for (int status : {200, 400, 401, 413, 429, 503}) {
    fwdsink::Answer a{
        .status = status, .retry_after = body.substr(0, 64), .body_prefix = body, .rows = size % 3};
    (void)fwdsink::Classify(a);
  }
  return 0;
}
