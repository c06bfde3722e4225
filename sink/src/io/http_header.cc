// SPDX-License-Identifier: Apache-2.0
// Header rules, each once: a name is an RFC 9110 token, a value has no CR, LF, NUL or
// other control byte and no leading or trailing whitespace. ValidateHeaderName/Value
// (fwdsink/http_header.h) and ValidateHeaderField and BasicAuthorization
// (fwdsink/transport.h) are all here. @ref LLP 0023#header-safety
#include "fwdsink/http_header.h"

#include <openssl/evp.h>

#include <optional>
#include <string>

#include "fwdsink/transport.h"
#include "io/http_rules.h"

namespace fwdsink {
namespace {

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

// The one value rule: nullopt when `value` is a valid field value (RFC 9110 §5.5), else
// what is wrong and where. Empty is the caller's to judge.
std::optional<std::string> ValueProblem(std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (IsFieldVchar(c)) continue;
    const bool inner_space = (c == ' ' || c == '\t') && i > 0 && i + 1 < value.size();
    if (inner_space) continue;
    return "has " + Describe(c) + " at byte " + std::to_string(i) +
           " (RFC 9110 field values allow no CR, LF, NUL or other control characters, nor "
           "leading or trailing whitespace)";
  }
  return std::nullopt;
}

}  // namespace

Status ValidateHeaderName(std::string_view name, std::string_view source) {
  if (name.empty()) return Bad(source, "header name is empty");
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (!http_rules::IsTokenChar(name[i])) {
      return Bad(source, "header name has " + Describe(c) + " at byte " + std::to_string(i) +
                             " (only RFC 9110 token characters are allowed)");
    }
  }
  return OkStatus();
}

Status ValidateHeaderValue(std::string_view value, std::string_view source) {
  if (value.empty()) return Bad(source, "header value is empty");
  if (auto problem = ValueProblem(value)) return Bad(source, "header value " + *problem);
  return OkStatus();
}

Status ValidateHeaderField(std::string_view name, std::string_view value, std::string_view source) {
  if (!http_rules::IsToken(name)) {
    return Bad(source,
               "header name '" + std::string(name).substr(0, 64) + "' is not an HTTP token");
  }
  if (auto problem = ValueProblem(value)) {
    return Bad(source, "the value of header " + std::string(name) + " " + *problem);
  }
  return OkStatus();
}

// OpenSSL's base64 (EVP_EncodeBlock: no line breaks, padded).
std::string BasicAuthorization(std::string_view user, std::string_view password) {
  const std::string in = std::string(user) + ":" + std::string(password);
  std::string encoded(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  encoded.resize(static_cast<std::size_t>(n));
  return "Basic " + encoded;
}

}  // namespace fwdsink
