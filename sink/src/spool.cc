#include "fwdsink/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <system_error>

#include "spool_io.h"

namespace fwdsink {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPartitionExt = ".ndjson";
constexpr std::string_view kCursorExt = ".cursor";
constexpr std::string_view kCursorMagic = "fwdsink-cursor v1";
// A cursor record is one short line; anything bigger is garbage, not a cursor.
constexpr std::size_t kMaxCursorFileBytes = 512;

bool NameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == '-';
}

template <typename Int>
bool ParseInt(std::string_view text, Int& out) {
  if (text.empty() || text.front() == '+') return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Consumes "<key>=<value>" followed by a space (or the end) from `rest`.
bool TakeField(std::string_view& rest, std::string_view key, std::string_view& value) {
  if (rest.substr(0, key.size()) != key || rest.size() <= key.size() ||
      rest[key.size()] != '=') {
    return false;
  }
  rest.remove_prefix(key.size() + 1);
  const std::size_t sp = rest.find(' ');
  value = rest.substr(0, sp);
  rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
  return true;
}

std::string FormatCursorRecord(const CursorState& s) {
  std::string body(kCursorMagic);
  body += " offset=" + std::to_string(s.offset);
  body += " first_failure_ms=";
  body += s.first_failure ? std::to_string(spool_io::ToUnixMs(*s.first_failure)) : "-";
  body += " failures=" + std::to_string(s.failures);
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", static_cast<unsigned>(spool_io::Crc32(body)));
  return body + " crc=" + crc + "\n";
}

// Parses a cursor record. On failure returns a message and leaves `out` untouched.
// @ref LLP 0020#cursor-format
std::optional<std::string> ParseCursorRecord(std::string_view text, CursorState& out) {
  if (text.empty()) return "empty cursor file";
  if (text.back() != '\n') return "truncated cursor record (no final newline)";
  text.remove_suffix(1);
  if (text.find('\n') != std::string_view::npos) return "cursor record has several lines";
  const std::size_t crc_at = text.rfind(" crc=");
  if (crc_at == std::string_view::npos) return "cursor record has no checksum";
  const std::string_view body = text.substr(0, crc_at);
  const std::string_view crc_text = text.substr(crc_at + 5);
  std::uint32_t crc = 0;
  if (crc_text.size() != 8 ||
      std::from_chars(crc_text.data(), crc_text.data() + 8, crc, 16).ptr !=
          crc_text.data() + 8) {
    return "cursor checksum is not 8 hex digits";
  }
  if (crc != spool_io::Crc32(body)) return "cursor checksum mismatch";

  std::string_view rest = body;
  if (rest.substr(0, kCursorMagic.size()) != kCursorMagic ||
      rest.substr(kCursorMagic.size(), 1) != " ") {
    return "not a fwdsink-cursor v1 record";
  }
  rest.remove_prefix(kCursorMagic.size() + 1);
  std::string_view offset_text, first_text, failures_text;
  CursorState parsed;
  if (!TakeField(rest, "offset", offset_text) || !ParseInt(offset_text, parsed.offset)) {
    return "cursor offset missing or invalid";
  }
  if (!TakeField(rest, "first_failure_ms", first_text)) return "cursor first_failure_ms missing";
  if (first_text != "-") {
    std::int64_t ms = 0;
    if (!ParseInt(first_text, ms)) return "cursor first_failure_ms invalid";
    parsed.first_failure = spool_io::FromUnixMs(ms);
  }
  if (!TakeField(rest, "failures", failures_text) ||
      !ParseInt(failures_text, parsed.failures)) {
    return "cursor failures missing or invalid";
  }
  if (!rest.empty()) return "cursor record has trailing fields";
  out.offset = parsed.offset;
  out.first_failure = parsed.first_failure;
  out.failures = parsed.failures;
  return std::nullopt;
}

// Checks that `offset` is within the partition and at a line start.
std::optional<std::string> CheckOffsetAgainst(const fs::path& partition, std::uint64_t offset,
                                              bool& partition_missing) {
  partition_missing = false;
  const int fd = ::open(partition.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    partition_missing = true;
    return "cannot open partition " + partition.string() + ": " +
           std::error_code(errno, std::generic_category()).message();
  }
  std::optional<std::string> problem;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    partition_missing = true;
    problem = "cannot stat partition " + partition.string();
  } else if (offset > static_cast<std::uint64_t>(st.st_size)) {
    problem = "cursor offset " + std::to_string(offset) + " is beyond the partition size " +
              std::to_string(st.st_size);
  } else if (offset > 0) {
    char prev = 0;
    ssize_t n;
    do {
      n = ::pread(fd, &prev, 1, static_cast<off_t>(offset - 1));
    } while (n < 0 && errno == EINTR);
    if (n != 1) {
      partition_missing = true;
      problem = "cannot read partition " + partition.string();
    } else if (prev != '\n') {
      problem = "cursor offset " + std::to_string(offset) + " is not at a line start";
    }
  }
  ::close(fd);
  return problem;
}

}  // namespace

