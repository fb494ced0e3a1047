// IDX loading: the real Fashion-MNIST files, and malformed files written to a
// temporary directory, each of which must throw DataError naming the file and
// the fault.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "peer/data/fashion_mnist.h"
#include "peer/data/idx_file.h"

namespace murmur::peer::data {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

void put_u32(Bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}

Bytes images_file(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels,
                  std::uint32_t magic = 0x803) {
  Bytes b;
  put_u32(b, magic);
  put_u32(b, count);
  put_u32(b, rows);
  put_u32(b, cols);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

Bytes labels_file(const Bytes& labels, std::uint32_t count) {
  Bytes b;
  put_u32(b, 0x801);
  put_u32(b, count);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}
Bytes labels_file(const Bytes& labels) { return labels_file(labels, static_cast<std::uint32_t>(labels.size())); }

// Pixels that do not compress to nothing, so a flipped byte lands in real
// deflate data.
Bytes noisy_pixels(std::size_t n) {
  Bytes p(n);
  std::uint32_t x = 12345;
  for (auto& v : p) v = static_cast<std::uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  return p;
}

std::string exception_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DataError thrown";
  return {};
}

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("murmur_data_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_plain(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  std::string write_gz(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    EXPECT_EQ(gzclose(f), Z_OK);
    return path;
  }
  Bytes read_raw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }
  // A valid 3-image 2 x 2 pair.
  std::string good_images() { return write_gz("images.gz", images_file(3, 2, 2, noisy_pixels(12))); }
  std::string good_labels() { return write_gz("labels.gz", labels_file({1, 2, 9})); }

  fs::path dir_;
};

TEST_F(IdxFiles, LoadsGzipAndPlainPairs) {
  const Bytes pixels = noisy_pixels(12);
  for (bool gz : {true, false}) {
    const Bytes img = images_file(3, 2, 2, pixels), lab = labels_file({1, 2, 9});
    const std::string images = gz ? write_gz("i.gz", img) : write_plain("i", img);
    const std::string labels = gz ? write_gz("l.gz", lab) : write_plain("l", lab);
    const ImageDataset d = load_idx_pair(images, labels);
    EXPECT_EQ(d.size(), 3u);
    EXPECT_EQ(d.rows, 2);
    EXPECT_EQ(d.cols, 2);
    EXPECT_EQ(d.features(), 4u);
    EXPECT_EQ(d.num_classes, 10);
    EXPECT_EQ(d.pixels, pixels);
    EXPECT_EQ(d.labels, (Bytes{1, 2, 9}));
  }
}

