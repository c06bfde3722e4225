// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/codec.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <limits>

#include "io/zstd_decode.h"

namespace fwdsink {
namespace {

// Smallest step by which DecodeZstd grows its output; matches zstd's own block size.
constexpr std::size_t kDecodeGrowBytes = 128 * 1024;

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

Status DecodeFail(std::string message) { return Status(StatusCode::kCorrupt, std::move(message)); }

}  // namespace

std::string_view to_string(Compression compression) {
  switch (compression) {
    case Compression::kIdentity: return "identity";
    case Compression::kZstd: return "zstd";
    case Compression::kGzip: return "gzip";
  }
  return "unknown";
}

std::string_view ContentEncodingOf(Compression compression) {
  return compression == Compression::kIdentity ? std::string_view() : to_string(compression);
}

std::optional<Compression> ParseCompression(std::string_view text) {
  if (text == "zstd") return Compression::kZstd;
  if (text == "identity") return Compression::kIdentity;
  if (text == "gzip") return Compression::kGzip;
  return std::nullopt;
}

Status ValidateZstdLevel(int level) {
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
    return Status::Config("zstd_level", "zstd_level " + std::to_string(level) + " is outside [" +
                                            std::to_string(ZSTD_minCLevel()) + ", " +
                                            std::to_string(ZSTD_maxCLevel()) + "]");
  }
  return OkStatus();
}

struct Encoder::Impl {
  struct CCtxDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx;
  // Output scratch of ZSTD_compressBound bytes, kept across chunks. Compressing into
  // `out` directly meant resize(bound) zero-filling ~860 KiB per 1 MiB chunk (1.4% of
  // the CPU of a forward); a copy of the compressed bytes is ~6x smaller.
  // @ref LLP 0010#codec-context-reuse
  std::unique_ptr<char[]> scratch;
  std::size_t scratch_size = 0;
  // kGzip: one deflate stream with a gzip wrapper, reset (not re-made) per chunk.
  z_stream gz{};
  bool gz_ready = false;
  ~Impl() {
    if (gz_ready) deflateEnd(&gz);
  }
  // Grows the scratch to at least `bound` bytes, with a quarter of headroom: chunk
  // sizes vary by a line or so, and a scratch that grew by a few bytes at a time would
  // leave a ~1 MiB block behind each time.
  void EnsureScratch(std::size_t bound, std::size_t grown) {
    if (scratch_size >= bound) return;
    scratch = std::make_unique_for_overwrite<char[]>(grown);
    scratch_size = grown;
  }
  // Compresses `in` into one gzip member in the scratch; returns its size, or an error.
  Result<std::size_t> Gzip(std::string_view in) {
    const auto bound = static_cast<std::size_t>(deflateBound(&gz, static_cast<uLong>(in.size())));
    EnsureScratch(bound, bound + bound / 4);
    if (deflateReset(&gz) != Z_OK) return Status(StatusCode::kInternal, "deflateReset failed");
    gz.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    gz.avail_in = static_cast<uInt>(in.size());
    gz.next_out = reinterpret_cast<Bytef*>(scratch.get());
    gz.avail_out = static_cast<uInt>(scratch_size);
    // deflateBound makes one Z_FINISH call always enough.
    const int r = deflate(&gz, Z_FINISH);
    if (r != Z_STREAM_END) {
      return Status(StatusCode::kInternal,
                    std::string("deflate: ") + (gz.msg ? gz.msg : std::to_string(r)));
    }
    return static_cast<std::size_t>(gz.total_out);
  }
};

