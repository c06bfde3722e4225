// SPDX-License-Identifier: Apache-2.0
// The daemon's request options (issue 10): extra headers, secrets read from files,
// Basic auth, mTLS, the proxy from the environment. The functions moved into the
// library (fwdsink/settings.h) so that the C API reads the files the same way; these
// are the names the daemon and its tests have always used. @ref LLP 0017#request-options
#pragma once

#include "fwdsink/settings.h"

namespace fwdsink_cli {

// What the request flags asked for, before the secret files are read.
using RequestFlags = fwdsink::RequestFiles;

using fwdsink::EnvLookup;
using fwdsink::LoadRequestSecrets;
using fwdsink::ParseHeaderFlag;
using fwdsink::ProcessEnvironment;
using fwdsink::ProxyFromEnvironment;

}  // namespace fwdsink_cli
