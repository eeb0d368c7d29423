// The four Kafka codecs over zlib, snappy, liblz4 and libzstd. Every
// decompressor writes into a growing string and refuses to grow it past
// max_out, so a bomb fails after allocating at most max_out bytes.
#include "log/compression.h"

#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "log/coding.h"

namespace headrace::compression {
namespace {

Status TooBig(const char* codec, size_t max_out) {
  return Status::Corruption(std::string(codec) + " records inflate above " +
                            std::to_string(max_out) + " bytes");
}

// Grows *out so that at least one more byte fits after `used`, doubling up
// to max_out + 1 (one byte past the limit shows the stream is over it).
bool Grow(std::string* out, size_t used, size_t max_out) {
  if (used < out->size()) return true;
  if (used > max_out) return false;
  size_t next = std::min(std::max<size_t>(out->size() * 2, 64 * 1024), max_out + 1);
  if (next <= used) return false;
  out->resize(next);
  return true;
}

// ---- gzip (zlib with the gzip wrapper; concatenated members allowed)

Status GzipDecompress(std::span<const uint8_t> in, std::string* out, size_t max_out) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Status::Corruption("gzip: inflateInit2");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  size_t used = 0;
  out->clear();
  for (;;) {
    if (!Grow(out, used, max_out)) return TooBig("gzip", max_out);
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + used);
    zs.avail_out = static_cast<uInt>(out->size() - used);
    int rc = inflate(&zs, Z_NO_FLUSH);
    used = out->size() - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      if (inflateReset(&zs) != Z_OK) return Status::Corruption("gzip: inflateReset");
      continue;  // the next member
    }
    if (rc == Z_BUF_ERROR && zs.avail_out != 0)
      return Status::Corruption("gzip: truncated stream");
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      return Status::Corruption(std::string("gzip: ") + (zs.msg ? zs.msg : "bad stream"));
  }
  if (used > max_out) return TooBig("gzip", max_out);
  out->resize(used);
  return Status::OK();
}

Status GzipCompress(std::span<const uint8_t> in, std::string* out) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return Status::Corruption("gzip: deflateInit2");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, deflateEnd);
  out->resize(deflateBound(&zs, in.size()) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) return Status::Corruption("gzip: deflate");
  out->resize(zs.total_out);
  return Status::OK();
}

// ---- snappy: xerial framing, or one raw block

constexpr uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t kXerialHeaderSize = 16;  // magic + version + compatible version
constexpr size_t kXerialBlockSize = 32 * 1024;  // the Java client's block size

bool IsXerial(std::span<const uint8_t> in) {
  return in.size() >= kXerialHeaderSize && std::memcmp(in.data(), kXerialMagic, 8) == 0;
}

// Appends the raw snappy block `in` to *out at `used`.
Status SnappyBlock(std::span<const uint8_t> in, std::string* out, size_t* used, size_t max_out) {
  const char* src = reinterpret_cast<const char*>(in.data());
  size_t n;
  if (!snappy::GetUncompressedLength(src, in.size(), &n))
    return Status::Corruption("snappy: bad block header");
  if (n > max_out - *used) return TooBig("snappy", max_out);
  out->resize(*used + n);
  if (!snappy::RawUncompress(src, in.size(), out->data() + *used))
    return Status::Corruption("snappy: bad block");
  *used += n;
  return Status::OK();
}

Status SnappyDecompress(std::span<const uint8_t> in, std::string* out, size_t max_out) {
  out->clear();
  size_t used = 0;
  if (!IsXerial(in)) return SnappyBlock(in, out, &used, max_out);
  std::span<const uint8_t> rest = in.subspan(kXerialHeaderSize);
  while (!rest.empty()) {
    if (rest.size() < 4) return Status::Corruption("snappy: truncated xerial block length");
    uint32_t len = coding::LoadBE32(rest.data());
    if (len > rest.size() - 4) return Status::Corruption("snappy: truncated xerial block");
    HR_RETURN_IF_ERROR(SnappyBlock(rest.subspan(4, len), out, &used, max_out));
    rest = rest.subspan(4 + len);
  }
  return Status::OK();
}

Status SnappyCompress(std::span<const uint8_t> in, std::string* out) {
  out->assign(reinterpret_cast<const char*>(kXerialMagic), 8);
  out->resize(kXerialHeaderSize);
  coding::StoreBE32(reinterpret_cast<uint8_t*>(out->data()) + 8, 1);   // version
  coding::StoreBE32(reinterpret_cast<uint8_t*>(out->data()) + 12, 1);  // compatible
  for (size_t pos = 0; pos < in.size(); pos += kXerialBlockSize) {
    size_t n = std::min(kXerialBlockSize, in.size() - pos);
    size_t at = out->size();
    out->resize(at + 4 + snappy::MaxCompressedLength(n));
    size_t len;
    snappy::RawCompress(reinterpret_cast<const char*>(in.data() + pos), n, out->data() + at + 4,
                        &len);
    coding::StoreBE32(reinterpret_cast<uint8_t*>(out->data()) + at, static_cast<uint32_t>(len));
    out->resize(at + 4 + len);
  }
  return Status::OK();
}

