// Checkpoint format version 2: every section round trips, version 1 files
// still load, every truncation and corruption of a version 2 file is
// refused with the path and a reason (also those the CRC does not catch:
// section lengths that do not fit, with a valid CRC), and the resume plan
// refuses another algorithm and resumes onto another view.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "peer/train/checkpoint.h"
#include "peer/train/resume_plan.h"

namespace murmur::peer::train {
namespace {

class CheckpointStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("murmur-ckpt2-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = checkpoint_path(dir_.string(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static Checkpoint sample() {
    Checkpoint c;
    c.rank = 1;
    c.world_size = 4;
    c.model = "mlp:16";
    c.epoch = 1;
    c.step = 117;
    for (int i = 0; i < 40; ++i) {
      c.parameters.push_back(i * 0.5f);
      c.momentum.push_back(-i * 0.25f);
    }
    c.algorithm = "choco";
    c.algorithm_state = std::string("MURMURST\x01\0\0\0choco-state", 23);
    c.schedule_state = "schedule-bytes";
    c.data_pass = 3;
    c.data_position = 96;
    c.view_generation = 2;
    c.view_members = {0, 1, 3};
    return c;
  }
  std::string read() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const std::string& bytes) const { std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes; }
  // The body with a fresh CRC: damage the checksum does not catch.
  void write_with_crc(std::string body) const {
    const auto crc =
        static_cast<std::uint32_t>(::crc32_z(0L, reinterpret_cast<const Bytef*>(body.data()), body.size()));
    for (int k = 0; k < 4; ++k) body.push_back(static_cast<char>(crc >> (8 * k)));
    write(body);
  }
  std::string refusal() const {
    try {
      load_checkpoint(path_);
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
      return e.what();
    }
    return {};
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(CheckpointStateTest, RoundTripsEverySection) {
  save_checkpoint(path_, sample());
  const auto c = load_checkpoint(path_);
  const auto s = sample();
  EXPECT_EQ(c.version, 2);
  EXPECT_EQ(c.parameters, s.parameters);
  EXPECT_EQ(c.momentum, s.momentum);
  EXPECT_EQ(c.algorithm, s.algorithm);
  EXPECT_EQ(c.algorithm_state, s.algorithm_state);
  EXPECT_EQ(c.schedule_state, s.schedule_state);
  EXPECT_EQ(c.data_pass, s.data_pass);
  EXPECT_EQ(c.data_position, s.data_position);
  EXPECT_EQ(c.view_generation, s.view_generation);
  EXPECT_EQ(c.view_members, s.view_members);
  EXPECT_EQ(c.world_size, s.world_size);
  // Empty states (dpsgd without a scheduler) round trip too.
  auto empty = sample();
  empty.algorithm_state.clear();
  empty.schedule_state.clear();
  empty.momentum.clear();
  save_checkpoint(path_, empty);
  EXPECT_TRUE(load_checkpoint(path_).algorithm_state.empty());
}

TEST_F(CheckpointStateTest, LoadsAVersion1File) {
  const auto s = sample();
  const std::string header = nlohmann::json{
      {"rank", s.rank},   {"world_size", s.world_size},
      {"model", s.model}, {"parameters", s.parameters.size()},
      {"epoch", s.epoch}, {"step", s.step},
      {"momentum", true}}.dump();
  std::string body = "MURMURCK";
  auto u32 = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) body.push_back(static_cast<char>(v >> (8 * k)));
  };
  u32(1);
  u32(static_cast<std::uint32_t>(header.size()));
  body += header;
  body.append(reinterpret_cast<const char*>(s.parameters.data()), s.parameters.size() * 4);
  body.append(reinterpret_cast<const char*>(s.momentum.data()), s.momentum.size() * 4);
  write_with_crc(body);
  const auto c = load_checkpoint(path_);
  EXPECT_EQ(c.version, 1);
  EXPECT_EQ(c.parameters, s.parameters);
  EXPECT_EQ(c.momentum, s.momentum);
  EXPECT_TRUE(c.algorithm.empty());
  EXPECT_TRUE(c.algorithm_state.empty());
  EXPECT_TRUE(c.view_members.empty());
  const auto plan = plan_resume(c, path_, {1, 4, "mlp:16", 40, "choco", 0, {0, 1, 2, 3}});
  EXPECT_FALSE(plan.algorithm_state);
  EXPECT_NE(plan.note.find("algorithm's state restarts"), std::string::npos) << plan.note;
}

TEST_F(CheckpointStateTest, RefusesEveryTruncationAndEveryFlippedByte) {
  save_checkpoint(path_, sample());
  const std::string good = read();
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    write(good.substr(0, cut));
    EXPECT_FALSE(refusal().empty()) << "accepted the first " << cut << " of " << good.size() << " bytes";
  }
  for (std::size_t at = 0; at < good.size(); ++at) {
    std::string flipped = good;
    flipped[at] ^= 0x10;
    write(flipped);
    EXPECT_FALSE(refusal().empty()) << "accepted a flipped byte at " << at;
  }
}

TEST_F(CheckpointStateTest, RefusesSectionsThatDoNotFitEvenWithAValidChecksum) {
  save_checkpoint(path_, sample());
  const std::string good = read();
  const std::string body = good.substr(0, good.size() - 4);
  const auto s = sample();
  // The scheduler section's length is the last u64 before its bytes.
  const std::size_t schedule_length = body.size() - s.schedule_state.size() - 8;
  std::string too_long = body;
  too_long[schedule_length] = static_cast<char>(s.schedule_state.size() + 1);
  write_with_crc(too_long);
  EXPECT_NE(refusal().find("scheduler state section claims"), std::string::npos) << refusal();
  write_with_crc(body + "extra");
  EXPECT_NE(refusal().find("after the last section"), std::string::npos) << refusal();
  write_with_crc(body.substr(0, body.size() - s.schedule_state.size() - 3));
  EXPECT_NE(refusal().find("truncated before the scheduler state"), std::string::npos) << refusal();
  std::string version = body;
  version[8] = 9;
  write_with_crc(version);
  EXPECT_NE(refusal().find("version 9"), std::string::npos) << refusal();
}

TEST_F(CheckpointStateTest, PlanRefusesAnotherAlgorithmAndResumesOntoAnotherView) {
  const auto c = sample();
  try {
    plan_resume(c, path_, {1, 4, "mlp:16", 40, "dpsgd", 2, {0, 1, 3}});
    FAIL() << "resumed choco's state into dpsgd";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("algorithm choco, this run is dpsgd"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_resume(c, path_, {1, 3, "mlp:16", 40, "choco", 0, {0, 1, 2}}), CheckpointError);
  const auto same = plan_resume(c, path_, {1, 4, "mlp:16", 40, "choco", 0, {0, 1, 3}});
  EXPECT_TRUE(same.algorithm_state && same.schedule_state && !same.other_view);
  EXPECT_NE(same.note.find("algorithm state and scheduler state restored"), std::string::npos) << same.note;
  const auto other = plan_resume(c, path_, {1, 4, "mlp:16", 40, "choco", 0, {0, 1, 2, 3}});
  EXPECT_TRUE(other.algorithm_state && other.other_view && !other.schedule_state);
  EXPECT_NE(other.note.find("resuming onto view 0 (members {0,1,2,3})"), std::string::npos) << other.note;
}

}  // namespace
}  // namespace murmur::peer::train
