// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/http_header.h"

#include <string>

namespace fwdsink {
namespace {

bool IsTchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// field-vchar = VCHAR / obs-text
bool IsFieldVchar(unsigned char c) { return (c >= 0x21 && c <= 0x7e) || c >= 0x80; }

std::string Describe(unsigned char c) {
  switch (c) {
    case '\r': return "a CR";
    case '\n': return "an LF";
    case '\0': return "a NUL";
    case ' ': return "a space";
    case '\t': return "a tab";
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string("the control byte 0x") + kHex[c >> 4] + kHex[c & 15];
    }
  }
}

Status Bad(std::string_view source, std::string why) {
  return Status::Config(std::string(source), std::string(source) + ": " + std::move(why));
}

}  // namespace

Status ValidateHeaderName(std::string_view name, std::string_view source) {
  if (name.empty()) return Bad(source, "header name is empty");
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (!IsTchar(c)) {
      return Bad(source, "header name has " + Describe(c) + " at byte " + std::to_string(i) +
                             " (only RFC 9110 token characters are allowed)");
    }
  }
  return OkStatus();
}

Status ValidateHeaderValue(std::string_view value, std::string_view source) {
  if (value.empty()) return Bad(source, "header value is empty");
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (IsFieldVchar(c)) continue;
    const bool inner_space = (c == ' ' || c == '\t') && i > 0 && i + 1 < value.size();
    if (inner_space) continue;
    return Bad(source, "header value has " + Describe(c) + " at byte " + std::to_string(i) +
                           " (RFC 9110 field values allow no CR, LF, NUL or other control "
                           "characters, nor leading or trailing whitespace)");
  }
  return OkStatus();
}

}  // namespace fwdsink
