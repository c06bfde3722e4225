// SPDX-License-Identifier: Apache-2.0
// The transport sends a request body where it lies (LLP 0017#body-in-place): a POST of a
// 4 MiB body allocates far less than the body on the posting thread, so the bytes of a
// chunk in flight are held once (issue 22 item 7, the peak RSS of figure 5). The twin:
// the same counter sees cpp-httplib's own copies when a body goes in as a string.
#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <new>
#include <string>

#include "fwdsink/transport.h"
#include "support/central_process.h"

namespace {

// Bytes asked of operator new on this thread while `counting` is set. Trivially
// initialised, so usable from the allocator before any thread-local constructor runs.
thread_local bool counting = false;
thread_local std::size_t counted = 0;

}  // namespace

// The replacements pair malloc with free; GCC, inlining the library's new and delete
// into their callers, takes them for a mismatched pair.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (counting) counted += n;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;

constexpr std::size_t kBody = 4 * 1024 * 1024;

std::string Rows(std::size_t bytes) {
  std::string body;
  body.reserve(bytes);
  while (body.size() < bytes) body += "{\"p\":\"" + std::string(1015, 'x') + "\"}\n";
  return body;
}

// Runs `post` with the counter on; returns the bytes it allocated on this thread.
template <typename F>
std::size_t Allocated(F&& post) {
  counted = 0;
  counting = true;
  post();
  counting = false;
  return counted;
}

TEST_CASE("TheTransportSendsABodyWithoutCopyingIt") {
  const auto dir = CentralProcess::ScratchDir("it_body_in_place");
  CentralProcess central(dir / "c");
  REQUIRE(central.Start());
  fwdsink::TransportOptions o;
  o.connect_timeout = 2s;
  o.read_timeout = 10s;
  auto t = fwdsink::HttpTransport::Create(
      "http://127.0.0.1:" + std::to_string(central.port()) + "/ingest", o);
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  std::string body = Rows(kBody);
  const std::string sent = body;
  // Twice: over a new connection and over the kept-alive one.
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    fwdsink::TransportResult r;
    const std::size_t bytes = Allocated([&] {
      r = (*t)->Post({{"Content-Type", "application/x-ndjson"},
                      {"Idempotency-Key", "in-place-" + std::to_string(i)}},
                     body, "", {});
    });
    REQUIRE_MESSAGE(r.error == fwdsink::TransportError::kNone, r.message);
    CHECK(r.response.status == 200);
    CHECK(bytes < kBody / 16);  // the head, the answer and bookkeeping: kilobytes
    CHECK(body == sent);        // the caller's bytes are left as they were
  }
}

TEST_CASE("TheCounterSeesTheCopiesOfABodyGivenAsAString") {
  const auto dir = CentralProcess::ScratchDir("it_body_copied");
  CentralProcess central(dir / "c");
  REQUIRE(central.Start());
  httplib::Client client("127.0.0.1", central.port());
  const std::string body = Rows(kBody);
  int status = 0;
  const std::size_t bytes = Allocated([&] {
    const httplib::Result r =
        client.Post("/ingest", {{"Idempotency-Key", "copied"}}, body, "application/x-ndjson");
    status = r ? r->status : -1;
  });
  CHECK(status == 200);
  CHECK(bytes >= kBody);
}

}  // namespace
