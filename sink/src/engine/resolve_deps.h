// SPDX-License-Identifier: Apache-2.0
// Private: the one place ForwardDeps' defaults are filled. The driver resolves its deps
// once, before its senders are made from copies; a sink resolves what it is given (a
// no-op for resolved deps). @ref LLP 0014#deps
#pragma once

#include "fwdsink/forward_deps.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/status.h"

namespace fwdsink {

// Returns `deps` with every default filled: the real clock and sleeper, a guarded
// random source, the endpoints (Endpoints::Make: the primary takes deps.gate and
// deps.pacer, every other pacer gets max_wait = backpressure.max_wait), and gate and
// pacer set to the primary's. A kInvalidConfig status when deps.endpoints was made for
// other URLs.
[[nodiscard]] Result<ForwardDeps> ResolveDeps(const ForwardOptions& options, ForwardDeps deps);

}  // namespace fwdsink
