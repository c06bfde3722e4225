// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/version.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <zstd.h>

#ifndef FWDSINK_VERSION
#define FWDSINK_VERSION "0"
#endif

namespace fwdsink {

std::string_view Version() { return FWDSINK_VERSION; }

std::string VersionInfo() {
  std::string out = "fwdsink " + std::string(Version()) + "\n";
  // OpenSSL_version(OPENSSL_VERSION) already starts with "OpenSSL ".
  out += std::string(OpenSSL_version(OPENSSL_VERSION)) + "\n";
  out += "zstd " + std::string(ZSTD_versionString()) + "\n";
  out += "cpp-httplib " CPPHTTPLIB_VERSION "\n";
  return out;
}

}  // namespace fwdsink
