// SPDX-License-Identifier: Apache-2.0
// Codec: compression names, zstd/identity round trips, context reuse, bounded decoding.
#include <doctest/doctest.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fwdsink/codec.h"
#include "io/zstd_decode.h"

namespace {

// The cases below read best as "decode into out, report into err": adapt the
// library's Result-returning DecodeZstd to that shape (out is cleared on failure).
bool DecodeZstd(std::string_view in, std::string& out, std::size_t max_out,
                std::string* err = nullptr) {
  fwdsink::Result<std::string> r = fwdsink::DecodeZstd(in, max_out);
  if (!r.ok()) {
    out.clear();
    if (err != nullptr) *err = r.status().message();
    return false;
  }
  out = std::move(r).value();
  return true;
}

using fwdsink::Compression;
using fwdsink::Encoder;

constexpr std::uint32_t kSeed = 20261130;
constexpr std::size_t kRandomBytes = 300 * 1024;
constexpr std::size_t kDecodeLimit = 64 << 20;
constexpr std::size_t kReuseChunks = 200;
constexpr std::size_t kBombBytes = 100u << 20;  // a frame of 100 MiB of zeros
constexpr std::size_t kBombLimit = 1 << 20;     // what we allow it to inflate to
constexpr std::size_t kExactBytes = 20u << 20;  // limit-boundary frame, 20 MiB of zeros
constexpr std::size_t kStreamStep = 1 << 20;    // feed size when building big frames

std::string RandomBytes(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(byte(rng));
  return s;
}

std::string RandomNdjson(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<int> v(0, 99999);
  std::string s;
  while (s.size() < n) {
    s += R"({"host":"web-)" + std::to_string(v(rng) % 16) + R"(","cpu":)" + std::to_string(v(rng)) +
         R"(,"msg":"request served"})" + "\n";
  }
  return s;
}

// Compresses `total` zero bytes as one frame without holding them in memory, and
// without a content size in the header (as a hostile sender would).
std::string ZeroFrame(std::size_t total) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  REQUIRE(cctx);
  const std::string zeros(kStreamStep, '\0');
  std::string frame;
  std::string buf(ZSTD_CStreamOutSize(), '\0');
  std::size_t left = total;
  for (;;) {
    const std::size_t n = std::min(left, zeros.size());
    left -= n;
    const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    bool done = false;
    while (!done) {
      ZSTD_outBuffer out{buf.data(), buf.size(), 0};
      const std::size_t r = ZSTD_compressStream2(cctx.get(), &out, &in, mode);
      REQUIRE_FALSE(ZSTD_isError(r));
      frame.append(buf.data(), out.pos);
      done = mode == ZSTD_e_end ? r == 0 : in.pos == in.size;
    }
    if (left == 0) return frame;
  }
}

}  // namespace

TEST_CASE("Compression names") {
  CHECK(fwdsink::to_string(Compression::kZstd) == "zstd");
  CHECK(fwdsink::to_string(Compression::kIdentity) == "identity");
  CHECK(fwdsink::ParseCompression("zstd") == Compression::kZstd);
  CHECK(fwdsink::ParseCompression("identity") == Compression::kIdentity);
  CHECK(fwdsink::ParseCompression("gzip") == Compression::kGzip);  // issue 10
  CHECK_FALSE(fwdsink::ParseCompression("br"));
  CHECK_FALSE(fwdsink::ParseCompression("ZSTD"));
  CHECK_FALSE(fwdsink::ParseCompression(""));
  CHECK(Encoder(Compression::kZstd).content_encoding() == "zstd");
  // No header without compression (RFC 9110; ClickHouse refuses "identity"): issue 10.
  CHECK(Encoder(Compression::kIdentity).content_encoding().empty());
}

TEST_CASE("zstd level validation names the field") {
  CHECK(fwdsink::ValidateZstdLevel(1).ok());
  CHECK(fwdsink::ValidateZstdLevel(ZSTD_maxCLevel()).ok());
  CHECK(fwdsink::ValidateZstdLevel(-5).ok());  // zstd's fast levels
  const fwdsink::Status st = fwdsink::ValidateZstdLevel(ZSTD_maxCLevel() + 1);
  REQUIRE_FALSE(st.ok());
  CHECK(st.field() == "zstd_level");
  CHECK(st.message().find("zstd_level") != std::string::npos);

  SUBCASE("an encoder with a bad level refuses to encode") {
    Encoder bad(Compression::kZstd, ZSTD_maxCLevel() + 1);
    CHECK_FALSE(bad.ok());
    CHECK(bad.error().find("zstd_level") != std::string::npos);
    std::string out = "stale";
    CHECK_FALSE(bad.Encode("abc\n", out));
    CHECK(out.empty());
  }
  SUBCASE("twin: the highest valid level encodes") {
    Encoder good(Compression::kZstd, ZSTD_maxCLevel());
    CHECK(good.ok());
    std::string out;
    CHECK(good.Encode("abc\n", out));
  }
  SUBCASE("identity ignores the level") {
    CHECK(Encoder(Compression::kIdentity, ZSTD_maxCLevel() + 1).ok());
  }
}

