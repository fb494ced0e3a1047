// Internal: the RAII owner of one zlib gzFile opened for reading. zlib reads
// plain (uncompressed) files transparently, so this reads both.
//
// Every fault (cannot open, corrupt gzip stream, bad CRC, stream cut short)
// becomes a DataError starting with the path. Blocking: reads block on the
// file. Thread-safety: one owner thread.
#pragma once

#include <cstddef>
#include <string>

namespace murmur::peer::data::detail {

class GzReader {
 public:
  explicit GzReader(std::string path);  // throws DataError if it cannot open
  ~GzReader();
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to `bytes` into `out`; returns how many were read, fewer only at
  // the end of the data. A corrupt or cut-off gzip stream throws DataError.
  std::size_t read(void* out, std::size_t bytes);

  // True when the file was not gzip and is read as plain bytes (known after
  // the first read).
  bool plain() const;

  const std::string& path() const { return path_; }

 private:
  void throw_if_stream_error() const;

  std::string path_;
  void* file_ = nullptr;  // gzFile; void* keeps zlib.h out of this header
};

}  // namespace murmur::peer::data::detail
