// SPDX-License-Identifier: Apache-2.0
// The HTTP field validators of fwdsink/http_header.h: a value with CR, LF, NUL, another
// control byte or edge whitespace is refused, naming its source and the byte but never the
// value; a name must be a token. (ValidateHeaderField, a name and a value together, is
// tested in request_test.cc.) @ref LLP 0023#header-safety
#include <doctest/doctest.h>

#include <string>

#include "fwdsink/http_header.h"

namespace {

using fwdsink::ValidateHeaderName;
using fwdsink::ValidateHeaderValue;

}  // namespace

TEST_CASE("ValidateHeaderValue refuses CR, LF, NUL, controls and edge whitespace") {
  CHECK(ValidateHeaderValue("Bearer abc.DEF-123_~+/=", "t").ok());
  CHECK(ValidateHeaderValue("a b\tc", "t").ok());       // inner space and tab
  CHECK(ValidateHeaderValue("caf\xc3\xa9", "t").ok());  // obs-text
  for (const std::string& bad :
       {std::string("a\r\nX-Injected: 1"), std::string("a\nb"), std::string("a\rb"),
        std::string("a\0b", 3), std::string("a\x01"), std::string("a\x7f"), std::string(" a"),
        std::string("a "), std::string("")}) {
    CAPTURE(bad);
    const fwdsink::Status s = ValidateHeaderValue(bad, "--token-file");
    CHECK_FALSE(s.ok());
    CHECK(s.code() == fwdsink::StatusCode::kInvalidConfig);
    CHECK(s.field() == "--token-file");
    CHECK(s.message().starts_with("--token-file: "));
  }
  const auto crlf = ValidateHeaderValue("secret\r\nX: 1", "src");
  CHECK(crlf.message().find("a CR at byte 6") != std::string::npos);
  CHECK(crlf.message().find("secret") == std::string::npos);  // never quoted
}

TEST_CASE("ValidateHeaderName accepts tokens only") {
  CHECK(ValidateHeaderName("X-Hyp-Batch-Id", "n").ok());
  CHECK(ValidateHeaderName("a!#$%&'*+-.^_`|~9", "n").ok());
  CHECK_FALSE(ValidateHeaderName("", "n").ok());
  CHECK_FALSE(ValidateHeaderName("X Y", "n").ok());
  CHECK_FALSE(ValidateHeaderName("X:", "n").ok());
  CHECK_FALSE(ValidateHeaderName("X\r\nY", "n").ok());
}
