// SPDX-License-Identifier: Apache-2.0
// Reading a response's head off the wire before cpp-httplib parses it: every 1xx
// interim response is skipped whatever it carries (RFC 9110 section 15.2), and the
// heads are bounded. @ref LLP 0023#response-heads
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fwdsink::internal {

// The most bytes of response heads (status lines and header fields, the interim
// responses' included) read for one request; past it the attempt fails
// (TransportError::kHeadersTooLarge). curl stops at 100 KB, Go at 1 MB.
inline constexpr std::size_t kMaxResponseHeadBytes = 64 * 1024;

// Splits a byte stream into the response heads it starts with: drops each complete 1xx
// head but 101 (we never ask to switch protocols), keeps the final one. A first line
// that is not "HTTP/..." ends the scan at once (the HTTP parser then reports it).
// Lines end at LF (a CR before it is part of the line); a head ends at an empty line.
// Pure and incremental: the same bytes give the same result however they are split.
// Not thread-safe; one scanner per request.
class ResponseHeadScanner {
 public:
  enum class State {
    kReading,   // no final head yet
    kFinal,     // final_head() is complete; the bytes after it are the body's
    kTooLarge,  // more than `limit` bytes of heads without a final one
  };

  explicit ResponseHeadScanner(std::size_t limit = kMaxResponseHeadBytes) : limit_(limit) {}

  // Takes bytes while kReading; returns how many it took (the rest of `data` follows
  // the final head, or was not looked at once the state is kTooLarge).
  std::size_t Feed(std::string_view data);

  [[nodiscard]] State state() const { return state_; }
  // The final response's head as received (status line to the empty line, included).
  [[nodiscard]] const std::string& final_head() const { return head_; }
  // Interim (1xx) responses skipped so far.
  [[nodiscard]] std::size_t interim() const { return interim_; }
  // Whether one of them was a "100 Continue" (the server asks for the request's body).
  [[nodiscard]] bool continued() const { return continued_; }
  // Bytes taken in all: never more than the limit.
  [[nodiscard]] std::size_t taken() const { return taken_; }

 private:
  // Looks at the line that ends at head_.size(): a status line, a field, or the end.
  void EndLine();

  const std::size_t limit_;
  State state_ = State::kReading;
  std::string head_;            // the head being read, at most limit_ bytes
  std::size_t line_start_ = 0;  // where the current line starts in head_
  int status_ = 0;              // the current head's status, 0 until its first line
  std::size_t interim_ = 0;
  bool continued_ = false;
  std::size_t taken_ = 0;
};

}  // namespace fwdsink::internal
