// SPDX-License-Identifier: Apache-2.0
// The cursor record: v1 (offset and failure history), v2 (the same plus the journal of
// ranges in flight) and v3 (the same plus the identity of the file it belongs to). Pure:
// no I/O. @ref LLP 0020#cursor-format @ref LLP 0020#cursor-v2 @ref LLP 0020#file-identity
#include <charconv>
#include <cstdio>
#include <string>
#include <utility>

#include "spool/spool_io.h"
#include "spool/spool_records.h"

namespace fwdsink::internal {

namespace {

constexpr std::string_view kMagicV1 = "fwdsink-cursor v1";
constexpr std::string_view kMagicV2 = "fwdsink-cursor v2";
constexpr std::string_view kMagicV3 = "fwdsink-cursor v3";

Status Corrupt(std::string message) { return Status(StatusCode::kCorrupt, std::move(message)); }

template <typename Int>
bool ParseInt(std::string_view text, Int& out) {
  if (text.empty() || text.front() == '+') return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Consumes "<key>=<value>" followed by a space (or the end) from `rest`.
bool TakeField(std::string_view& rest, std::string_view key, std::string_view& value) {
  if (rest.substr(0, key.size()) != key || rest.size() <= key.size() || rest[key.size()] != '=') {
    return false;
  }
  rest.remove_prefix(key.size() + 1);
  const std::size_t sp = rest.find(' ');
  value = rest.substr(0, sp);
  rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
  return true;
}

// Parses one journal item "<begin>-<end>:f" (in flight) or "<begin>-<end>:a" (acked).
bool ParseRange(std::string_view item, CursorRange& out) {
  const std::size_t dash = item.find('-');
  const std::size_t colon = item.find(':');
  if (dash == std::string_view::npos || colon == std::string_view::npos || colon < dash ||
      colon + 2 != item.size()) {
    return false;
  }
  const char kind = item[colon + 1];
  if (kind != 'f' && kind != 'a') return false;
  out.acked = kind == 'a';
  return ParseInt(item.substr(0, dash), out.begin) &&
         ParseInt(item.substr(dash + 1, colon - dash - 1), out.end);
}

// Parses the value of "ranges=": "-" (none) or comma-separated items.
Status ParseRanges(std::string_view text, std::vector<CursorRange>& out) {
  if (text == "-") return OkStatus();
  while (true) {
    const std::size_t comma = text.find(',');
    CursorRange r;
    if (!ParseRange(text.substr(0, comma), r)) return Corrupt("cursor journal item invalid");
    out.push_back(r);
    if (out.size() > kMaxJournalRanges) return Corrupt("cursor journal has too many ranges");
    if (comma == std::string_view::npos) return OkStatus();
    text.remove_prefix(comma + 1);
  }
}

// Parses the value of "file=": "-" (none) or "<device>:<inode>:<head_bytes>:<head_crc>"
// (the checksum as 8 hex digits).
bool ParseIdentity(std::string_view text, std::optional<PartitionIdentity>& out) {
  if (text == "-") return true;
  PartitionIdentity id;
  std::string_view parts[4];
  for (int i = 0; i < 4; ++i) {
    const std::size_t colon = text.find(':');
    if ((colon == std::string_view::npos) != (i == 3)) return false;
    parts[i] = text.substr(0, colon);
    text.remove_prefix(colon == std::string_view::npos ? text.size() : colon + 1);
  }
  if (!ParseInt(parts[0], id.device) || !ParseInt(parts[1], id.inode) ||
      !ParseInt(parts[2], id.head_bytes) || parts[3].size() != 8 ||
      std::from_chars(parts[3].data(), parts[3].data() + 8, id.head_crc, 16).ptr !=
          parts[3].data() + 8) {
    return false;
  }
  out = id;
  return true;
}

}  // namespace

Status CheckJournal(std::uint64_t offset, std::span<const CursorRange> ranges) {
  if (ranges.size() > kMaxJournalRanges) {
    return Corrupt("cursor journal has " + std::to_string(ranges.size()) + " ranges, more than " +
                   std::to_string(kMaxJournalRanges));
  }
  // Gapless from the offset: a byte between two ranges would be neither acknowledged
  // nor owed, and a restart would cut past it (a lost row). @ref LLP 0020#cursor-v2
  std::uint64_t at = offset;
  for (const CursorRange& r : ranges) {
    const std::string shown = std::to_string(r.begin) + "-" + std::to_string(r.end);
    if (r.begin >= r.end) return Corrupt("cursor journal range " + shown + " is empty");
    if (r.begin < at) {
      return Corrupt("cursor journal range " + shown + " overlaps, is out of order or begins " +
                     "before the offset " + std::to_string(offset));
    }
    if (r.begin > at) {
      return Corrupt("cursor journal range " + shown + " leaves a gap after " + std::to_string(at));
    }
    at = r.end;
  }
  return OkStatus();
}

std::string FormatCursorRecord(const CursorState& s) {
  std::string body(kMagicV3);
  body += " offset=" + std::to_string(s.offset);
  body += " first_failure_ms=";
  body += s.first_failure ? std::to_string(spool_io::ToUnixMs(*s.first_failure)) : "-";
  body += " failures=" + std::to_string(s.failures);
  body += " ranges=";
  if (s.ranges.empty()) body += "-";
  for (std::size_t i = 0; i < s.ranges.size(); ++i) {
    if (i > 0) body += ',';
    body += std::to_string(s.ranges[i].begin) + "-" + std::to_string(s.ranges[i].end);
    body += s.ranges[i].acked ? ":a" : ":f";
  }
  body += " file=";
  if (s.identity) {
    char head_crc[16];
    std::snprintf(head_crc, sizeof head_crc, "%08x", static_cast<unsigned>(s.identity->head_crc));
    body += std::to_string(s.identity->device) + ":" + std::to_string(s.identity->inode) + ":" +
            std::to_string(s.identity->head_bytes) + ":" + head_crc;
  } else {
    body += "-";
  }
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", static_cast<unsigned>(spool_io::Crc32(body)));
  return body + " crc=" + crc + "\n";
}

namespace {

// Takes one line "<body> crc=<8 hex digits>\n" whose checksum holds; returns the body.
Result<std::string_view> CheckedBody(std::string_view text) {
  if (text.empty()) return Corrupt("empty cursor file");
  if (text.back() != '\n') return Corrupt("truncated cursor record (no final newline)");
  text.remove_suffix(1);
  if (text.find('\n') != std::string_view::npos) return Corrupt("cursor record has several lines");
  const std::size_t crc_at = text.rfind(" crc=");
  if (crc_at == std::string_view::npos) return Corrupt("cursor record has no checksum");
  const std::string_view body = text.substr(0, crc_at);
  const std::string_view crc_text = text.substr(crc_at + 5);
  std::uint32_t crc = 0;
  if (crc_text.size() != 8 ||
      std::from_chars(crc_text.data(), crc_text.data() + 8, crc, 16).ptr != crc_text.data() + 8) {
    return Corrupt("cursor checksum is not 8 hex digits");
  }
  if (crc != spool_io::Crc32(body)) return Corrupt("cursor checksum mismatch");
  return body;
}

}  // namespace

// On failure returns kCorrupt saying why and leaves `out` untouched.
// @ref LLP 0020#cursor-format
Status ParseCursorRecord(std::string_view text, CursorState& out) {
  Result<std::string_view> body = CheckedBody(text);
  if (!body.ok()) return std::move(body).status();
  std::string_view rest = *body;
  int version = 1;
  if (rest.substr(0, kMagicV3.size()) == kMagicV3) {
    version = 3;
  } else if (rest.substr(0, kMagicV2.size()) == kMagicV2) {
    version = 2;
  } else if (rest.substr(0, kMagicV1.size()) != kMagicV1) {
    return Corrupt("not a fwdsink-cursor v1, v2 or v3 record");
  }
  if (rest.substr(kMagicV1.size(), 1) != " ") return Corrupt("not a fwdsink-cursor record");
  rest.remove_prefix(kMagicV1.size() + 1);
  std::string_view offset_text, first_text, failures_text, ranges_text;
  CursorState parsed;
  if (!TakeField(rest, "offset", offset_text) || !ParseInt(offset_text, parsed.offset)) {
    return Corrupt("cursor offset missing or invalid");
  }
  if (!TakeField(rest, "first_failure_ms", first_text))
    return Corrupt("cursor first_failure_ms missing");
  if (first_text != "-") {
    std::int64_t ms = 0;
    if (!ParseInt(first_text, ms)) return Corrupt("cursor first_failure_ms invalid");
    parsed.first_failure = spool_io::FromUnixMs(ms);
  }
  if (!TakeField(rest, "failures", failures_text) || !ParseInt(failures_text, parsed.failures)) {
    return Corrupt("cursor failures missing or invalid");
  }
  if (version >= 2) {
    if (!TakeField(rest, "ranges", ranges_text)) return Corrupt("cursor ranges missing");
    if (Status st = ParseRanges(ranges_text, parsed.ranges); !st.ok()) return st;
    if (Status st = CheckJournal(parsed.offset, parsed.ranges); !st.ok()) return st;
  }
  if (version >= 3) {
    std::string_view file_text;
    if (!TakeField(rest, "file", file_text) || !ParseIdentity(file_text, parsed.identity)) {
      return Corrupt("cursor file identity missing or invalid");
    }
  }
  if (!rest.empty()) return Corrupt("cursor record has trailing fields");
  out.offset = parsed.offset;
  out.first_failure = parsed.first_failure;
  out.failures = parsed.failures;
  out.ranges = std::move(parsed.ranges);
  out.identity = parsed.identity;
  return OkStatus();
}

}  // namespace fwdsink::internal
