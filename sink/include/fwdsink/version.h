// SPDX-License-Identifier: Apache-2.0
// The library's version and the versions of the libraries it is built with, for
// `fwdsink --version`, the User-Agent and bug reports. Pure functions, any thread.
#pragma once

#include <string>
#include <string_view>

namespace fwdsink {

// The project version, "0.1.0" (CMake's project(VERSION)).
[[nodiscard]] std::string_view Version();

// Returns one "name version" line each for fwdsink, OpenSSL (OpenSSL_version(), the
// library loaded at run time), zstd (ZSTD_versionString(), at run time) and cpp-httplib
// (CPPHTTPLIB_VERSION, a header-only version fixed at build time), each ending in '\n':
//   fwdsink 0.1.0
//   OpenSSL 3.0.17 1 Jul 2025
//   zstd 1.5.4
//   cpp-httplib 0.11.4
[[nodiscard]] std::string VersionInfo();

}  // namespace fwdsink
