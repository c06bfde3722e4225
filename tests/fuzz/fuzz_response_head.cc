// SPDX-License-Identifier: Apache-2.0
// libFuzzer: ResponseHeadScanner (LLP 0023#response-heads). Raw bytes: the result does
// not depend on how they are split, never takes more than the limit, and a final head
// is never a 1xx but 101. Built sequences: interim heads (a status from 100 to 199 but
// 101, fields made of the input) then a final one: every interim one is skipped and the
// final head comes out byte for byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/response_head.h"

namespace {

using fwdsink::internal::ResponseHeadScanner;
using State = ResponseHeadScanner::State;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// "HTTP/x DDD" then a space or the line's end: a status line (-1 when not one).
int StatusOf(const std::string& head) {
  if (!head.starts_with("HTTP/")) return -1;
  const auto sp = head.find(' ');
  if (sp == std::string::npos || head.size() < sp + 5) return -1;
  const auto lf = head.find('\n');
  if (lf < sp) return -1;
  int code = 0;
  for (std::size_t i = sp + 1; i < sp + 4; ++i) {
    if (head[i] < '0' || head[i] > '9') return -1;
    code = code * 10 + (head[i] - '0');
  }
  const char after = head[sp + 4];
  return after == ' ' || after == '\r' || after == '\n' ? code : -1;
}

void RawBytes(std::string_view in, std::size_t limit) {
  ResponseHeadScanner whole(limit);
  const std::size_t used = whole.Feed(in);
  Check(used <= in.size() && whole.taken() == used && whole.taken() <= limit);
  ResponseHeadScanner pieces(limit);
  const std::size_t step = in.empty() ? 1 : static_cast<unsigned char>(in[0]) % 17 + 1;
  std::size_t used_in_pieces = 0;
  for (std::size_t at = 0; at < in.size() && pieces.state() == State::kReading; at += step) {
    used_in_pieces += pieces.Feed(in.substr(at, step));
  }
  Check(pieces.state() == whole.state() && used_in_pieces == used);
  Check(pieces.final_head() == whole.final_head() && pieces.interim() == whole.interim());
  if (whole.state() == State::kFinal) {
    const int status = StatusOf(whole.final_head());
    Check(status < 100 || status >= 200 || status == 101);
  }
}

std::string Field(std::string_view& in) {
  std::string f = "X-F: ";
  while (!in.empty() && f.size() < 64) {
    const char c = in.front();
    in.remove_prefix(1);
    if (c == '\n' || c == '\r' || c == ';') break;
    f.push_back(c);
  }
  return f + "\r\n";
}

void Sequence(std::string_view in) {
  std::string wire;
  std::size_t interim = 0;
  while (in.size() >= 2 && interim < 32) {
    int status = 100 + static_cast<unsigned char>(in[0]) % 100;
    if (status == 101) status = 103;
    const std::size_t fields = static_cast<unsigned char>(in[1]) % 4;
    in.remove_prefix(2);
    wire += "HTTP/1.1 " + std::to_string(status) + " Interim\r\n";
    for (std::size_t i = 0; i < fields; ++i) wire += Field(in);
    wire += "\r\n";
    ++interim;
  }
  const std::string final_head = "HTTP/1.1 200 OK\r\n" + Field(in) + "\r\n";
  wire += final_head + "body";
  ResponseHeadScanner s;
  const std::size_t used = s.Feed(wire);
  Check(s.state() == State::kFinal);
  Check(s.final_head() == final_head && s.interim() == interim);
  Check(std::string_view(wire).substr(used) == "body");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: RawBytes(in, fwdsink::internal::kMaxResponseHeadBytes); break;
    case 1: RawBytes(in, 64 + data[0]); break;  // a small limit: the bound is reached
    default: Sequence(in); break;
  }
  return 0;
}
