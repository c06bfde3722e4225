// SPDX-License-Identifier: Apache-2.0
// PackManifest (fwdsink/pack_manifest.h): pack manifests in SPOOL/packs/, a short text
// record per pack, checksummed, replaced atomically. @ref LLP 0027#manifest
#include "fwdsink/pack_manifest.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <system_error>

#include "fwdsink/partition_name.h"
#include "spool/spool_io.h"

namespace fwdsink {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMagic = "fwdsink-pack 1";
constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 20;

std::string Hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// "<first member>.<digest>": the key's digest makes two packs of one first member
// (one resolved without a changed member) two files.
std::string Stem(const PackManifest& m) {
  const std::string_view key = m.key;
  return m.members.front().name + "." + std::string(key.substr(key.rfind(':') + 1));
}

fs::path PathOf(const fs::path& spool_dir, const PackManifest& m, bool acked) {
  return PacksDir(spool_dir) / (Stem(m) + (acked ? ".acked" : ".pack"));
}

template <typename T>
bool Number(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

Status Corrupt(std::string message) { return Status(StatusCode::kCorrupt, std::move(message)); }

Result<ManifestMember> DecodeMember(std::string_view line) {
  // "member <name> <size> <mtime_ns>"
  const auto a = line.find(' ', 7);
  const auto b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  ManifestMember m;
  if (a == std::string_view::npos || b == std::string_view::npos) {
    return Corrupt("bad member line");
  }
  m.name = std::string(line.substr(7, a - 7));
  if (Status s = ValidatePartitionName(m.name); !s.ok()) return Corrupt(s.message());
  if (!Number(line.substr(a + 1, b - a - 1), m.size) || !Number(line.substr(b + 1), m.mtime_ns)) {
    return Corrupt("bad member line for " + m.name);
  }
  return m;
}

// No fsync: a removal lost to a power cut brings the manifest back, and settling it
// again is harmless (an acknowledged one finds its members gone, an unacknowledged one is
// re-sent under its key or refused the same way). @ref LLP 0027#delivery
Status Remove(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) return spool_io::IoError("cannot remove", path, ec);
  return OkStatus();
}

}  // namespace

std::string MemberKeys(const std::vector<ManifestMember>& members) {
  std::string out;
  for (const ManifestMember& m : members) {
    if (!out.empty()) out += ", ";
    out += m.name + ":0-" + std::to_string(m.size);
  }
  return out;
}

std::vector<std::string_view> MembersHeaderLines(std::string_view members, std::size_t line_bytes) {
  constexpr std::string_view kSep = ", ";
  std::vector<std::string_view> lines;
  std::size_t from = 0;  // the line being filled starts here
  std::size_t end = 0;   // ... and holds the keys up to here
  while (end < members.size()) {
    const std::size_t cut = members.find(kSep, end == from ? end : end + kSep.size());
    const std::size_t next = cut == std::string_view::npos ? members.size() : cut;
    if (next - from > line_bytes && end > from) {  // the key does not fit: a new line
      lines.push_back(members.substr(from, end - from));
      from = end + kSep.size();
      end = from;
      continue;
    }
    end = next;
  }
  if (end > from) lines.push_back(members.substr(from, end - from));
  return lines;
}

// @ref LLP 0027#key
std::string PackKey(const std::vector<ManifestMember>& members) {
  if (members.empty()) return "pack:::00000000";
  return "pack:" + members.front().name + ":" + members.back().name + ":" +
         Hex8(spool_io::Crc32(MemberKeys(members)));
}

PackManifest MakeManifest(std::vector<ManifestMember> members) {
  PackManifest m{.key = PackKey(members), .members = std::move(members)};
  return m;
}

fs::path PacksDir(const fs::path& spool_dir) { return spool_dir / "packs"; }

std::string EncodeManifest(const PackManifest& manifest) {
  std::string body = std::string(kMagic) + "\nkey " + manifest.key + "\n";
  for (const ManifestMember& m : manifest.members) {
    body +=
        "member " + m.name + " " + std::to_string(m.size) + " " + std::to_string(m.mtime_ns) + "\n";
  }
  return body + "crc " + Hex8(spool_io::Crc32(body)) + "\n";
}

Result<PackManifest> DecodeManifest(std::string_view text) {
  const auto crc_at = text.rfind("crc ");
  if (crc_at == std::string_view::npos || text.size() != crc_at + 4 + 8 + 1 ||
      text.back() != '\n') {
    return Corrupt("no checksum line");
  }
  const std::string_view body = text.substr(0, crc_at);
  if (text.substr(crc_at + 4, 8) != Hex8(spool_io::Crc32(body))) return Corrupt("bad checksum");
  PackManifest m;
  std::size_t start = 0;
  std::size_t line_no = 0;
  while (start < body.size()) {
    const auto end = body.find('\n', start);
    const std::string_view line = body.substr(start, end - start);
    start = end + 1;
    if (line_no++ == 0) {
      if (line != kMagic) return Corrupt("not a pack manifest");
    } else if (line.starts_with("key ")) {
      m.key = std::string(line.substr(4));
    } else if (line.starts_with("member ")) {
      auto member = DecodeMember(line);
      if (!member.ok()) return member.status();
      m.members.push_back(std::move(member).value());
    } else {
      return Corrupt("unknown line");
    }
  }
  if (m.members.empty() || m.key != PackKey(m.members)) return Corrupt("key does not match");
  return m;
}

Status WriteManifest(const fs::path& spool_dir, const PackManifest& manifest) {
  const fs::path dir = PacksDir(spool_dir);
  std::error_code ec;
  if (fs::create_directory(dir, ec)) {
    if (Status s = spool_io::FsyncDir(spool_dir); !s.ok()) return s;
  } else if (ec) {
    return spool_io::IoError("cannot create folder", dir, ec);
  }
  return spool_io::WriteFileAtomic(PathOf(spool_dir, manifest, false), EncodeManifest(manifest));
}

Status MarkManifestAcked(const fs::path& spool_dir, PackManifest& manifest) {
  const fs::path from = PathOf(spool_dir, manifest, false);
  const fs::path to = PathOf(spool_dir, manifest, true);
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) return spool_io::IoError("cannot mark acknowledged", from, ec);
  manifest.acked = true;
  manifest.path = to;
  // Durable before any member goes: a power cut that kept some unlinks but lost this
  // rename would send the rest under a new key. @ref LLP 0027#delivery
  return spool_io::FsyncDir(to.parent_path());
}

Status RemoveManifest(const fs::path& spool_dir, const PackManifest& manifest) {
  const fs::path path = PathOf(spool_dir, manifest, manifest.acked);
  return Remove(path);
}

Result<ManifestScan> ListPackManifests(const fs::path& spool_dir) {
  ManifestScan scan;
  const fs::path dir = PacksDir(spool_dir);
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return scan;
  if (ec) return spool_io::IoError("cannot list", dir, ec);
  std::vector<fs::path> files;
  for (const auto& e : it) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(".")) continue;  // a temp file of WriteFileAtomic
    const auto ext = e.path().extension();
    if (ext == ".pack" || ext == ".acked") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    auto text = spool_io::ReadSmallFile(path, kMaxManifestBytes);
    if (!text.ok()) {
      scan.bad.push_back({path, text.status().message()});
      continue;
    }
    auto m = DecodeManifest(*text);
    if (!m.ok()) {
      scan.bad.push_back({path, path.string() + ": " + m.status().message()});
      continue;
    }
    m->acked = path.extension() == ".acked";
    m->path = path;
    scan.manifests.push_back(std::move(m).value());
  }
  return scan;
}

}  // namespace fwdsink