std::string_view to_string(SpoolErrc code) noexcept {
  switch (code) {
    case SpoolErrc::kOk: return "ok";
    case SpoolErrc::kInvalidName: return "invalid name";
    case SpoolErrc::kInvalidArgument: return "invalid argument";
    case SpoolErrc::kNotFound: return "not found";
    case SpoolErrc::kCorrupt: return "corrupt";
    case SpoolErrc::kIo: return "i/o error";
  }
  return "unknown";
}

std::string_view to_string(CursorStatus status) noexcept {
  switch (status) {
    case CursorStatus::kMissing: return "missing";
    case CursorStatus::kOk: return "ok";
    case CursorStatus::kCorrupt: return "corrupt";
    case CursorStatus::kError: return "error";
  }
  return "unknown";
}

SpoolStatus ValidatePartitionName(std::string_view name) {
  // Names become file names: keep them to a portable, shell-safe alphabet with no
  // path separators and no hidden or "."/".." entries. @ref LLP 0020#names
  auto bad = [&](std::string_view why) {
    std::string shown(name.substr(0, 64));
    for (char& c : shown) {
      if (!NameChar(c)) c = '?';
    }
    return SpoolStatus{SpoolErrc::kInvalidName,
                       "invalid partition name \"" + shown + "\": " + std::string(why)};
  };
  if (name.empty()) return bad("empty");
  if (name.size() > kMaxPartitionNameLength) {
    return bad("longer than " + std::to_string(kMaxPartitionNameLength) + " bytes");
  }
  if (name.front() == '.') return bad("starts with '.'");
  if (!std::all_of(name.begin(), name.end(), NameChar)) {
    return bad("only A-Z a-z 0-9 . _ - are allowed");
  }
  return {};
}

SpoolResult<Spool> Spool::Open(fs::path dir) {
  if (dir.empty()) return SpoolStatus{SpoolErrc::kInvalidArgument, "empty spool path"};
  Spool spool(dir);
  for (const fs::path& sub : {spool.dir_, spool.ready_dir(), spool.state_dir(),
                              spool.dead_dir(), spool.incoming_dir()}) {
    std::error_code ec;
    fs::create_directories(sub, ec);
    if (ec) return spool_io::IoError("cannot create spool folder", sub, ec);
    if (!fs::is_directory(sub, ec)) {
      return SpoolStatus{SpoolErrc::kIo, "spool path " + sub.string() + " is not a folder"};
    }
  }
  return spool;
}

fs::path Spool::PartitionPath(std::string_view name) const {
  return ready_dir() / (std::string(name) + std::string(kPartitionExt));
}

fs::path Spool::CursorPath(std::string_view name) const {
  return state_dir() / (std::string(name) + std::string(kCursorExt));
}

SpoolResult<std::vector<ReadyPartition>> Spool::ListReady() const {
  std::vector<ReadyPartition> out;
  std::error_code ec;
  fs::directory_iterator it(ready_dir(), ec);
  if (ec) return spool_io::IoError("cannot list", ready_dir(), ec);
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return spool_io::IoError("cannot list", ready_dir(), ec);
    const std::string file = it->path().filename().string();
    if (file.size() <= kPartitionExt.size() || !file.ends_with(kPartitionExt)) continue;
    std::string name = file.substr(0, file.size() - kPartitionExt.size());
    if (!ValidatePartitionName(name)) continue;
    std::error_code fec;
    if (!it->is_regular_file(fec) || fec) continue;
    const std::uintmax_t size = it->file_size(fec);
    if (fec) continue;  // vanished between listing and stat: not ready any more
    out.push_back(ReadyPartition{std::move(name), it->path(), size});
  }
  if (ec) return spool_io::IoError("cannot list", ready_dir(), ec);
  std::sort(out.begin(), out.end(),
            [](const ReadyPartition& a, const ReadyPartition& b) { return a.name < b.name; });
  return out;
}

