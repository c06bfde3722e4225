// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the daemon's option parsers (forward, dead, generate) and its duration and
// size parsers. The input is split at NUL bytes into arguments.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (const auto d = fwdsink_cli::ParseDuration(text); d && d->count() < 0) __builtin_trap();
  (void)fwdsink_cli::ParseSize(text);
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\0') {
      args.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (args.size() > 64) return 0;
  (void)fwdsink_cli::ParseForward(args);
  (void)fwdsink_cli::ParseDead(args);
  (void)fwdsink_cli::ParseGenerate(args);
  (void)fwdsink_cli::OptionForField(text);
  return 0;
}