Encoder::Encoder(Compression compression, int zstd_level) : compression_(compression) {
  if (compression_ == Compression::kGzip) {
    impl_ = std::make_unique<Impl>();
    // 15 + 16: the largest window with a gzip header and trailer (RFC 1952).
    if (deflateInit2(&impl_->gz, kGzipLevel, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      ok_ = false;
      error_ = "deflateInit2 failed";
      return;
    }
    impl_->gz_ready = true;
    return;
  }
  if (compression_ != Compression::kZstd) return;
  if (Status problem = ValidateZstdLevel(zstd_level); !problem.ok()) {
    ok_ = false;
    error_ = problem.message();
    return;
  }
  // One context for the encoder's life: creating one costs far more than compressing a
  // small chunk at level 1, and the parameters below survive ZSTD_compress2's
  // session-only reset. @ref LLP 0010#codec-context-reuse
  impl_ = std::make_unique<Impl>();
  impl_->cctx.reset(ZSTD_createCCtx());
  if (!impl_->cctx) {
    ok_ = false;
    error_ = "ZSTD_createCCtx failed";
    return;
  }
  for (auto [param, value] :
       {std::pair{ZSTD_c_compressionLevel, zstd_level}, std::pair{ZSTD_c_contentSizeFlag, 1},
        std::pair{ZSTD_c_checksumFlag, 1}}) {
    const std::size_t r = ZSTD_CCtx_setParameter(impl_->cctx.get(), param, value);
    if (ZSTD_isError(r)) {
      ok_ = false;
      error_ = std::string("ZSTD_CCtx_setParameter: ") + ZSTD_getErrorName(r);
      return;
    }
  }
}

Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;
Encoder::~Encoder() = default;

bool Encoder::Encode(std::string_view in, std::string& out) {
  if (!ok_ || (compression_ != Compression::kIdentity && !impl_)) {  // failed or moved from
    if (ok_) error_ = "encoder was moved from";
    out.clear();
    return false;
  }
  if (compression_ == Compression::kIdentity) {
    out.assign(in);
    return true;
  }
  if (compression_ == Compression::kGzip) {
    const Result<std::size_t> n = impl_->Gzip(in);
    if (!n.ok()) {
      error_ = n.status().message();
      out.clear();
      return false;
    }
    out.assign(impl_->scratch.get(), *n);
    return true;
  }
  // The bound makes one call always enough; the scratch only ever grows.
  impl_->EnsureScratch(ZSTD_compressBound(in.size()),
                       ZSTD_compressBound(in.size() + in.size() / 4));
  const std::size_t n = ZSTD_compress2(impl_->cctx.get(), impl_->scratch.get(), impl_->scratch_size,
                                       in.data(), in.size());
  if (ZSTD_isError(n)) {
    error_ = std::string("ZSTD_compress2: ") + ZSTD_getErrorName(n);
    out.clear();
    return false;
  }
  out.assign(impl_->scratch.get(), n);  // keeps out's capacity across chunks
  return true;
}

Result<std::string> DecodeZstd(std::string_view in, std::size_t max_out) {
  std::string out;
  if (in.empty()) return DecodeFail("zstd: empty input, no frame");
  // Refuse early what a frame header admits is too big; the streaming loop below still
  // enforces the limit for frames that do not declare a size (or lie).
  const unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return DecodeFail("zstd: not a zstd frame");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > max_out) {
    return DecodeFail("zstd: frame declares " + std::to_string(declared) +
                      " bytes, more than the limit of " + std::to_string(max_out));
  }
  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) return DecodeFail("zstd: ZSTD_createDCtx failed");

  // Output may reach max_out + 1 bytes: producing that extra byte is how an oversize
  // stream is told apart from one that is exactly max_out long.
  // @ref LLP 0010#bounded-decode
  const std::size_t limit =
      max_out == std::numeric_limits<std::size_t>::max() ? max_out : max_out + 1;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::size_t written = 0;
  for (;;) {
    if (written == out.size()) {
      if (out.size() >= limit) break;
      const std::size_t want = declared != ZSTD_CONTENTSIZE_UNKNOWN && written == 0
                                   ? static_cast<std::size_t>(declared) + 1
                                   : std::max(out.size() * 2, kDecodeGrowBytes);
      out.resize(std::min(limit, std::max(want, written + 1)));
    }
    ZSTD_outBuffer output{out.data(), out.size(), written};
    const std::size_t r = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(r)) {
      return DecodeFail(std::string("zstd: ") + ZSTD_getErrorName(r));
    }
    written = output.pos;
    if (written > max_out) break;
    if (input.pos == input.size) {
      if (r == 0) {
        out.resize(written);
        return out;
      }
      // All input consumed, the frame is unfinished, and the decoder has room to write:
      // it is waiting for bytes that will never come.
      if (output.pos < output.size) return DecodeFail("zstd: truncated frame");
    }
  }
  return DecodeFail("zstd: output exceeds the limit of " + std::to_string(max_out) + " bytes");
}

}  // namespace fwdsink
