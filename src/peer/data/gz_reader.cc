#include "peer/data/gz_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/log.h"
#include "peer/data/dataset.h"

namespace murmur::peer::data::detail {
namespace {

gzFile handle(void* file) { return static_cast<gzFile>(file); }

// zlib's default 8 KiB input buffer costs many small read()s on a 26 MB
// file; 256 KiB keeps the load of 70k images well under a second.
constexpr unsigned kGzBufferBytes = 256 * 1024;

}  // namespace

GzReader::GzReader(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  if (!std::filesystem::exists(status)) throw DataError(path_ + ": no such file");
  if (std::filesystem::is_directory(status)) throw DataError(path_ + ": is a directory, expected an IDX file");
  errno = 0;
  file_ = gzopen(path_.c_str(), "rb");
  if (file_ == nullptr)
    throw DataError(path_ + ": cannot open: " + (errno != 0 ? std::strerror(errno) : "zlib out of memory"));
  gzbuffer(handle(file_), kGzBufferBytes);
}

GzReader::~GzReader() {
  if (file_ == nullptr) return;
  // Errors were reported by read(); closing a read handle only frees memory.
  const int rc = gzclose_r(handle(file_));
  if (rc != Z_OK && rc != Z_BUF_ERROR) murmur::peer_log().warn("{}: gzclose_r returned {}", path_, rc);
}

std::size_t GzReader::read(void* out, std::size_t bytes) {
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t got = 0;
  while (got < bytes) {
    // gzread takes an unsigned length and returns an int: read in chunks.
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - got, 1u << 30));
    const int n = gzread(handle(file_), dst + got, chunk);
    if (n < 0) throw_if_stream_error();
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    if (static_cast<unsigned>(n) < chunk) break;
  }
  // A short read is either the real end of the data or a stream error
  // (zlib reports a cut-off gzip stream as Z_BUF_ERROR after a short read).
  if (got < bytes) throw_if_stream_error();
  return got;
}

bool GzReader::plain() const { return gzdirect(handle(file_)) == 1; }

void GzReader::throw_if_stream_error() const {
  int errnum = Z_OK;
  std::string message = gzerror(handle(file_), &errnum);
  if (errnum == Z_OK) return;
  // zlib prefixes its messages with the path, which ours already start with.
  if (message.starts_with(path_ + ": ")) message.erase(0, path_.size() + 2);
  if (errnum == Z_ERRNO) throw DataError(path_ + ": read error: " + std::strerror(errno));
  if (errnum == Z_BUF_ERROR)
    throw DataError(path_ + ": corrupt gzip stream: the compressed data ends early (" + message +
                    "); the file is truncated, download or reinstall it");
  throw DataError(path_ + ": corrupt gzip stream: " + message);
}

}  // namespace murmur::peer::data::detail
