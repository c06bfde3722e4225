// SPDX-License-Identifier: Apache-2.0
// cpp-httplib clients whose responses pass through a ResponseHeadScanner before the
// library parses them: 1xx interim responses are skipped, response heads are bounded.
// @ref LLP 0023#response-heads
// A request whose head carries "Expect: 100-continue" has its body held back until the
// server says 100 Continue or a short wait passes; a final response that comes first is
// the answer and the body is never sent. @ref LLP 0017#expect-continue
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

#include "fwdsink/transport.h"

namespace fwdsink::internal {

// What the scanner saw on the last request. Written on the sending thread inside
// send(), read by the same thread after it.
struct HeadReport {
  bool too_large = false;   // the heads passed kMaxResponseHeadBytes: the request failed
  std::size_t interim = 0;  // 1xx responses skipped
  // The request asked "Expect: 100-continue" and a final response came before 100
  // Continue: the body was not sent (cpp-httplib believes it was). The server has not
  // read a body, so the connection must not carry another request: close it.
  bool body_withheld = false;
  bool continue_timed_out = false;  // no answer within the wait: the body went anyway
  // How far the request got: set to kHead when the connection is handed over, moved on
  // by the stream's writes and reads. @ref LLP 0014#transport-phases
  WirePhase phase = WirePhase::kConnect;
};

// Makes a client for http or https to host:port (the host without brackets), like
// httplib::Client does, whose reads of each response go through the scanner and whose
// last request is described in `report` (which must outlive the client). A request
// with "Expect: 100-continue" in its head waits up to `continue_wait` for the server's
// 100 Continue before its body goes out.
[[nodiscard]] std::unique_ptr<httplib::ClientImpl> MakeHeadFilterClient(
    bool https, const std::string& host, int port, const std::string& client_cert_file,
    const std::string& client_key_file, std::chrono::milliseconds continue_wait,
    HeadReport& report);

}  // namespace fwdsink::internal
