// SPDX-License-Identifier: Apache-2.0
// The one JSON dump rule for fwdsink's own output (internal; not installed).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fwdsink::internal {

// Dumps `j` as compact JSON (or indented by `indent` spaces per level) with invalid
// UTF-8 replaced by U+FFFD instead of a thrown type_error: a server's reason or a file
// name is not ours to trust, and a log line must stay JSON. Every JSON text fwdsink
// writes goes through here (JsonObject::Dump, the dead-letter records).
// @ref LLP 0015#json-writer
template <class Json>
[[nodiscard]] std::string DumpJson(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace fwdsink::internal
