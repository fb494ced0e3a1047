// Checkpoints: round trip, atomic replacement, and every kind of damage
// refused with the path and the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "peer/train/checkpoint.h"
#include "peer/train/metrics_writer.h"

namespace murmur::peer::train {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("murmur-ckpt-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Checkpoint sample() const {
    Checkpoint c;
    c.rank = 3;
    c.world_size = 8;
    c.model = "mlp:16";
    c.epoch = 2;
    c.step = 468;
    for (int i = 0; i < 1000; ++i) {
      c.parameters.push_back(i * 0.5f - 7);
      c.momentum.push_back(-i * 0.25f);
    }
    return c;
  }

  std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  void expect_refused(const std::string& path, const std::string& reason) {
    try {
      load_checkpoint(path);
      ADD_FAILURE() << "accepted a damaged checkpoint; expected '" << reason << "'";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  }

  std::filesystem::path dir_;
};

TEST_F(CheckpointTest, RoundTripsEveryField) {
  const auto path = checkpoint_path(dir_.string(), 3);
  EXPECT_EQ(std::filesystem::path(path).filename(), "rank-3.ckpt");
  save_checkpoint(path, sample());
  const auto c = load_checkpoint(path);
  const auto s = sample();
  EXPECT_EQ(c.rank, s.rank);
  EXPECT_EQ(c.world_size, s.world_size);
  EXPECT_EQ(c.model, s.model);
  EXPECT_EQ(c.epoch, s.epoch);
  EXPECT_EQ(c.step, s.step);
  EXPECT_EQ(c.parameters, s.parameters);
  EXPECT_EQ(c.momentum, s.momentum);
}

TEST_F(CheckpointTest, ReplacesAtomicallyAndLeavesNoTemporaryFile) {
  const auto path = checkpoint_path(dir_.string(), 0);
  auto c = sample();
  save_checkpoint(path, c);
  c.epoch = 3;
  save_checkpoint(path, c);
  EXPECT_EQ(load_checkpoint(path).epoch, 3);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "rank-0.ckpt");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(CheckpointTest, RefusesDamageNamingThePathAndWhat) {
  const auto path = checkpoint_path(dir_.string(), 0);
  save_checkpoint(path, sample());
  const std::string good = read(path);

  write(path, good.substr(0, good.size() / 2));
  expect_refused(path, "checksum mismatch");
  write(path, good.substr(0, 10));
  expect_refused(path, "truncated");
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  write(path, bad_magic);
  expect_refused(path, "bad magic");
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  write(path, flipped);
  expect_refused(path, "checksum mismatch");
  std::filesystem::remove(path);
  expect_refused(path, "cannot open");
}

TEST(MetricsWriter, WritesOneJsonObjectPerLineAndExpandsTheRank) {
  EXPECT_EQ(expand_rank("m/rank-{rank}.jsonl", 7), "m/rank-7.jsonl");
  EXPECT_EQ(expand_rank("{rank}-{rank}", 12), "12-12");
  const auto path =
      (std::filesystem::temp_directory_path() / ("murmur-metrics-" + std::to_string(::getpid())) / "rank-0.jsonl")
          .string();
  {
    MetricsWriter w(path);
    w.write({{"event", "step"}, {"loss", 0.5}});
    w.write({{"event", "epoch"}, {"test_accuracy", 0.875}});
  }
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["test_accuracy"], 0.875);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  EXPECT_THROW(MetricsWriter("/proc/nonexistent/dir/x.jsonl"), std::runtime_error);
}

}  // namespace
}  // namespace murmur::peer::train
