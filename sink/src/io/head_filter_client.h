// SPDX-License-Identifier: Apache-2.0
// cpp-httplib clients whose responses pass through a ResponseHeadScanner before the
// library parses them: 1xx interim responses are skipped, response heads are bounded.
// @ref LLP 0023#response-heads
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

namespace fwdsink::internal {

// What the scanner saw on the last request. Written on the sending thread inside
// send(), read by the same thread after it.
struct HeadReport {
  bool too_large = false;   // the heads passed kMaxResponseHeadBytes: the request failed
  std::size_t interim = 0;  // 1xx responses skipped
};

// Makes a client for http or https to host:port (the host without brackets), like
// httplib::Client does, whose reads of each response go through the scanner and whose
// last request is described in `report` (which must outlive the client).
[[nodiscard]] std::unique_ptr<httplib::ClientImpl> MakeHeadFilterClient(
    bool https, const std::string& host, int port, const std::string& client_cert_file,
    const std::string& client_key_file, HeadReport& report);

}  // namespace fwdsink::internal
