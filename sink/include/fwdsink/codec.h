// Codec: Content-Encoding of chunk bodies (zstd or identity), and bounded zstd decoding.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fwdsink/status.h"

namespace fwdsink {

enum class Compression { kIdentity, kZstd };

// Returns the Content-Encoding token: "identity" or "zstd".
[[nodiscard]] std::string_view to_string(Compression compression);
// Parses "zstd" or "identity" (exact, lower case); nullopt for anything else.
[[nodiscard]] std::optional<Compression> ParseCompression(std::string_view text);

// Default zstd level: level 1 is what the CPU budget in DESIGN.md is measured against.
inline constexpr int kDefaultZstdLevel = 1;

// Checks a zstd compression level; returns a kInvalidConfig status with field
// "zstd_level" when it is outside the range libzstd accepts, OK when valid. 0 means
// zstd's own default level.
[[nodiscard]] Status ValidateZstdLevel(int level);

// Compresses chunk bodies for the wire. With kZstd every Encode() yields one complete
// zstd frame that records the content size and carries a checksum; one compression
// context is made in the constructor and reused for every chunk, so steady-state
// encoding allocates nothing beyond growing `out`. It does no framing of its own and
// keeps no state between chunks (each frame decodes alone).
//
// Threading: not thread-safe. Make one per sender; one thread at a time may call it.
class Encoder {
 public:
  // Creates an encoder. An invalid `zstd_level` (see ValidateZstdLevel) or a failure to
  // create the zstd context leaves it failed: ok() is false and Encode() returns false.
  explicit Encoder(Compression compression, int zstd_level = kDefaultZstdLevel);
  Encoder(Encoder&&) noexcept;
  Encoder& operator=(Encoder&&) noexcept;
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;
  ~Encoder();

  // Replaces `out` with the encoding of `in`, reusing out's capacity. Returns false and
  // sets error() on failure; `out` is then empty.
  [[nodiscard]] bool Encode(std::string_view in, std::string& out);

  // Returns true unless construction failed.
  [[nodiscard]] bool ok() const { return ok_; }
  // Returns the compression this encoder applies.
  [[nodiscard]] Compression compression() const { return compression_; }
  // Returns the Content-Encoding header value: "zstd" or "identity".
  [[nodiscard]] std::string_view content_encoding() const { return to_string(compression_); }
  // Returns the last error message; empty if none.
  [[nodiscard]] std::string error() const { return error_; }

 private:
  struct Impl;  // holds the ZSTD_CCtx; keeps zstd.h out of this header
  Compression compression_;
  std::unique_ptr<Impl> impl_;
  bool ok_ = true;
  std::string error_;
};

}  // namespace fwdsink
