// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a value ValidateHeaderValue accepts can never split a header line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fwdsink/http_header.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (fwdsink::ValidateHeaderValue(text, "fuzz").ok() &&
      text.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    __builtin_trap();
  }
  if (fwdsink::ValidateHeaderName(text, "fuzz").ok() &&
      text.find_first_of(std::string_view(":\r\n \t\0", 6)) != std::string_view::npos) {
    __builtin_trap();
  }
  return 0;
}
