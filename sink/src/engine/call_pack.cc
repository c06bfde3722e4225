// SPDX-License-Identifier: Apache-2.0
// A pack in the sink's one call: what it reads and how it ends. The call reads every
// member whole and checks it against its manifest, and sends the body as one flight (the
// pack's key, its members' keys) through the same loop, gate, pacer, connections, budget and
// verdicts as a partition's chunks; only its refusals and its delivery are its own.
// @ref LLP 0027#call
#include <algorithm>
#include <utility>

#include "base/counter_add.h"
#include "engine/call.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "io/file_reader.h"

namespace fwdsink {
namespace {

// Appends the whole of `m` to `body` if it is still the file its manifest names; returns
// why not otherwise ("gone", "grew", "changed", "torn").
std::string_view ReadMember(const PackMember& m, std::string& body) {
  // Opened never through a link (O_NOFOLLOW) and without blocking on a FIFO, checked on
  // the open descriptor, then read straight into the body, capped at the size the
  // manifest names: four system calls a member (LLP 0027#figures). A member rewritten in
  // between is caught by the size, the mtime or the read itself. @ref LLP 0023#spool
  Result<internal::FileReader> file = internal::FileReader::Open(m.path);
  if (!file.ok()) return file.status().code() == StatusCode::kNotFound ? "gone" : "torn";
  const Result<internal::FileInfo> info = file->Stat();
  if (!info.ok() || !info->regular) return "torn";
  // Grown: rows appended after hand-over (sent alone, as LLP 0023#handover keeps them);
  // anything else is a rewrite.
  if (info->size > m.size) return "grew";
  if (info->size != m.size || info->mtime_ns != m.mtime_ns) return "changed";
  const std::size_t at = body.size();
  body.resize(at + static_cast<std::size_t>(m.size));
  const Result<std::size_t> got =
      file->ReadAt(0, body.data() + at, static_cast<std::size_t>(m.size));
  std::string_view bad;
  if (!got.ok() || *got != m.size) {
    bad = "changed";
  } else if (m.size == 0 || body.back() != '\n') {
    bad = "torn";  // whole lines only: a member must end with '\n' (a sealed partition does)
  }
  if (!bad.empty()) body.resize(at);
  return bad;
}

}  // namespace

PackResult ForwardSink::Call::ForwardPack(const std::string& key,
                                          const std::vector<PackMember>& members) {
  Pack pack{.key = key, .members = members};
  pack_ = &pack;
  window_ = CursorWindow(0);
  source_end_ = SourceStatus::kEnd;  // one flight: nothing more to open
  const std::uint64_t bytes = PackBytes();
  PreparedChunk& body = sink_.buffers.current;
  if (stop_.stop_requested() || !sink_.WaitForInflight(bytes, partition_, stop_)) {
    End(Ending::kAborted, {});
  } else if (!ReadPack(body) || !EncodePack(body)) {
    sink_.deps.inflight->Give(bytes);
  } else {
    file_size_ = body.chunk.body.size();
    Launch(Open(bytes));
    Pump();
    if (result_.chunks_acked == 1) PackDelivered();
  }
  pack.out.result = Finish();
  pack_ = nullptr;
  return std::move(pack.out);
}

// The pack's room in the in-flight budget, taken before its members are read: their
// bytes, twice when they are compressed (the raw body and the wire), as a chunk of full
// size is counted. @ref LLP 0014#inflight-cap
std::uint64_t ForwardSink::Call::PackBytes() const {
  std::uint64_t bytes = 0;
  for (const PackMember& m : pack_->members) bytes += m.size;
  return options_.compression == Compression::kIdentity ? bytes : 2 * bytes;
}

// Reads every member into `into` as the pack's body; false (bad_member set, nothing
// sent) when one is not as its manifest says. @ref LLP 0027#changed
bool ForwardSink::Call::ReadPack(PreparedChunk& into) {
  const std::vector<PackMember>& members = pack_->members;
  PackResult& out = pack_->out;
  std::string& body = into.chunk.body;
  body.clear();
  into.encoded = false;
  std::uint64_t total = 0;
  for (const PackMember& m : members) total += m.size;
  body.reserve(total);
  std::uint64_t rows = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::string_view bad = ReadMember(members[i], body);
    if (!bad.empty()) {
      out.bad_member = i;
      out.bad_reason = std::string(bad);
      result_.outcome = Outcome::kPartitionError;
      result_.reason = out.bad_reason;
      result_.message = "pack member " + members[i].partition + " is " + out.bad_reason +
                        " since its manifest was written; nothing sent";
      return false;
    }
    const auto from = body.end() - static_cast<std::ptrdiff_t>(members[i].size);
    out.rows.push_back(static_cast<std::uint64_t>(std::count(from, body.end(), '\n')));
    rows += out.rows.back();
  }
  into.chunk.begin = 0;
  into.chunk.end = body.size();
  into.chunk.rows = rows;
  return true;
}

