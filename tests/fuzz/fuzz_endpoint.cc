// SPDX-License-Identifier: Apache-2.0
// libFuzzer: ParseEndpoint; what it accepts has a host, a port in range and a path
// starting with '/' free of spaces and control characters.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fwdsink/transport.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  const auto ep = fwdsink::ParseEndpoint(url);
  if (!ep.ok()) return 0;
  if (ep->host.empty() || ep->port < 1 || ep->port > 65535) __builtin_trap();
  if (ep->path.empty() || ep->path.front() != '/') __builtin_trap();
  for (unsigned char c : ep->path) {
    if (c <= ' ' || c == 0x7f) __builtin_trap();
  }
  (void)ep->SchemeHostPort();
  return 0;
}
