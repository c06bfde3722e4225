// SPDX-License-Identifier: Apache-2.0
// Request credentials that may change while a sink runs: the extra headers and the Basic
// Authorization value, re-read from their files when the daemon gets SIGHUP.
// @ref LLP 0024#reload
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "fwdsink/transport.h"

namespace fwdsink {

// One published set of credentials. Replaces the sink's ForwardOptions::headers and
// basic_auth as a whole.
struct RequestCredentials {
  HeaderList headers;  // every extra header (from flags and files), names unchanged
  // "Basic <base64>" (BasicAuthorization()), or nullopt: the URL's userinfo, if any.
  std::optional<std::string> basic_authorization;
};

// A mailbox of credentials shared by every sender of one endpoint (held by shared_ptr
// in ForwardDeps, so copies of the deps see one box). Publish() may be called from any
// thread (a signal-handling thread); each sender picks up a newer generation before its
// next chunk, never in the middle of a wait or between re-sends of one chunk. Picking a
// generation up also asks the token provider for a fresh token (force_refresh=true):
// the token file may have been rotated with the rest.
//
// Deliberately ignores: reading files (LoadRequestSecrets() does) and checking the
// values (the publisher validates them; the sink re-checks the header values and keeps
// the old set if one is unsafe).
class CredentialsBox {
 public:
  // Makes `credentials` the newest generation. Any thread.
  void Publish(RequestCredentials credentials);
  // Returns the newest credentials when their generation is past `seen` (and sets
  // `seen` to it), nullopt otherwise. Any thread; cheap when nothing changed.
  [[nodiscard]] std::optional<RequestCredentials> TakeIfNewer(std::uint64_t& seen) const;
  // Returns the number of Publish() calls so far. Any thread.
  [[nodiscard]] std::uint64_t generation() const;

 private:
  mutable std::mutex mu_;
  RequestCredentials current_;    // guarded by mu_
  std::uint64_t generation_ = 0;  // guarded by mu_
};

}  // namespace fwdsink
