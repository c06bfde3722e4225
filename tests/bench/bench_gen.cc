// SPDX-License-Identifier: Apache-2.0
// fwdsink-bench-gen: writes realistic telemetry NDJSON for the benchmarks, deterministic
// for a given seed, fast enough to make a 1 GiB file in a few seconds.
//
//   fwdsink-bench-gen file OUT --bytes N [--seed S]
//       one NDJSON file of whole lines, stopping at the first line that reaches N bytes
//   fwdsink-bench-gen spool DIR --partitions K --rows R [--seed S]
//       K sealed partitions DIR/ready/p-<k>.ndjson of R rows each (names sort oldest first)
//
// Every row carries a unique "seq" so duplicates can be counted by comparing rows.
// It writes files directly (no SpoolWriter, no fsync): the benchmarks measure the
// forwarder, not the producer. Single-threaded tool; prints the rows written.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

namespace {

constexpr int kExitUsage = 64;
constexpr int kExitIo = 74;
constexpr std::size_t kWriteBuffer = 1 << 20;

constexpr const char* kHosts[] = {"web", "api", "db", "cache", "worker", "edge"};
constexpr const char* kServices[] = {"checkout",  "search",  "auth",    "billing",
                                     "inventory", "gateway", "profile", "notifications"};
constexpr const char* kLevels[] = {"debug", "info", "info", "info", "warn", "error"};
constexpr const char* kMessages[] = {"request completed",          "cache miss for key",
                                     "upstream timeout, retrying", "user session refreshed",
                                     "payment authorised",         "slow query detected",
                                     "connection pool exhausted",  "rate limit applied to client"};
constexpr const char* kAgents[] = {
    "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0", "curl/7.88.1",
    "okhttp/4.11.0", "Go-http-client/2.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_5 like Mac OS X) AppleWebKit/605.1.15"};
constexpr int kStatuses[] = {200, 200, 200, 201, 204, 301, 400, 404, 429, 500, 503};

template <typename T, std::size_t N>
constexpr std::size_t Count(const T (&)[N]) {
  return N;
}

// xorshift64*: deterministic and fast; quality is irrelevant here.
struct Rng {
  std::uint64_t s;
  std::uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  std::size_t Pick(std::size_t n) { return static_cast<std::size_t>(Next() % n); }
};

// Formats row number `seq` into buf (with the trailing '\n'); returns its length.
std::size_t FormatRow(Rng& rng, std::uint64_t seq, char* buf, std::size_t cap) {
  const std::uint64_t ms = 1714564800000ull + seq * 7 + rng.Pick(5);
  const std::uint64_t secs = ms / 1000;
  const int n = std::snprintf(
      buf, cap,
      "{\"ts\":\"2024-05-%02" PRIu64 "T%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 ".%03" PRIu64
      "Z\",\"host\":\"%s-%03zu\",\"service\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\","
      "\"latency_ms\":%zu,\"status\":%d,\"trace_id\":\"%016" PRIx64 "%016" PRIx64
      "\",\"ua\":\"%s\",\"seq\":%" PRIu64 "}\n",
      1 + (secs / 86400) % 28, (secs / 3600) % 24, (secs / 60) % 60, secs % 60, ms % 1000,
      kHosts[rng.Pick(Count(kHosts))], rng.Pick(64), kServices[rng.Pick(Count(kServices))],
      kLevels[rng.Pick(Count(kLevels))], kMessages[rng.Pick(Count(kMessages))], rng.Pick(2000),
      kStatuses[rng.Pick(Count(kStatuses))], rng.Next(), rng.Next(),
      kAgents[rng.Pick(Count(kAgents))], seq);
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

bool ParseU64(const char* s, std::uint64_t& out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (*end != '\0' || s[0] == '-') return false;
  out = v;
  return true;
}

// Writes rows into `path` until `max_rows` rows or `max_bytes` bytes; returns rows written
// or -1 on an I/O error.
long long WriteRows(const std::filesystem::path& path, Rng& rng, std::uint64_t& seq,
                    std::uint64_t max_rows, std::uint64_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return -1;
  std::setvbuf(f, nullptr, _IOFBF, kWriteBuffer);
  char row[1024];
  std::uint64_t rows = 0, bytes = 0;
  while (rows < max_rows && bytes < max_bytes) {
    const std::size_t len = FormatRow(rng, seq++, row, sizeof row);
    if (std::fwrite(row, 1, len, f) != len) break;
    ++rows;
    bytes += len;
  }
  const bool ok = !std::ferror(f);
  return (std::fclose(f) == 0 && ok) ? static_cast<long long>(rows) : -1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: fwdsink-bench-gen file OUT --bytes N [--seed S]\n"
               "       fwdsink-bench-gen spool DIR --partitions K --rows R [--seed S]\n");
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string_view mode = argv[1];
  const std::filesystem::path out = argv[2];
  std::uint64_t bytes = 0, partitions = 0, rows = 0, seed = 1;
  for (int i = 3; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    std::uint64_t* target = flag == "--bytes"        ? &bytes
                            : flag == "--partitions" ? &partitions
                            : flag == "--rows"       ? &rows
                            : flag == "--seed"       ? &seed
                                                     : nullptr;
    if (target == nullptr || !ParseU64(value, *target)) {
      std::fprintf(stderr, "fwdsink-bench-gen: bad or missing value for %s\n", argv[i]);
      return kExitUsage;
    }
  }
  Rng rng{seed * 0x9E3779B97F4A7C15ull + 1};
  std::uint64_t seq = 0;
  if (mode == "file" && bytes > 0) {
    const long long n = WriteRows(out, rng, seq, UINT64_MAX, bytes);
    if (n < 0) return kExitIo;
    std::printf("%lld\n", n);
    return 0;
  }
  if (mode == "spool" && partitions > 0 && rows > 0) {
    std::error_code ec;
    std::filesystem::create_directories(out / "ready", ec);
    if (ec) return kExitIo;
    for (std::uint64_t k = 0; k < partitions; ++k) {
      char name[64];
      std::snprintf(name, sizeof name, "p-%08" PRIu64 ".ndjson", k);
      if (WriteRows(out / "ready" / name, rng, seq, rows, UINT64_MAX) < 0) return kExitIo;
    }
    std::printf("%" PRIu64 "\n", seq);
    return 0;
  }
  return Usage();
}
