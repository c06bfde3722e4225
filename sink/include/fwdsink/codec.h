// SPDX-License-Identifier: Apache-2.0
// Codec: Content-Encoding of chunk bodies (zstd, gzip or identity), and bounded zstd decoding.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fwdsink/status.h"

namespace fwdsink {

enum class Compression { kIdentity, kZstd, kGzip };

// Returns the option's name: "identity", "zstd" or "gzip".
[[nodiscard]] std::string_view to_string(Compression compression);
// Returns the Content-Encoding header value, or an empty view for kIdentity: a request
// without compression carries no Content-Encoding at all (RFC 9110 reserves `identity`
// for Accept-Encoding, and ClickHouse refuses it). @ref LLP 0017#no-identity
[[nodiscard]] std::string_view ContentEncodingOf(Compression compression);
// Parses "zstd", "gzip" or "identity" (exact, lower case); nullopt for anything else.
[[nodiscard]] std::optional<Compression> ParseCompression(std::string_view text);

// Default zstd level: level 1 is what the CPU budget in DESIGN.md is measured against.
inline constexpr int kDefaultZstdLevel = 1;
// gzip (zlib deflate) level: 1, the fastest, for the same reason.
inline constexpr int kGzipLevel = 1;

// Checks a zstd compression level; returns a kInvalidConfig status with field
// "zstd_level" when it is outside the range libzstd accepts, OK when valid. 0 means
// zstd's own default level.
[[nodiscard]] Status ValidateZstdLevel(int level);

// Compresses chunk bodies for the wire. With kZstd every Encode() yields one complete
// zstd frame that records the content size and carries a checksum; with kGzip one
// complete gzip member (RFC 1952, zlib level kGzipLevel). One compression context is
// made in the constructor and reused for every chunk, so steady-state
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
  // Returns the Content-Encoding header value: "zstd", "gzip", or empty for identity
  // (then no header is sent).
  [[nodiscard]] std::string_view content_encoding() const {
    return ContentEncodingOf(compression_);
  }
  // Returns the last error message; empty if none.
  [[nodiscard]] std::string error() const { return error_; }

 private:
  struct Impl;  // holds the ZSTD_CCtx or the z_stream; keeps zstd.h/zlib.h out of this header
  Compression compression_;
  std::unique_ptr<Impl> impl_;
  bool ok_ = true;
  std::string error_;
};

}  // namespace fwdsink
