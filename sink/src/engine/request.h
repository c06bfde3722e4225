// SPDX-License-Identifier: Apache-2.0
// Private to the engine: what goes on the wire for one chunk. Built once when the chunk
// is read; every re-send carries the identical key, query and body. The headers are
// built per endpoint (each has its own credentials). @ref LLP 0014#core
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/auth.h"
#include "fwdsink/chunker.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/transport.h"

namespace fwdsink {

// A byte range of a partition and its rows.
struct ChunkRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t rows = 0;
};

struct Request {
  std::string partition;
  ChunkRange range;       // the chunk it carries
  std::string key;        // "<partition>:<begin>-<end>"
  std::string query{};    // "name=key" for the URL (--key-param), or empty
  std::string_view body;  // the raw rows (views into the chunk buffer)
  std::string* wire;      // the bytes on the wire (body encoded, or body itself); not owned
  // A pack's members' own keys, "<partition>:0-<size>, ..." (the Idempotency-Members
  // header); empty for a chunk. @ref LLP 0027#key
  std::string members{};
};

// The header that carries a pack's member keys. @ref LLP 0017#packs
inline constexpr std::string_view kMembersHeader = "Idempotency-Members";

// The stable key of a chunk: "<partition>:<begin>-<end>".
[[nodiscard]] std::string ChunkKey(std::string_view partition, std::uint64_t begin,
                                   std::uint64_t end);

// The request for `chunk` of `partition`, whose wire bytes are `wire`.
[[nodiscard]] Request MakeRequest(std::string_view partition, const Chunk& chunk, std::string& wire,
                                  const ForwardOptions& options);

// The request for a pack of `members` under `key`, whose body (every member whole, in
// order) is `chunk` and whose wire bytes are `wire`. @ref LLP 0027#key
struct PackMember;  // fwdsink/forward_pack.h
[[nodiscard]] Request MakePackRequest(const std::string& key,
                                      const std::vector<PackMember>& members, const Chunk& chunk,
                                      std::string& wire, const ForwardOptions& options);

// The headers of `request` to the endpoint of `link`: content type and encoding, the
// idempotency header, the extra headers, and the link's token or Basic credentials.
[[nodiscard]] HeaderList RequestHeaders(const Request& request, const ForwardOptions& options,
                                        std::string_view content_encoding, const HeaderList& extra,
                                        const EndpointLink& link);

}  // namespace fwdsink
