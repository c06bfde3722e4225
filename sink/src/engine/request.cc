// SPDX-License-Identifier: Apache-2.0
#include "engine/request.h"

#include "fwdsink/forward_pack.h"
#include "fwdsink/pack_manifest.h"

#ifndef FWDSINK_VERSION
#define FWDSINK_VERSION "0"
#endif

namespace fwdsink {

std::string ChunkKey(std::string_view partition, std::uint64_t begin, std::uint64_t end) {
  return std::string(partition) + ":" + std::to_string(begin) + "-" + std::to_string(end);
}

Request MakeRequest(std::string_view partition, const Chunk& chunk, std::string& wire,
                    const ForwardOptions& options) {
  Request r{.partition = std::string(partition),
            .range = {.begin = chunk.begin, .end = chunk.end, .rows = chunk.rows},
            .key = ChunkKey(partition, chunk.begin, chunk.end),
            .body = chunk.body,
            .wire = &wire};
  if (!options.idempotency_query_param.empty()) {
    r.query = options.idempotency_query_param + "=" + PercentEncode(r.key);
  }
  return r;
}

HeaderList RequestHeaders(const Request& request, const ForwardOptions& options,
                          std::string_view content_encoding, const HeaderList& extra,
                          const EndpointLink& link) {
  HeaderList h = {{"Content-Type", "application/x-ndjson"},
                  {"User-Agent", "fwdsink/" FWDSINK_VERSION}};
  // No Content-Encoding at all without compression. @ref LLP 0017#no-identity
  if (!content_encoding.empty()) h.emplace_back("Content-Encoding", std::string(content_encoding));
  if (options.send_idempotency_header) h.emplace_back(options.idempotency_header, request.key);
  // @ref LLP 0027#choice: one list, on as many field lines as it needs.
  for (const std::string_view line : MembersHeaderLines(request.members, kMaxMembersHeaderBytes)) {
    h.emplace_back(std::string(kMembersHeader), std::string(line));
  }
  h.insert(h.end(), extra.begin(), extra.end());
  if (link.token) {
    h.emplace_back("Authorization", "Bearer " + *link.token);
  } else if (!link.basic_authorization.empty()) {
    h.emplace_back("Authorization", link.basic_authorization);
  }
  return h;
}

}  // namespace fwdsink
