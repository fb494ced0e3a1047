#include "peer/data/idx_file.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer/data/gz_reader.h"

namespace murmur::peer::data {
namespace {

using detail::GzReader;

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dims
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dim
// Buffers start at most this large and double as data arrives (see header).
constexpr std::size_t kInitialBufferBytes = std::size_t{64} << 20;

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::uint32_t big_endian(const unsigned char* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | std::uint32_t{p[3]};
}

// What a found magic number looks like, to help with swapped or wrong files.
std::string explain_magic(std::uint32_t magic, bool plain) {
  std::string s;
  if (magic == kImagesMagic)
    s = " (an IDX images file: were the two paths swapped?)";
  else if (magic == kLabelsMagic)
    s = " (an IDX labels file: were the two paths swapped?)";
  else if (magic >> 16 == 0)
    s = " (IDX, but not unsigned bytes with the right number of dimensions)";
  else if (plain)
    s = " (the file is neither gzip-compressed nor IDX)";
  else
    s = " (the gzip data inside is not IDX)";
  return s;
}

// Reads the 4-byte-word header of an IDX file; `words` includes the magic.
template <std::size_t kWords>
std::array<std::uint32_t, kWords> read_header(GzReader& in, std::uint32_t expected_magic, const char* kind) {
  std::array<unsigned char, 4 * kWords> raw{};
  const std::size_t got = in.read(raw.data(), raw.size());
  if (got >= 4 && big_endian(raw.data()) != expected_magic) {
    const std::uint32_t magic = big_endian(raw.data());
    throw DataError(in.path() + ": not an IDX " + kind + " file: bad magic: expected " + hex(expected_magic) +
                    ", found " + hex(magic) + explain_magic(magic, in.plain()));
  }
  if (got < raw.size())
    throw DataError(in.path() + ": truncated header: expected " + std::to_string(raw.size()) + " bytes, found " +
                    std::to_string(got));
  std::array<std::uint32_t, kWords> words{};
  for (std::size_t i = 0; i < kWords; ++i) words[i] = big_endian(raw.data() + 4 * i);
  return words;
}

void check_count(const GzReader& in, std::uint32_t count, const char* what) {
  if (count == 0) throw DataError(in.path() + ": the header announces 0 " + what);
  if (count > kMaxIdxExamples)
    throw DataError(in.path() + ": the header announces " + std::to_string(count) + " " + what +
                    ", more than the limit of " + std::to_string(kMaxIdxExamples) + " (corrupt header?)");
}

// Reads exactly `expected` bytes, growing `out` only as data arrives, then
// makes sure nothing follows. `what` describes the payload for messages.
void read_payload(GzReader& in, std::size_t expected, const std::string& what, std::vector<std::uint8_t>& out) {
  std::size_t got = 0;
  out.resize(std::min(expected, kInitialBufferBytes));
  while (true) {
    got += in.read(out.data() + got, out.size() - got);
    if (got < out.size() || out.size() == expected) break;
    out.resize(std::min(expected, out.size() * 2));
  }
  if (got < expected)
    throw DataError(in.path() + ": truncated: expected " + std::to_string(expected) + " bytes of " + what + ", found " +
                    std::to_string(got));
  unsigned char extra = 0;
  if (in.read(&extra, 1) != 0)
    throw DataError(in.path() + ": trailing data after the " + std::to_string(expected) + " bytes of " + what +
                    " that the header announces");
}

}  // namespace

ImageDataset load_idx_pair(const std::string& images_path, const std::string& labels_path) {
  return load_idx_pair(images_path, labels_path, 10);
}

ImageDataset load_idx_pair(const std::string& images_path, const std::string& labels_path, int num_classes) {
  if (num_classes < 1 || num_classes > 256)
    throw std::invalid_argument("load_idx_pair: num_classes " + std::to_string(num_classes) + " is not in 1..256");
  GzReader images(images_path);
  GzReader labels(labels_path);

  const auto [magic3, count, rows, cols] = read_header<4>(images, kImagesMagic, "images");
  check_count(images, count, "images");
  if (rows < 1 || cols < 1 || rows > kMaxIdxSide || cols > kMaxIdxSide || std::size_t{rows} * cols > kMaxIdxImageBytes)
    throw DataError(images_path + ": wrong dimensions: " + std::to_string(rows) + " x " + std::to_string(cols) +
                    " (rows and cols must be 1.." + std::to_string(kMaxIdxSide) + ", rows x cols at most " +
                    std::to_string(kMaxIdxImageBytes) + ")");
  const auto [magic1, label_count] = read_header<2>(labels, kLabelsMagic, "labels");
  check_count(labels, label_count, "labels");
  // Checked before reading 47 MB of pixels that would be thrown away.
  if (label_count != count)
    throw DataError(images_path + " has " + std::to_string(count) + " images but " + labels_path + " has " +
                    std::to_string(label_count) + " labels: images and labels counts disagree");

  ImageDataset data;
  data.rows = static_cast<int>(rows);
  data.cols = static_cast<int>(cols);
  data.num_classes = num_classes;
  read_payload(
      images, std::size_t{count} * rows * cols,
      "pixels (" + std::to_string(count) + " images of " + std::to_string(rows) + " x " + std::to_string(cols) + ")",
      data.pixels);
  read_payload(labels, count, "labels", data.labels);
  for (std::size_t i = 0; i < data.labels.size(); ++i)
    if (data.labels[i] >= num_classes)
      throw DataError(labels_path + ": label " + std::to_string(data.labels[i]) + " at index " + std::to_string(i) +
                      " is not below num_classes " + std::to_string(num_classes));
  return data;
}

}  // namespace murmur::peer::data
