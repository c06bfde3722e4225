// SPDX-License-Identifier: Apache-2.0
// Private: the low-level text rules of HTTP, each once: the RFC 9110 token character,
// ASCII case-insensitive comparison, lower-casing. Pure, any thread. @ref LLP 0014#layers
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace fwdsink::http_rules {

// RFC 9110 §5.6.2 tchar: A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~
[[nodiscard]] inline bool IsTokenChar(char c) {
  const auto b = static_cast<unsigned char>(c);
  return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Returns whether `text` is a non-empty RFC 9110 token.
[[nodiscard]] inline bool IsToken(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), IsTokenChar);
}

// ASCII lower case (HTTP names are ASCII; the locale plays no part).
[[nodiscard]] inline char ToLowerAscii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

[[nodiscard]] inline std::string ToLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ToLowerAscii(c);
  return out;
}

// ASCII case-insensitive equality, and prefix.
[[nodiscard]] inline bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ToLowerAscii(x) == ToLowerAscii(y);
         });
}
[[nodiscard]] inline bool IStartsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && IEquals(text.substr(0, prefix.size()), prefix);
}

}  // namespace fwdsink::http_rules
