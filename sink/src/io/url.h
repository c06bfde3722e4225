// SPDX-License-Identifier: Apache-2.0
// Private: URL pieces the rest of the library needs besides ParseEndpoint (which
// fwdsink/transport.h declares): one hex digit rule and the decoding of a query value.
// Pure functions, any thread. @ref LLP 0017#urls
#pragma once

#include <string>
#include <string_view>

namespace fwdsink::url {

// The value of a hex digit, or -1.
[[nodiscard]] int HexValue(char c);
// Decodes a query value: '+' is a space, %XX a byte (a bad escape is kept as is).
[[nodiscard]] std::string DecodeQueryValue(std::string_view v);

}  // namespace fwdsink::url
