// SPDX-License-Identifier: Apache-2.0
// Hardening rules that need no socket (LLP 0023): the header validators, the verdict's
// "poison only when the data is the cause" rule, as tables, and the fuzz regressions.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/verdict.h"
#include "fwdsink/http_header.h"
#include "spool/spool_io.h"
#include "spool/spool_records.h"

namespace {

using fwdsink::Action;
using fwdsink::Answer;
using fwdsink::Classify;
using fwdsink::RespoolReason;
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

TEST_CASE("A refused single row is poison only when the data is the cause") {
  const auto single = [](int status, bool json, bool acked) {
    return Classify(
        Answer{.status = status, .rows = 1, .row_is_json = json, .split_tree_acked = acked});
  };
  SUBCASE("well-formed, nothing of its request accepted: the request is refused") {
    for (int status : {400, 422}) {
      const auto v = single(status, true, false);
      CHECK(v.action == Action::kRespool);
      CHECK(v.respool_reason == RespoolReason::kRequestRefused);
      CHECK(v.status == status);
    }
  }
  SUBCASE("twin: not JSON is poison") {
    CHECK(single(400, false, false).action == Action::kPoison);
    CHECK(single(422, false, true).action == Action::kPoison);
  }
  SUBCASE("twin: well-formed but its siblings were accepted: poison (a schema refusal)") {
    CHECK(single(400, true, true).action == Action::kPoison);
    CHECK(single(422, true, true).action == Action::kPoison);
  }
  SUBCASE("413 on one row is the row's size: poison whatever it holds") {
    CHECK(single(413, true, false).action == Action::kPoison);
  }
  SUBCASE("two rows or more still split") {
    CHECK(Classify(Answer{.status = 400, .rows = 2, .row_is_json = true}).action == Action::kSplit);
  }
}

// Regressions found by the fuzz targets (tests/fuzz/, LLP 0023#fuzzing).
TEST_CASE("FuzzRegression: a cursor or dead-letter time past the clock's range saturates") {
  // cursor_record: first_failure_ms=INT64_MAX overflowed converting to nanoseconds (UB;
  // a plain build wrapped it to 1969, which would make the horizon fire at once).
  const std::string body =
      "fwdsink-cursor v1 offset=5 first_failure_ms=9223372036854775807 failures=1";
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", static_cast<unsigned>(fwdsink::spool_io::Crc32(body)));
  fwdsink::CursorState state;
  REQUIRE(fwdsink::internal::ParseCursorRecord(body + " crc=" + crc + "\n", state).ok());
  REQUIRE(state.first_failure.has_value());
  const auto year_2200 = std::chrono::system_clock::time_point(std::chrono::hours(24 * 365 * 230));
  CHECK(*state.first_failure > year_2200);
  // Twin: an ordinary time is kept exactly.
  CHECK(fwdsink::spool_io::FromUnixMs(1'780'000'000'123) ==
        std::chrono::system_clock::time_point(std::chrono::milliseconds(1'780'000'000'123)));
  CHECK(fwdsink::spool_io::FromUnixMs(INT64_MIN) < std::chrono::system_clock::time_point{});

  // dead_record: the same conversion for dead_at_ms.
  fwdsink::DeadEntry entry;
  REQUIRE(fwdsink::internal::ParseDeadRecord(
              R"({"partition":"p","begin":0,"end":1,"rows":1,"status":400,"reason":"r",)"
              R"("kind":"poison","dead_at_ms":-9223372036854775807,"data_offset":0})",
              entry)
              .ok());
  CHECK(entry.dead_at < std::chrono::system_clock::time_point{});
}
