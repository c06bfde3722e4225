// SPDX-License-Identifier: Apache-2.0
// Private to the engine: who a sink is to each endpoint. Its connection, the bearer
// token it was handed, its Basic credentials, and the reload of published credentials
// (SIGHUP). Sender thread only. @ref LLP 0024#reload @ref LLP 0023#header-safety
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/credentials.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/transport.h"

namespace fwdsink {

// What a sink keeps per endpoint: its own connection and the token it got.
struct EndpointLink {
  std::unique_ptr<HttpTransport> transport;
  std::optional<std::string> token = {};  // sender thread only
  bool token_reload = false;              // credentials reloaded: ask with a refresh
  std::string basic_authorization = {};   // "Basic ..." or empty; never logged
};

// The Basic Authorization value from the options, else from the URL's userinfo.
[[nodiscard]] std::string BasicAuthorizationFor(const ForwardOptions& o, const Endpoint& ep);

// A sink's credentials: the extra headers (the options' until a reload replaces them)
// and one link per endpoint, in the endpoints' order.
struct SinkCredentials {
  HeaderList headers;
  std::vector<EndpointLink> links;
  std::uint64_t seen = 0;  // the generation of the published credentials last taken

  // Takes a newer generation from `box`, if any: every endpoint's token is asked
  // afresh; a set with an unsafe header value is not taken (the old one stays).
  void TakeNewer(const CredentialsBox* box);
};

// Checks the link's token as a header value: OK, or the error (the token is then
// dropped, to be asked again next time). A token with CR, LF, NUL or another control
// byte would inject headers.
[[nodiscard]] Status CheckToken(EndpointLink& link);

}  // namespace fwdsink