// ---- lz4 frame (concatenated frames allowed)

Status Lz4Decompress(std::span<const uint8_t> in, std::string* out, size_t max_out) {
  LZ4F_dctx* dctx;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
    return Status::Corruption("lz4: context");
  std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> guard(
      dctx, LZ4F_freeDecompressionContext);
  out->clear();
  size_t used = 0, pos = 0, hint = 1;
  while (pos < in.size()) {
    if (!Grow(out, used, max_out)) return TooBig("lz4", max_out);
    size_t dst = out->size() - used, src = in.size() - pos;
    hint = LZ4F_decompress(dctx, out->data() + used, &dst, in.data() + pos, &src, nullptr);
    if (LZ4F_isError(hint)) return Status::Corruption(std::string("lz4: ") + LZ4F_getErrorName(hint));
    used += dst;
    pos += src;
    if (src == 0 && dst == 0 && hint != 0 && used < out->size())
      return Status::Corruption("lz4: no progress");
  }
  // Output still buffered inside the context once the input is consumed.
  while (hint != 0) {
    if (!Grow(out, used, max_out)) return TooBig("lz4", max_out);
    size_t dst = out->size() - used, src = 0;
    hint = LZ4F_decompress(dctx, out->data() + used, &dst, nullptr, &src, nullptr);
    if (LZ4F_isError(hint)) return Status::Corruption(std::string("lz4: ") + LZ4F_getErrorName(hint));
    if (dst == 0 && hint != 0) return Status::Corruption("lz4: truncated frame");
    used += dst;
  }
  if (used > max_out) return TooBig("lz4", max_out);
  out->resize(used);
  return Status::OK();
}

Status Lz4Compress(std::span<const uint8_t> in, std::string* out) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;  // the Java client's block size
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  out->resize(LZ4F_compressFrameBound(in.size(), &prefs));
  size_t n = LZ4F_compressFrame(out->data(), out->size(), in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) return Status::Corruption(std::string("lz4: ") + LZ4F_getErrorName(n));
  out->resize(n);
  return Status::OK();
}

// ---- zstd (concatenated frames allowed)

Status ZstdDecompress(std::span<const uint8_t> in, std::string* out, size_t max_out) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) return Status::Corruption("zstd: context");
  out->clear();
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t used = 0, rc = 1;
  while (src.pos < src.size || rc != 0) {
    if (!Grow(out, used, max_out)) return TooBig("zstd", max_out);
    ZSTD_outBuffer dst{out->data(), out->size(), used};
    size_t before_in = src.pos;
    rc = ZSTD_decompressStream(dctx.get(), &dst, &src);
    if (ZSTD_isError(rc)) return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(rc));
    bool progress = dst.pos != used || src.pos != before_in;
    used = dst.pos;
    if (!progress && used < out->size()) return Status::Corruption("zstd: truncated frame");
  }
  if (used > max_out) return TooBig("zstd", max_out);
  out->resize(used);
  return Status::OK();
}

constexpr int kZstdLevel = 3;  // Kafka's default compression.zstd.level

Status ZstdCompress(std::span<const uint8_t> in, std::string* out) {
  out->resize(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out->data(), out->size(), in.data(), in.size(), kZstdLevel);
  if (ZSTD_isError(n)) return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(n));
  out->resize(n);
  return Status::OK();
}

}  // namespace

Status Decompress(Compression codec, std::span<const uint8_t> in, std::string* out,
                  size_t max_out) {
  switch (codec) {
    case Compression::kGzip: return GzipDecompress(in, out, max_out);
    case Compression::kSnappy: return SnappyDecompress(in, out, max_out);
    case Compression::kLz4: return Lz4Decompress(in, out, max_out);
    case Compression::kZstd: return ZstdDecompress(in, out, max_out);
    default: return Status::InvalidArgument("not a compression codec: " + CodecName(codec));
  }
}

Status Compress(Compression codec, std::span<const uint8_t> in, std::string* out) {
  switch (codec) {
    case Compression::kGzip: return GzipCompress(in, out);
    case Compression::kSnappy: return SnappyCompress(in, out);
    case Compression::kLz4: return Lz4Compress(in, out);
    case Compression::kZstd: return ZstdCompress(in, out);
    default: return Status::InvalidArgument("not a compression codec: " + CodecName(codec));
  }
}

std::string CodecName(Compression codec) {
  switch (codec) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kSnappy: return "snappy";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "codec " + std::to_string(static_cast<int>(codec));
}

}  // namespace headrace::compression
