// SPDX-License-Identifier: Apache-2.0
// The daemon's metrics server, as the integration tests reach it: the address its
// daemon.start line names, and a GET that returns what came back.
//
// Threading: used by one test thread.
#pragma once

#include <httplib.h>

#include <string>

#include "support/daemon_process.h"
#include "support/it_support.h"

namespace fwdsink::test {

// The "metrics" address of the daemon.start line, once it is logged ("" if it never is).
inline std::string MetricsAddress(const DaemonProcess& d) {
  std::string address;
  WaitFor([&] {
    const std::string err = d.err();
    const auto at = err.find("\"metrics\":\"");
    if (at == std::string::npos) return false;
    const auto begin = at + 11;
    address = err.substr(begin, err.find('"', begin) - begin);
    return !address.empty();
  });
  return address;
}

// What a GET got: status 0 when there was no answer.
struct Got {
  int status = 0;
  std::string body;
};

// GETs `path` from `address` ("host:port"), waiting up to 5 s for the answer.
inline Got Get(const std::string& address, const std::string& path) {
  const auto colon = address.rfind(':');
  httplib::Client cli(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  cli.set_read_timeout(5, 0);
  auto res = cli.Get(path.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

}  // namespace fwdsink::test
