// SPDX-License-Identifier: Apache-2.0
// Builds against the installed headers and library; exits 0 when the API links.
#include <fwdsink/backoff.h>
#include <fwdsink/forward_sink.h>
#include <fwdsink/time_format.h>

#include <cstdio>

int main() {
  fwdsink::ForwardOptions options;
  options.url = "http://127.0.0.1:9/ingest";
  if (const fwdsink::Status e = fwdsink::Validate(options); !e.ok()) {
    std::fprintf(stderr, "%s\n", e.ToString().c_str());
    return 1;
  }
  // The library's timestamp format, from a small public header.
  std::printf("epoch: %s\n", fwdsink::FormatRfc3339({}).c_str());
  const auto d =
      fwdsink::DecideWait(options.backpressure, 1, std::nullopt, std::chrono::milliseconds{0});
  std::printf("first ladder wait: %lld ms\n", static_cast<long long>(d.wait.count()));
  return d.wait.count() == 30000 ? 0 : 1;
}
