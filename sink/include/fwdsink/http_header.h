// SPDX-License-Identifier: Apache-2.0
// Checks for HTTP header names and values that come from outside (a token file, a
// header file, a flag): a value with CR, LF or NUL would let whoever wrote it inject
// headers or a second request, so such a value is a configuration error, never sent.
// Pure functions, any thread. @ref LLP 0023#header-safety
#pragma once

#include <string_view>

#include "fwdsink/status.h"

namespace fwdsink {

// Checks a field name against RFC 9110 §5.1 (a token: 1 or more of
// A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~). Returns OK, or kInvalidConfig with field
// `source` and a message that names `source` ("--token-file", "token provider").
[[nodiscard]] Status ValidateHeaderName(std::string_view name, std::string_view source);

// Checks a field value against RFC 9110 §5.5: visible ASCII, obs-text (0x80-0xFF), and
// spaces or tabs between them; no CR, LF, NUL or other control character, no leading or
// trailing whitespace, not empty. Returns OK, or kInvalidConfig with field `source` and
// a message naming `source` and the offending byte's position. The value itself is
// never quoted in the message (it may be a secret).
[[nodiscard]] Status ValidateHeaderValue(std::string_view value, std::string_view source);

}  // namespace fwdsink
