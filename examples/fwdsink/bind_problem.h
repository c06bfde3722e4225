// SPDX-License-Identifier: Apache-2.0
// Why a listening socket cannot be had, for the --metrics-listen error (cpp-httplib 0.11
// only says that bind failed). @ref LLP 0023#smaller-findings
#pragma once

#include <string>

namespace fwdsink_cli {

// Binds a throw-away socket to host:port as the metrics server would (SO_REUSEADDR) and
// returns strerror of the failure ("Address already in use"), or "unknown reason" when
// this bind works (the failure was the server's own).
[[nodiscard]] std::string BindProblem(const std::string& host, int port);

}  // namespace fwdsink_cli
