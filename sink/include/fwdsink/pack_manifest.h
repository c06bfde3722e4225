// SPDX-License-Identifier: Apache-2.0
// The manifest of a pack: several small sealed partitions sent as one request. It is
// made durable in SPOOL/packs/ before the first byte of the pack leaves, so that a crash
// re-sends the same members under the same key, and it names the members' identities
// (size, modification time) so that a member changed since is noticed.
//
// Layout: SPOOL/packs/<first member>.<digest>.pack   sent, not yet acknowledged
//         SPOOL/packs/<first member>.<digest>.acked  acknowledged, members being removed
//
// @ref LLP 0027#manifest
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fwdsink/status.h"

namespace fwdsink {

// One member: a whole sealed partition of ready/, as it was when the manifest was made.
struct ManifestMember {
  std::string name;  // the partition (without ".ndjson")
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  friend bool operator==(const ManifestMember&, const ManifestMember&) = default;
};

struct PackManifest {
  std::string key;                      // PackKey(members)
  std::vector<ManifestMember> members;  // in the sending order
  bool acked = false;                   // the server acknowledged it (an .acked file)
  std::filesystem::path path{};         // where it was read from (ListPackManifests)
};

// Returns the members' own keys as a chunk key each: "<name>:0-<size>, ..." (the value of
// the Idempotency-Members header). @ref LLP 0027#key
[[nodiscard]] std::string MemberKeys(const std::vector<ManifestMember>& members);
// Splits a MemberKeys() value into field lines of at most `line_bytes` each, cutting only
// between keys (at ", "), greedily: as many keys to a line as fit; a key longer than
// `line_bytes` is a line alone. Joined with ", " the lines are the value again.
// @ref LLP 0027#choice
[[nodiscard]] std::vector<std::string_view> MembersHeaderLines(std::string_view members,
                                                               std::size_t line_bytes);
// Returns the pack's key: "pack:<first member>:<last member>:<8 hex digits>", the digits
// a CRC-32 of MemberKeys(): the same members with the same sizes give the same key.
[[nodiscard]] std::string PackKey(const std::vector<ManifestMember>& members);
// Returns a manifest of `members` under its key.
[[nodiscard]] PackManifest MakeManifest(std::vector<ManifestMember> members);

// SPOOL/packs/.
[[nodiscard]] std::filesystem::path PacksDir(const std::filesystem::path& spool_dir);

// Writes `manifest` (unacknowledged) durably: temp file, fsync, rename, fsync of packs/
// (created as needed). Rewriting the same manifest is harmless.
[[nodiscard]] Status WriteManifest(const std::filesystem::path& spool_dir,
                                   const PackManifest& manifest);
// Marks it acknowledged, durably (rename .pack -> .acked, fsync of packs/).
[[nodiscard]] Status MarkManifestAcked(const std::filesystem::path& spool_dir,
                                       PackManifest& manifest);
// Removes it (either state; no fsync: settling it again is harmless). Gone is OK.
[[nodiscard]] Status RemoveManifest(const std::filesystem::path& spool_dir,
                                    const PackManifest& manifest);

// A manifest file that could not be read or fails its checksum.
struct BadManifest {
  std::filesystem::path path;
  std::string message;
};
struct ManifestScan {
  std::vector<PackManifest> manifests;  // by file name: the oldest first member first
  std::vector<BadManifest> bad;
};
// Lists SPOOL/packs/ (none when the folder is absent); temp files are ignored. Any
// thread: it only reads.
[[nodiscard]] Result<ManifestScan> ListPackManifests(const std::filesystem::path& spool_dir);

// Encodes and decodes a manifest's text (exposed for tests).
[[nodiscard]] std::string EncodeManifest(const PackManifest& manifest);
[[nodiscard]] Result<PackManifest> DecodeManifest(std::string_view text);

}  // namespace fwdsink
