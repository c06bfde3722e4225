// SPDX-License-Identifier: Apache-2.0
// `fwdsink generate`: realistic telemetry rows for demos, tests and benchmarks.
//
// Rows look like a web service's request log: enough variety (hosts, services, paths,
// user agents, random trace ids) that zstd compresses them about as well as real logs,
// and a unique "seq" per row so a receiver's copy can be checked for duplicates.
#include <array>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string_view>

#include "commands.h"
#include "fwdsink/spool_writer.h"
#include "fwdsink/time_format.h"

namespace fwdsink_cli {
namespace {

// Generated timestamps start here (2024-05-01T00:00:00Z) and advance ~7 ms per row,
// so output depends only on the seed, never on the wall clock.
constexpr std::int64_t kEpochMs = 1'714'521'600'000;

constexpr std::array<std::string_view, 6> kServices = {"checkout", "cart",   "search",
                                                       "auth",     "images", "payments"};
constexpr std::array<std::string_view, 5> kLevels = {"debug", "info", "info", "warn", "error"};
constexpr std::array<std::string_view, 4> kMethods = {"GET", "GET", "POST", "PUT"};
constexpr std::array<std::string_view, 8> kPaths = {
    "/api/v1/cart",   "/api/v1/items",  "/api/v2/search", "/login",
    "/api/v1/orders", "/static/app.js", "/healthz",       "/api/v1/payments/authorize"};
constexpr std::array<int, 8> kStatuses = {200, 200, 200, 201, 204, 304, 404, 503};
constexpr std::array<std::string_view, 5> kAgents = {
    "Mozilla/5.0 (X11; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 Safari/605.1.15",
    "curl/7.88.1", "okhttp/4.12.0", "Go-http-client/2.0"};

// splitmix64: tiny, fast and identical on every platform (std distributions are not).
// @ref LLP 0022#generate
struct Rng {
  std::uint64_t state;
  std::uint64_t Next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  template <typename T, std::size_t N>
  const T& Pick(const std::array<T, N>& a) {
    return a[Next() % N];
  }
};

}  // namespace

std::string GenerateRow(std::uint64_t seed, std::uint64_t seq) {
  Rng rng{seed * 0x100000001b3ull ^ seq * 0x9e3779b97f4a7c15ull};
  const std::int64_t ms = kEpochMs + static_cast<std::int64_t>(seq) * 7;
  const std::string ts =
      fwdsink::FormatRfc3339(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
  // Every draw is taken once, in a fixed order, so rows are reproducible.
  const unsigned host = static_cast<unsigned>(rng.Next() % 24);
  const std::string_view service = rng.Pick(kServices);
  const int status = rng.Pick(kStatuses);
  const std::string_view level = status >= 500 ? "error" : rng.Pick(kLevels);
  const std::string_view method = rng.Pick(kMethods);
  const std::string_view path = rng.Pick(kPaths);
  const unsigned latency_x10 = static_cast<unsigned>(rng.Next() % 25000);
  const std::uint64_t trace_hi = rng.Next(), trace_lo = rng.Next();
  const std::string_view agent = rng.Pick(kAgents);
  char head[160];
  std::snprintf(head, sizeof head,
                "{\"ts\":\"%s\",\"seq\":%llu,\"host\":\"web-%02u\",\"service\":\"", ts.c_str(),
                static_cast<unsigned long long>(seq), host);
  char tail[160];
  std::snprintf(tail, sizeof tail,
                " %d\",\"status\":%d,\"latency_ms\":%u.%u,\"trace_id\":\"%016llx%016llx\","
                "\"user_agent\":\"",
                status, status, latency_x10 / 10, latency_x10 % 10,
                static_cast<unsigned long long>(trace_hi),
                static_cast<unsigned long long>(trace_lo));
  std::string row = head;
  row.append(service).append("\",\"level\":\"").append(level).append("\",\"msg\":\"");
  row.append(method).append(" ").append(path).append(tail).append(agent).append("\"}");
  return row;
}

int RunGenerate(const GenerateConfig& c) {
  // Partitions are sealed explicitly at each share boundary; the writer's own size and
  // age triggers are set out of the way.
  const std::uint64_t share = (c.bytes + c.partitions - 1) / c.partitions;
  fwdsink::SpoolWriterOptions wo;
  wo.max_bytes = share + 4096;
  wo.max_age = std::chrono::hours{24 * 365};
  auto writer = fwdsink::SpoolWriter::Open(c.spool, wo);
  if (!writer) {
    std::cerr << "fwdsink: --spool: " << writer.status().message() << "\n";
    return kExitIoErr;
  }
  std::uint64_t rows = 0, total = 0, in_partition = 0;
  while (total < c.bytes) {
    const std::string row = GenerateRow(c.seed, rows);
    if (auto s = writer->Append(row); !s.ok()) {
      std::cerr << "fwdsink: generate: " << s.message() << "\n";
      return kExitIoErr;
    }
    ++rows;
    total += row.size() + 1;
    in_partition += row.size() + 1;
    if (in_partition >= share) {
      if (auto sealed = writer->Seal(); !sealed) {
        std::cerr << "fwdsink: generate: " << sealed.status().message() << "\n";
        return kExitIoErr;
      }
      in_partition = 0;
    }
  }
  if (auto sealed = writer->Seal(); !sealed) {
    std::cerr << "fwdsink: generate: " << sealed.status().message() << "\n";
    return kExitIoErr;
  }
  std::cerr << "fwdsink: generated " << rows << " rows, " << total << " bytes in "
            << writer->sealed().size() << " partitions under " << (c.spool / "ready").string()
            << "\n";
  std::cout << rows << "\n";
  return kExitOk;
}

}  // namespace fwdsink_cli