TEST_CASE("Encoder round trips") {
  std::mt19937 rng(kSeed);
  const std::vector<std::string> inputs = {"", "{}\n", RandomBytes(rng, kRandomBytes),
                                           RandomNdjson(rng, kRandomBytes)};
  SUBCASE("identity copies") {
    Encoder e(Compression::kIdentity);
    for (const auto& in : inputs) {
      std::string out = "stale";
      REQUIRE(e.Encode(in, out));
      CHECK(out == in);
    }
  }
  SUBCASE("zstd decodes back to the input") {
    Encoder e(Compression::kZstd);
    for (const auto& in : inputs) {
      std::string frame;
      REQUIRE(e.Encode(in, frame));
      CHECK(ZSTD_getFrameContentSize(frame.data(), frame.size()) == in.size());
      std::string back = "stale";
      std::string err;
      REQUIRE_MESSAGE(DecodeZstd(frame, back, kDecodeLimit, &err), err);
      CHECK(back == in);
    }
  }
  SUBCASE("zstd compresses NDJSON") {
    Encoder e(Compression::kZstd);
    std::string frame;
    REQUIRE(e.Encode(inputs[3], frame));
    CHECK(frame.size() * 3 < inputs[3].size());
  }
}

TEST_CASE("Encoder reuses its context and out's capacity across chunks") {
  std::mt19937 rng(kSeed);
  Encoder e(Compression::kZstd, 3);
  std::string frame;
  std::string back;
  const std::string big = RandomNdjson(rng, 64 * 1024);
  REQUIRE(e.Encode(big, frame));
  const char* const buffer = frame.data();
  for (std::size_t i = 0; i < kReuseChunks; ++i) {
    // Alternate sizes so a frame that leaks state from the previous one would show.
    const std::string chunk = i % 2 == 0 ? RandomNdjson(rng, 1000 + i * 97) : RandomBytes(rng, i);
    REQUIRE(e.Encode(chunk, frame));
    std::string err;
    REQUIRE_MESSAGE(DecodeZstd(frame, back, kDecodeLimit, &err), err);
    REQUIRE(back == chunk);
  }
  CHECK(frame.data() == buffer);  // never reallocated: all later chunks are smaller
  CHECK(e.ok());
  CHECK(e.error().empty());
}

TEST_CASE("DecodeZstd fails cleanly on bad input") {
  Encoder e(Compression::kZstd);
  std::string frame;
  REQUIRE(e.Encode(std::string(10000, 'q') + "\n", frame));
  std::string out = "stale";
  std::string err;
  SUBCASE("twin: the intact frame decodes") {
    CHECK(DecodeZstd(frame, out, kDecodeLimit, &err));
    CHECK(out.size() == 10001);
  }
  SUBCASE("empty input") {
    CHECK_FALSE(DecodeZstd("", out, kDecodeLimit, &err));
    CHECK(out.empty());
    CHECK_FALSE(err.empty());
  }
  SUBCASE("not zstd at all") {
    CHECK_FALSE(DecodeZstd("{\"a\":1}\n", out, kDecodeLimit, &err));
    CHECK(out.empty());
  }
  SUBCASE("a flipped byte in the body fails the checksum or the decoder") {
    frame[frame.size() / 2] = static_cast<char>(frame[frame.size() / 2] ^ 0x5a);
    CHECK_FALSE(DecodeZstd(frame, out, kDecodeLimit, &err));
    CHECK(out.empty());
    CHECK_FALSE(err.empty());
  }
  SUBCASE("a truncated frame") {
    frame.resize(frame.size() - 3);
    CHECK_FALSE(DecodeZstd(frame, out, kDecodeLimit, &err));
    CHECK(err.find("truncated") != std::string::npos);
  }
  SUBCASE("the status says corrupt") {
    const fwdsink::Result<std::string> r = fwdsink::DecodeZstd("garbage", kDecodeLimit);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == fwdsink::StatusCode::kCorrupt);
  }
}

TEST_CASE("DecodeZstd refuses to inflate past max_out") {
  std::string out;
  std::string err;
  SUBCASE("a small frame of 100 MiB of zeros stops at the limit") {
    const std::string bomb = ZeroFrame(kBombBytes);
    REQUIRE(bomb.size() < kBombBytes / 1000);
    REQUIRE(ZSTD_getFrameContentSize(bomb.data(), bomb.size()) == ZSTD_CONTENTSIZE_UNKNOWN);
    CHECK_FALSE(DecodeZstd(bomb, out, kBombLimit, &err));
    CHECK(err.find("limit") != std::string::npos);
    CHECK(out.empty());
    CHECK(out.capacity() <= 2 * kBombLimit);  // never grew toward 100 MiB
  }
  SUBCASE("exactly max_out is allowed, one byte less is refused") {
    const std::string frame = ZeroFrame(kExactBytes);
    CHECK(DecodeZstd(frame, out, kExactBytes, &err));
    CHECK(out.size() == kExactBytes);
    CHECK_FALSE(DecodeZstd(frame, out, kExactBytes - 1, &err));
    CHECK(out.empty());
  }
  SUBCASE("a frame that declares too much is refused up front") {
    Encoder e(Compression::kZstd);
    std::string frame;
    REQUIRE(e.Encode(std::string(5000, 'z'), frame));
    CHECK_FALSE(DecodeZstd(frame, out, 4999, &err));
    CHECK(err.find("declares") != std::string::npos);
    CHECK(DecodeZstd(frame, out, 5000, &err));
  }
}

TEST_CASE("A moved encoder keeps working; the moved-from one refuses") {
  Encoder a(Compression::kZstd);
  Encoder b = std::move(a);
  std::string frame;
  std::string back;
  REQUIRE(b.Encode("x\n", frame));
  REQUIRE(DecodeZstd(frame, back, kDecodeLimit));
  CHECK(back == "x\n");
  CHECK_FALSE(a.Encode("x\n", frame));  // NOLINT(bugprone-use-after-move): defined state
  CHECK(frame.empty());
}
