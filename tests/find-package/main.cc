// Builds against the installed headers and library; exits 0 when the API links.
#include <fwdsink/backoff.h>
#include <fwdsink/forward_sink.h>

#include <cstdio>

int main() {
  fwdsink::ForwardOptions options;
  options.url = "http://127.0.0.1:9/ingest";
  if (auto e = fwdsink::Validate(options)) {
    std::fprintf(stderr, "%s: %s\n", e->field.c_str(), e->message.c_str());
    return 1;
  }
  const auto d = fwdsink::DecideWait(options.backpressure, 1, std::nullopt,
                                     std::chrono::milliseconds{0});
  std::printf("first ladder wait: %lld ms\n", static_cast<long long>(d.wait.count()));
  return d.wait.count() == 30000 ? 0 : 1;
}
