// SPDX-License-Identifier: Apache-2.0
#include "engine/request.h"

#include "fwdsink/forward_pack.h"
#include "fwdsink/pack_manifest.h"

#ifndef FWDSINK_VERSION
#define FWDSINK_VERSION "0"
#endif

namespace fwdsink {
namespace {

// "name=key" for the URL (--key-param), or empty.
std::string KeyQuery(const std::string& key, const ForwardOptions& options) {
  if (options.idempotency_query_param.empty()) return {};
  return options.idempotency_query_param + "=" + PercentEncode(key);
}

}  // namespace

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
  r.query = KeyQuery(r.key, options);
  return r;
}

Request MakePackRequest(const std::string& key, const std::vector<PackMember>& members,
                        const Chunk& chunk, std::string& wire, const ForwardOptions& options) {
  std::vector<ManifestMember> ids;
  ids.reserve(members.size());
  for (const PackMember& m : members) ids.push_back({m.partition, m.size, m.mtime_ns});
  Request r{.partition = members.front().partition,
            .range = {.begin = 0, .end = chunk.body.size(), .rows = chunk.rows},
            .key = key,
            .body = chunk.body,
            .wire = &wire,
            .members = MemberKeys(ids)};
  r.query = KeyQuery(r.key, options);
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
