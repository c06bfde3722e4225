// SPDX-License-Identifier: Apache-2.0
#include "engine/auth.h"

#include "fwdsink/http_header.h"

namespace fwdsink {

std::string BasicAuthorizationFor(const ForwardOptions& o, const Endpoint& ep) {
  if (o.basic_auth) return BasicAuthorization(o.basic_auth->user, o.basic_auth->password);
  if (ep.username) return BasicAuthorization(*ep.username, ep.password.value_or(""));
  return {};
}

// @ref LLP 0023#header-safety
void SinkCredentials::TakeNewer(const CredentialsBox* box) {
  if (!box) return;
  std::optional<RequestCredentials> fresh = box->TakeIfNewer(seen);
  if (!fresh) return;
  // The token is asked afresh on every endpoint (the file may have been rotated).
  for (EndpointLink& link : links) {
    link.token.reset();
    link.token_reload = true;
  }
  for (const auto& [name, value] : fresh->headers) {
    if (!ValidateHeaderField(name, value, "reloaded header").ok()) return;
  }
  if (fresh->basic_authorization &&
      !ValidateHeaderValue(*fresh->basic_authorization, "reloaded basic auth").ok()) {
    return;
  }
  headers = std::move(fresh->headers);
  for (EndpointLink& link : links) {
    link.basic_authorization =
        fresh->basic_authorization
            ? *fresh->basic_authorization
            : BasicAuthorizationFor(ForwardOptions{}, link.transport->endpoint());
  }
}

Status CheckToken(EndpointLink& link) {
  if (!link.token) return OkStatus();
  Status bad = ValidateHeaderValue("Bearer " + *link.token, "token provider");
  if (!bad.ok()) link.token.reset();  // ask again next time: the file may have been fixed
  return bad;
}

}  // namespace fwdsink