CursorState Spool::LoadCursor(std::string_view name) const {
  CursorState state;
  if (SpoolStatus st = ValidatePartitionName(name); !st) {
    state.status = CursorStatus::kError;
    state.message = st.message;
    return state;
  }
  const fs::path path = CursorPath(name);
  SpoolResult<std::string> text = spool_io::ReadSmallFile(path, kMaxCursorFileBytes);
  if (!text) {
    if (text.status().code == SpoolErrc::kNotFound) {
      state.status = CursorStatus::kMissing;
    } else if (text.status().code == SpoolErrc::kCorrupt) {
      state.status = CursorStatus::kCorrupt;
      state.message = text.status().message;
    } else {
      state.status = CursorStatus::kError;
      state.message = text.status().message;
    }
    return state;
  }
  CursorState parsed;
  if (std::optional<std::string> why = ParseCursorRecord(text.value(), parsed)) {
    // Torn or garbage: nothing in it can be trusted. Resending from 0 is safe because
    // chunk keys are byte ranges of the same partition. @ref LLP 0020#corrupt-cursor
    state.status = CursorStatus::kCorrupt;
    state.message = path.string() + ": " + *why;
    return state;
  }
  bool partition_missing = false;
  if (std::optional<std::string> why =
          CheckOffsetAgainst(PartitionPath(name), parsed.offset, partition_missing)) {
    if (partition_missing) {
      state.status = CursorStatus::kError;
      state.message = *why;
      return state;
    }
    // The checksum held, so the failure history is genuine; only the offset is not.
    parsed.offset = 0;
    parsed.status = CursorStatus::kCorrupt;
    parsed.message = path.string() + ": " + *why;
    return parsed;
  }
  parsed.status = CursorStatus::kOk;
  return parsed;
}

SpoolStatus Spool::WriteCursor(std::string_view name, const CursorState& state) {
  // @ref LLP 0020#atomic-writes
  return spool_io::WriteFileAtomic(CursorPath(name), FormatCursorRecord(state));
}

SpoolStatus Spool::SaveCursor(std::string_view name, std::uint64_t offset) {
  if (SpoolStatus st = ValidatePartitionName(name); !st) return st;
  CursorState state;
  // Keep the failure history; an unreadable record simply starts a fresh one.
  if (SpoolResult<std::string> text = spool_io::ReadSmallFile(CursorPath(name),
                                                              kMaxCursorFileBytes)) {
    (void)ParseCursorRecord(text.value(), state);
  }
  state.offset = offset;
  return WriteCursor(name, state);
}

SpoolStatus Spool::RecordFailure(std::string_view name,
                                 std::chrono::system_clock::time_point now) {
  if (SpoolStatus st = ValidatePartitionName(name); !st) return st;
  CursorState state;
  if (SpoolResult<std::string> text = spool_io::ReadSmallFile(CursorPath(name),
                                                              kMaxCursorFileBytes)) {
    (void)ParseCursorRecord(text.value(), state);
  }
  // The give-up horizon runs from the first failure: a later failure, or progress in
  // between, must not push it back. @ref LLP 0020#failure-horizon
  if (!state.first_failure) state.first_failure = now;
  if (state.failures < UINT32_MAX) ++state.failures;
  return WriteCursor(name, state);
}

SpoolStatus Spool::ClearFailures(std::string_view name) {
  if (SpoolStatus st = ValidatePartitionName(name); !st) return st;
  CursorState state;
  if (SpoolResult<std::string> text = spool_io::ReadSmallFile(CursorPath(name),
                                                              kMaxCursorFileBytes)) {
    (void)ParseCursorRecord(text.value(), state);
  }
  // Progress restarts the give-up horizon: keep the offset, forget the failures.
  // @ref LLP 0020#failure-horizon
  state.first_failure.reset();
  state.failures = 0;
  return WriteCursor(name, state);
}

SpoolStatus Spool::MarkDelivered(std::string_view name) {
  if (SpoolStatus st = ValidatePartitionName(name); !st) return st;
  SpoolStatus result;
  const fs::path partition = PartitionPath(name);
  std::error_code ec;
  if (!fs::remove(partition, ec)) {
    result = ec ? spool_io::IoError("cannot remove partition", partition, ec)
                : SpoolStatus{SpoolErrc::kNotFound, "no partition " + partition.string()};
  }
  // The cursor goes after the partition: a crash in between leaves an orphan cursor,
  // never a partition without its cursor (which would be re-sent from 0).
  const fs::path cursor = CursorPath(name);
  const bool had_cursor = fs::remove(cursor, ec);
  if (ec && result.ok()) result = spool_io::IoError("cannot remove cursor", cursor, ec);
  if (SpoolStatus st = spool_io::FsyncDir(ready_dir()); !st && result.ok()) result = st;
  // state/ changed only if there was a cursor to remove (a one-chunk partition never
  // has one: the driver does not save the cursor of a partition's final chunk).
  if (had_cursor) {
    if (SpoolStatus st = spool_io::FsyncDir(state_dir()); !st && result.ok()) result = st;
  }
  return result;
}

}  // namespace fwdsink
