// SPDX-License-Identifier: Apache-2.0
// Preconditions as code: FWDSINK_CHECK always runs; FWDSINK_DCHECK runs in debug and
// sanitizer builds (FWDSINK_DCHECK_IS_ON, set by CMake) and compiles to nothing else.
//
// A failed check prints the condition and where it is, then aborts: it marks a bug in
// fwdsink or in its caller, never an operational failure (those come back as Status).
#pragma once

namespace fwdsink::internal {
// Prints "fwdsink: check failed: <what> at <file>:<line>" to stderr and aborts.
[[noreturn]] void CheckFailed(const char* what, const char* file, int line) noexcept;
}  // namespace fwdsink::internal

#define FWDSINK_CHECK(cond)                                                   \
  do {                                                                        \
    if (!(cond)) ::fwdsink::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (false)

#if defined(FWDSINK_DCHECK_IS_ON) || !defined(NDEBUG)
#define FWDSINK_DCHECK(cond) FWDSINK_CHECK(cond)
#else
// Still type-checks the condition, never evaluates it.
#define FWDSINK_DCHECK(cond) \
  do {                       \
    if (false) (void)(cond); \
  } while (false)
#endif
