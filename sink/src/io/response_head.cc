// SPDX-License-Identifier: Apache-2.0
#include "io/response_head.h"

namespace fwdsink::internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The status code of "HTTP/x.y DDD ..." (-1 when the line is not a status line).
int StatusOf(std::string_view line) {
  if (!line.starts_with("HTTP/")) return -1;
  const auto sp = line.find(' ');
  if (sp == std::string_view::npos || line.size() < sp + 4) return -1;
  const std::string_view code = line.substr(sp + 1, 3);
  if (!IsDigit(code[0]) || !IsDigit(code[1]) || !IsDigit(code[2])) return -1;
  if (line.size() > sp + 4 && line[sp + 4] != ' ' && line[sp + 4] != '\r') return -1;
  return (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
}

}  // namespace

std::size_t ResponseHeadScanner::Feed(std::string_view data) {
  std::size_t used = 0;
  while (state_ == State::kReading && used < data.size()) {
    if (taken_ >= limit_) {
      state_ = State::kTooLarge;
      break;
    }
    const char c = data[used++];
    ++taken_;
    head_.push_back(c);
    if (c == '\n') EndLine();
  }
  if (state_ == State::kReading && taken_ >= limit_) state_ = State::kTooLarge;
  return used;
}

void ResponseHeadScanner::EndLine() {
  std::string_view line(head_);
  line = line.substr(line_start_);
  line.remove_suffix(1);  // the LF
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  line_start_ = head_.size();
  if (status_ == 0) {
    status_ = StatusOf(line);
    // Not a status line: not ours to judge; the HTTP parser says what is wrong.
    if (status_ < 0) state_ = State::kFinal;
    return;
  }
  if (!line.empty()) return;
  // @ref LLP 0023#interim-responses — a 1xx says nothing about the request's outcome.
  if (status_ >= 100 && status_ < 200 && status_ != 101) {
    ++interim_;
    if (status_ == 100) continued_ = true;
    head_.clear();
    line_start_ = 0;
    status_ = 0;
    return;
  }
  state_ = State::kFinal;
}

}  // namespace fwdsink::internal
