#include "peer/data/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "peer/data/idx_file.h"

namespace murmur::peer::data {
namespace {

const char* const kHint =
    " (Debian's dataset-fashion-mnist package installs the files in "
    "/usr/share/datasets/fashion-mnist; elsewhere set MURMUR_DATA_DIR or --data-dir "
    "to a directory holding them)";

std::string require_file(const std::filesystem::path& dir, const std::string& name) {
  const std::filesystem::path path = dir / name;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw DataError(path.string() + ": missing Fashion-MNIST file" + kHint);
  return path.string();
}

ImageDataset load_split(const std::filesystem::path& dir, const char* prefix) {
  const std::string images = require_file(dir, std::string(prefix) + "-images-idx3-ubyte.gz");
  const std::string labels = require_file(dir, std::string(prefix) + "-labels-idx1-ubyte.gz");
  ImageDataset set = load_idx_pair(images, labels, kFashionMnistClasses);
  if (set.rows != kFashionMnistSide || set.cols != kFashionMnistSide)
    throw DataError(images + ": wrong dimensions: images are " + std::to_string(set.rows) + " x " +
                    std::to_string(set.cols) + ", Fashion-MNIST's are 28 x 28");
  return set;
}

}  // namespace

std::string default_fashion_mnist_dir() {
  const char* env = std::getenv("MURMUR_DATA_DIR");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDebianFashionMnistDir);
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(status)) throw DataError(dir + ": missing Fashion-MNIST directory" + kHint);
  if (!std::filesystem::is_directory(status))
    throw DataError(dir + ": not a directory; expected the Fashion-MNIST directory" + kHint);
  FashionMnist set;
  set.train = load_split(dir, "train");
  set.test = load_split(dir, "t10k");
  return set;
}

}  // namespace murmur::peer::data
