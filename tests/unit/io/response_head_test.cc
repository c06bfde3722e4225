// SPDX-License-Identifier: Apache-2.0
// ResponseHeadScanner (issue 25 items 6 and 7, LLP 0023#response-heads): every 1xx but
// 101 is skipped whatever it carries; more than 64 KiB of heads is refused; the result
// does not depend on how the bytes are split.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "engine/verdict.h"
#include "io/response_head.h"

using fwdsink::internal::kMaxResponseHeadBytes;
using fwdsink::internal::ResponseHeadScanner;
using State = ResponseHeadScanner::State;

namespace {

constexpr std::string_view kFinal = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
constexpr std::string_view kBody = "{}";

// Feeds `wire` in pieces of `step` bytes; returns the scanner and the bytes left over.
std::pair<ResponseHeadScanner, std::string> Scan(std::string_view wire, std::size_t step,
                                                 std::size_t limit = kMaxResponseHeadBytes) {
  ResponseHeadScanner s(limit);
  std::string rest;
  for (std::size_t at = 0; at < wire.size(); at += step) {
    const std::string_view piece = wire.substr(at, step);
    if (s.state() != State::kReading) {
      rest += piece;
      continue;
    }
    rest += piece.substr(s.Feed(piece));
  }
  return {std::move(s), rest};
}

std::string Padding(std::size_t bytes) {
  std::string out;
  while (out.size() < bytes) out += "X-Pad: " + std::string(120, 'p') + "\r\n";
  return out;
}

}  // namespace

TEST_CASE("InterimResponsesAreSkippedWhateverTheyCarry") {
  const struct {
    const char* name;
    std::string interim;
    std::size_t count;
  } cases[] = {
      {"103 Early Hints with a header",
       "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n", 1},
      {"102 Processing", "HTTP/1.1 102 Processing\r\n\r\n", 1},
      {"100 Continue with a header", "HTTP/1.1 100 Continue\r\nX-Note: hi\r\n\r\n", 1},
      {"bare 100 Continue", "HTTP/1.1 100 Continue\r\n\r\n", 1},
      {"a 1xx with no reason phrase", "HTTP/1.1 199\r\n\r\n", 1},
      {"several in a row",
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
       "HTTP/1.1 103 Early Hints\r\nLink: <a>\r\nLink: <b>\r\n\r\n",
       3},
      {"LF line ends", "HTTP/1.1 103 Early Hints\nLink: <a>\n\n", 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const std::string wire = c.interim + std::string(kFinal) + std::string(kBody);
    for (std::size_t step : {std::size_t{1}, std::size_t{7}, wire.size()}) {
      CAPTURE(step);
      auto [s, rest] = Scan(wire, step);
      REQUIRE(s.state() == State::kFinal);
      CHECK(s.final_head() == kFinal);
      CHECK(s.interim() == c.count);
      CHECK(rest == kBody);
    }
  }
}

// Twins: a final response is left alone.
TEST_CASE("AFinalResponseIsPassedOnUntouched") {
  for (std::string_view head :
       {kFinal, std::string_view("HTTP/1.1 429 Too Many\r\nRetry-After: 1\r\n\r\n"),
        std::string_view("HTTP/1.1 101 Switching Protocols\r\n\r\n"),
        std::string_view("HTTP/1.0 200\r\n\r\n")}) {
    CAPTURE(head);
    auto [s, rest] = Scan(std::string(head) + "body", 3);
    REQUIRE(s.state() == State::kFinal);
    CHECK(s.final_head() == head);
    CHECK(s.interim() == 0);
    CHECK(rest == "body");
  }
  // Not HTTP: the scan ends at the first line and the parser judges it.
  auto [s, rest] = Scan("SSH-2.0-OpenSSH\r\nmore", 4);
  CHECK(s.state() == State::kFinal);
  CHECK(s.interim() == 0);
}

TEST_CASE("MoreThan64KiBOfResponseHeadsIsRefused") {
  SUBCASE("one final head over the limit") {
    const std::string wire = "HTTP/1.1 200 OK\r\n" + Padding(kMaxResponseHeadBytes) + "\r\n{}";
    auto [s, rest] = Scan(wire, 4096);
    CHECK(s.state() == State::kTooLarge);
    CHECK(s.taken() == kMaxResponseHeadBytes);
  }
  SUBCASE("interim heads count towards the limit") {
    std::string wire;
    while (wire.size() <= kMaxResponseHeadBytes) {
      wire += "HTTP/1.1 103 Early Hints\r\n" + Padding(1000) + "\r\n";
    }
    auto [s, rest] = Scan(wire + std::string(kFinal), 999);
    CHECK(s.state() == State::kTooLarge);
  }
  SUBCASE("the limit reached with no end in sight: refused without waiting for more") {
    ResponseHeadScanner s(100);
    CHECK(s.Feed("HTTP/1.1 200 OK\r\n" + std::string(83, 'x')) == 100);
    CHECK(s.state() == State::kTooLarge);
  }
  SUBCASE("endless headers: the scanner stops taking at the limit") {
    ResponseHeadScanner s;
    const std::string line = "X-Pad: " + std::string(4000, 'p') + "\r\n";
    CHECK(s.Feed("HTTP/1.1 200 OK\r\n") > 0);
    std::size_t taken = 0;
    for (int i = 0; i < 1000 && s.state() == State::kReading; ++i) taken += s.Feed(line);
    CHECK(s.state() == State::kTooLarge);
    CHECK(s.Feed(line) == 0);
    CHECK(s.taken() == kMaxResponseHeadBytes);
  }
}

// Twin: just under the limit is a response.
TEST_CASE("ResponseHeadsJustUnderTheLimitAreAccepted") {
  const std::string status = "HTTP/1.1 200 OK\r\n";
  std::string pad = Padding(kMaxResponseHeadBytes - 2000);
  const std::string head = status + pad + "\r\n";
  REQUIRE(head.size() < kMaxResponseHeadBytes);
  auto [s, rest] = Scan(head + "{}", 4096);
  CHECK(s.state() == State::kFinal);
  CHECK(s.final_head() == head);
  CHECK(rest == "{}");
}

// What the sink makes of it: a transport error, retried in place on the ladder.
TEST_CASE("HeadersTooLargeIsATransportErrorRetriedOnTheLadder") {
  const fwdsink::Answer a{.error = fwdsink::TransportError::kHeadersTooLarge,
                          .error_message = "more than 64 KiB of response headers",
                          .rows = 4};
  const fwdsink::Verdict v = fwdsink::Classify(a);
  CHECK(v.action == fwdsink::Action::kRetryInPlace);
  CHECK(v.retry_cause == fwdsink::RetryCause::kTransport);
  CHECK(v.reason == "transport_headers_too_large");
  CHECK(v.retry_after == std::nullopt);  // no server wait: the ladder's
}