TEST_F(IdxFiles, TruncatedPixels) {
  const std::string images = write_gz("images.gz", images_file(3, 28, 28, noisy_pixels(100)));
  const std::string msg = exception_message([&] { load_idx_pair(images, good_labels()); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated: expected 2352 bytes of pixels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 100"), std::string::npos) << msg;
}

TEST_F(IdxFiles, TruncatedLabels) {
  const std::string labels = write_gz("labels.gz", labels_file({1}, 3));
  const std::string msg = exception_message([&] { load_idx_pair(good_images(), labels); });
  EXPECT_NE(msg.find(labels), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 3 bytes of labels, found 1"), std::string::npos) << msg;
}

TEST_F(IdxFiles, TruncatedHeader) {
  const std::string images = write_gz("images.gz", Bytes{0, 0, 8, 3, 0, 0});
  const std::string msg = exception_message([&] { load_idx_pair(images, good_labels()); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated header: expected 16 bytes, found 6"), std::string::npos) << msg;
}

TEST_F(IdxFiles, TrailingBytes) {
  Bytes img = images_file(3, 2, 2, noisy_pixels(12));
  img.push_back(7);
  const std::string images = write_gz("images.gz", img);
  const std::string msg = exception_message([&] { load_idx_pair(images, good_labels()); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("trailing data"), std::string::npos) << msg;
}

TEST_F(IdxFiles, WrongMagicShowsExpectedAndFound) {
  // The two paths swapped.
  const std::string images = good_images(), labels = good_labels();
  const std::string msg = exception_message([&] { load_idx_pair(labels, images); });
  EXPECT_NE(msg.find(labels), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad magic: expected 0x00000803, found 0x00000801"), std::string::npos) << msg;
  EXPECT_NE(msg.find("swapped"), std::string::npos) << msg;
}

TEST_F(IdxFiles, GarbageThatIsNotGzip) {
  const std::string path =
      write_plain("garbage.gz", Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!', '!', '!', '!'});
  const std::string msg = exception_message([&] { load_idx_pair(path, good_labels()); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad magic: expected 0x00000803, found 0x68656c6c"), std::string::npos) << msg;
  EXPECT_NE(msg.find("neither gzip-compressed nor IDX"), std::string::npos) << msg;
}

TEST_F(IdxFiles, CorruptGzipStreamIsReported) {
  const std::string images = write_gz("images.gz", images_file(100, 28, 28, noisy_pixels(78400)));
  Bytes raw = read_raw(images);
  ASSERT_GT(raw.size(), 1000u);
  for (std::size_t i = raw.size() / 2; i < raw.size() / 2 + 16; ++i) raw[i] ^= 0x5a;
  write_plain("images.gz", raw);
  const std::string labels = write_gz("labels.gz", labels_file(Bytes(100, 1)));
  const std::string msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupt gzip stream"), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind(images), 0u) << "the path once, at the start: " << msg;
}

TEST_F(IdxFiles, CutOffGzipStreamIsReported) {
  const std::string images = write_gz("images.gz", images_file(100, 28, 28, noisy_pixels(78400)));
  Bytes raw = read_raw(images);
  raw.resize(raw.size() / 2);
  write_plain("images.gz", raw);
  const std::string labels = write_gz("labels.gz", labels_file(Bytes(100, 1)));
  const std::string msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupt gzip stream: the compressed data ends early"), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind(images), 0u) << "the path once, at the start: " << msg;
}

TEST_F(IdxFiles, CountsDisagree) {
  const std::string images = good_images();
  const std::string labels = write_gz("labels.gz", labels_file({1, 2, 3, 4}));
  const std::string msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find(images + " has 3 images"), std::string::npos) << msg;
  EXPECT_NE(msg.find(labels + " has 4 labels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("disagree"), std::string::npos) << msg;
}

TEST_F(IdxFiles, LabelOutOfRangeGivesItsIndex) {
  const std::string labels = write_gz("labels.gz", labels_file({1, 12, 3}));
  const std::string msg = exception_message([&] { load_idx_pair(good_images(), labels); });
  EXPECT_NE(msg.find(labels), std::string::npos) << msg;
  EXPECT_NE(msg.find("label 12 at index 1 is not below num_classes 10"), std::string::npos) << msg;
  // With more classes the same file is fine.
  EXPECT_EQ(load_idx_pair(good_images(), labels, 13).labels[1], 12);
}

TEST_F(IdxFiles, MissingFile) {
  const std::string missing = (dir_ / "nope.gz").string();
  std::string msg = exception_message([&] { load_idx_pair(missing, good_labels()); });
  EXPECT_NE(msg.find(missing + ": no such file"), std::string::npos) << msg;
  msg = exception_message([&] { load_idx_pair(good_images(), missing); });
  EXPECT_NE(msg.find(missing + ": no such file"), std::string::npos) << msg;
}

// A 16-byte header claiming 99,999,999 images of 28 x 28 (78 GB) must fail
// on the missing data, not on an allocation; absurd counts and sizes fail on
// the header alone.
TEST_F(IdxFiles, HostileHeadersDoNotAllocateWhatTheyClaim) {
  const std::string labels = good_labels();
  std::string images = write_gz("huge.gz", images_file(99'999'999, 28, 28, {}));
  std::string msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find("disagree"), std::string::npos) << msg;
  const std::string big_labels = write_gz("biglabels.gz", labels_file({}, 99'999'999));
  msg = exception_message([&] { load_idx_pair(images, big_labels); });
  EXPECT_NE(msg.find(images + ": truncated: expected 78399999216 bytes of pixels"), std::string::npos) << msg;

  images = write_gz("count.gz", images_file(0xffffffff, 28, 28, {}));
  msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find(images + ": the header announces 4294967295 images, more than the limit"), std::string::npos)
      << msg;

  images = write_gz("dims.gz", images_file(3, 65535, 65535, {}));
  msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find(images + ": wrong dimensions: 65535 x 65535"), std::string::npos) << msg;

  images = write_gz("zero.gz", images_file(3, 0, 28, {}));
  msg = exception_message([&] { load_idx_pair(images, labels); });
  EXPECT_NE(msg.find(images + ": wrong dimensions: 0 x 28"), std::string::npos) << msg;
}

TEST_F(IdxFiles, FashionMnistDirectoryErrorsCarryTheHint) {
  const std::string missing_dir = (dir_ / "absent").string();
  std::string msg = exception_message([&] { load_fashion_mnist(missing_dir); });
  EXPECT_NE(msg.find(missing_dir + ": missing Fashion-MNIST directory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MURMUR_DATA_DIR"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--data-dir"), std::string::npos) << msg;

  // Train files present, test files absent.
  write_gz("train-images-idx3-ubyte.gz", images_file(3, 28, 28, noisy_pixels(3 * 784)));
  write_gz("train-labels-idx1-ubyte.gz", labels_file({1, 2, 3}));
  const std::string t10k = (dir_ / "t10k-images-idx3-ubyte.gz").string();
  msg = exception_message([&] { load_fashion_mnist(dir_.string()); });
  EXPECT_NE(msg.find(t10k + ": missing Fashion-MNIST file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;

  // All four present, but the images are not 28 x 28.
  write_gz("t10k-images-idx3-ubyte.gz", images_file(3, 2, 2, noisy_pixels(12)));
  write_gz("t10k-labels-idx1-ubyte.gz", labels_file({1, 2, 3}));
  msg = exception_message([&] { load_fashion_mnist(dir_.string()); });
  EXPECT_NE(msg.find(t10k + ": wrong dimensions: images are 2 x 2"), std::string::npos) << msg;
}

TEST(FashionMnistDir, EnvironmentOverridesTheDebianPath) {
  const char* saved = std::getenv("MURMUR_DATA_DIR");
  const std::string restore = saved ? saved : "";
  ::unsetenv("MURMUR_DATA_DIR");
  EXPECT_EQ(default_fashion_mnist_dir(), "/usr/share/datasets/fashion-mnist");
  ::setenv("MURMUR_DATA_DIR", "/data/fm", 1);
  EXPECT_EQ(default_fashion_mnist_dir(), "/data/fm");
  if (saved)
    ::setenv("MURMUR_DATA_DIR", restore.c_str(), 1);
  else
    ::unsetenv("MURMUR_DATA_DIR");
}

// The real dataset, loaded once for the suite.
class RealFashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (fs::exists(kDebianFashionMnistDir)) set_ = new FashionMnist(load_fashion_mnist(kDebianFashionMnistDir));
  }
  static void TearDownTestSuite() {
    delete set_;
    set_ = nullptr;
  }
  void SetUp() override {
    if (set_ == nullptr)
      GTEST_SKIP() << kDebianFashionMnistDir << " is absent: install Debian's dataset-fashion-mnist package";
  }
  static FashionMnist* set_;
};
FashionMnist* RealFashionMnist::set_ = nullptr;

std::array<int, 10> histogram(const ImageDataset& d) {
  std::array<int, 10> h{};
  for (std::uint8_t l : d.labels) ++h.at(l);
  return h;
}

TEST_F(RealFashionMnist, TrainAndTestShapes) {
  for (const ImageDataset* d : {&set_->train, &set_->test}) {
    EXPECT_EQ(d->rows, 28);
    EXPECT_EQ(d->cols, 28);
    EXPECT_EQ(d->features(), 784u);
    EXPECT_EQ(d->num_classes, 10);
    EXPECT_EQ(d->pixels.size(), d->size() * 784);
  }
  EXPECT_EQ(set_->train.size(), 60000u);
  EXPECT_EQ(set_->test.size(), 10000u);
}

TEST_F(RealFashionMnist, BalancedClasses) {
  std::array<int, 10> train{}, test{};
  train.fill(6000);
  test.fill(1000);
  EXPECT_EQ(histogram(set_->train), train);
  EXPECT_EQ(histogram(set_->test), test);
}

TEST_F(RealFashionMnist, KnownFirstExamples) {
  // Both sets start with an ankle boot (class 9); images have a black border
  // and use the whole 0..255 range.
  EXPECT_EQ(set_->train.labels[0], 9);
  EXPECT_EQ(set_->test.labels[0], 9);
  EXPECT_EQ(set_->train.pixels[0], 0);
  const auto [lo, hi] = std::minmax_element(set_->train.pixels.begin(), set_->train.pixels.end());
  EXPECT_EQ(*lo, 0);
  EXPECT_EQ(*hi, 255);
}

// The normalization constants of batcher.h are this dataset's statistics.
TEST_F(RealFashionMnist, PixelMeanAndStdMatchTheNormalization) {
  double sum = 0, sum_sq = 0;
  for (std::uint8_t p : set_->train.pixels) {
    const double v = p / 255.0;
    sum += v;
    sum_sq += v * v;
  }
  const double n = static_cast<double>(set_->train.pixels.size());
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.2860, 5e-4);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 0.3530, 5e-4);
}

}  // namespace
}  // namespace murmur::peer::data
