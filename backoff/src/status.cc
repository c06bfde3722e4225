// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/status.h"

#include <cstdio>
#include <cstdlib>

#include "fwdsink/check.h"

namespace fwdsink {

std::string_view to_string(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidConfig: return "invalid_config";
    case StatusCode::kInvalidName: return "invalid_name";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kCorrupt: return "corrupt";
    case StatusCode::kIo: return "io";
    case StatusCode::kBusy: return "busy";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status Status::WithFieldPrefix(std::string_view prefix) const {
  Status out = *this;
  out.field_ = field_.empty() ? std::string(prefix) : std::string(prefix) + "." + field_;
  return out;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  if (field_.empty()) return message_;
  return field_ + ": " + message_;
}

namespace internal {

void CheckFailed(const char* what, const char* file, int line) noexcept {
  std::fprintf(stderr, "fwdsink: check failed: %s at %s:%d\n", what, file, line);
  std::abort();
}

void ValueOnError(const std::string& what) noexcept {
  std::fprintf(stderr, "fwdsink: value() on an error Result: %s\n", what.c_str());
  std::abort();
}

}  // namespace internal
}  // namespace fwdsink