// Compresses the pack's body when the sink does (identity sends the body itself).
bool ForwardSink::Call::EncodePack(PreparedChunk& c) {
  if (options_.compression == Compression::kIdentity) return true;
  c.encoded = sink_.encoder.Encode(c.chunk.body, c.wire);
  if (c.encoded) return true;
  End(Ending::kEncodeFailed,
      {.key = pack_->key,
       .reason = "encode_failed",
       .message = "compressing pack " + pack_->key + " failed: " + sink_.encoder.error()});
  return false;
}

// A verdict on the pack that is no acknowledgement. A refusal of its data (a split or a
// poison for a chunk) sends its members alone, where a 413 splits by rows and a bad row
// is dead-lettered in its own partition; counted and said as a split. Any other ending
// is the pack's, as it would be a chunk's. @ref LLP 0027#refusals
ForwardSink::Call::ChunkEnd ForwardSink::Call::PackRefused(const Verdict& v,
                                                           const Request& request) {
  const std::string& key = pack_->key;
  const std::size_t n = pack_->members.size();
  const std::optional<Ending> ending = EndingFor(v);
  FWDSINK_CHECK(ending.has_value());
  Facts facts{.key = key,
              .status = v.status,
              .reason = v.reason.empty() ? "http_" + std::to_string(v.status) : v.reason,
              .message = v.message + " for pack " + key + " of " + std::to_string(n) +
                         " partitions" + (v.server_message.empty() ? "" : ": " + v.server_message),
              .server_message = v.server_message,
              .begin = 0,
              .end = request.range.end,
              .rows = request.range.rows,
              .respool = v.respool_reason};
  if (*ending != Ending::kSplit && *ending != Ending::kPoisoned) {
    End(*ending, facts);
    return ChunkEnd::kStop;
  }
  facts.message = "HTTP " + std::to_string(v.status) + " for pack " + key + "; its " +
                  std::to_string(n) + " partitions go alone";
  End(Ending::kSplit, facts);
  pack_->out.unpack = true;
  result_.outcome = Outcome::kRespooled;
  result_.status = v.status;
  result_.reason = facts.reason;
  result_.message = facts.message;
  return ChunkEnd::kStop;
}

// Every member is delivered (the call counted the request as a chunk): the pack's
// counts, then one forward.delivered per member with its rows (dashboards count
// partitions and rows as before).
void ForwardSink::Call::PackDelivered() {
  const std::vector<PackMember>& members = pack_->members;
  const std::string& key = pack_->key;
  Add(counters_.packs_sent);
  Add(counters_.partitions_packed, members.size());
  result_.outcome = Outcome::kDelivered;
  Emit({.name = events::kForwardPackDelivered,
        .begin = 0,
        .end = members.size(),
        .message = "pack " + key + " of " + std::to_string(members.size()) + " partitions (" +
                   std::to_string(result_.rows_acked) + " rows) delivered"});
  for (std::size_t i = 0; i < members.size(); ++i) {
    Add(counters_.partitions_delivered);
    Emit({.name = events::kForwardDelivered,
          .partition = members[i].partition,
          .end = members[i].size,
          .message = "partition delivered (" + std::to_string(pack_->out.rows[i]) +
                     " rows, in pack " + key + ")"});
  }
}

}  // namespace fwdsink
