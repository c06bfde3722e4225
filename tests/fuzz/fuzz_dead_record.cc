// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the dead-letter record (index) reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spool/spool_records.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fwdsink::DeadEntry entry;
  if (fwdsink::internal::ParseDeadRecord(text, entry).ok() && entry.end < entry.begin) {
    __builtin_trap();
  }
  return 0;
}
