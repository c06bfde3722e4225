// SPDX-License-Identifier: Apache-2.0
// A pack: several small sealed partitions sent whole as one request under one key
// (ForwardSink::ForwardPack). The driver chooses the members and keeps their manifest
// (fwdsink/pack_manifest.h); the sink reads, checks and sends them. @ref LLP 0027
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/forward_sink.h"

namespace fwdsink {

// A member: a whole partition, with the identity its manifest recorded.
struct PackMember {
  std::string partition;
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

// What ForwardPack achieved.
struct PackResult {
  // The request's outcome: kDelivered (every member acknowledged), kRespooled (give-up,
  // a request-level refusal, a 4xx we cannot act on: the manifest stays, the same pack
  // goes again), kAborted, or an endpoint-wide error (auth, TLS, config). Its counts are
  // the pack's.
  ForwardResult result;
  // A member that is not as the manifest says (nothing was sent): its index and why,
  // "grew" (larger: rows appended), "changed" (other size or mtime), "gone" (no such
  // file) or "torn" (no '\n' at its end, or unreadable).
  std::optional<std::size_t> bad_member;
  std::string bad_reason;
  // The server refused the pack's data (413, or a 400/422 for its rows): nothing of it
  // was stored; its members are to be sent alone, where a 413 splits by rows and a bad
  // row is dead-lettered in its own partition. @ref LLP 0027#refusals
  bool unpack = false;
  std::vector<std::uint64_t> rows;  // per member, when delivered
};

// The longest Idempotency-Members field line a pack sends (servers refuse header lines
// past 8 KiB: nginx, cpp-httplib, Poco in ClickHouse) ...
inline constexpr std::size_t kMaxMembersHeaderBytes = 6144;
// ... and the most such lines: a pack's member keys that do not fit one line go on
// several, each a comma-separated part of the one list (RFC 9110 section 5.3: a recipient
// joins them with ", "). Three lines (18 KiB) hold ~400 members of a daemon's names, a
// 1 MiB pack of 2.5 KB partitions, and leave room in nginx's default header buffers
// (4 x 8 KiB) for the rest of the request. The driver closes a pack before its keys need
// a fourth. @ref LLP 0027#choice
inline constexpr std::size_t kMaxMembersHeaderLines = 3;

}  // namespace fwdsink
