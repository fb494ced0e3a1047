// Built-in profiles (exact parameter totals and tensor counts of the public
// architectures, times that add up to the paper's single-GPU throughput) and
// the profile file parser, down to the path:line of every refusal.
#include "sim/model_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/support/scratch_dir.h"

namespace murmur::sim {
namespace {

namespace fs = std::filesystem;

// examples/sim in the source tree (MURMUR_SOURCE_DIR, not __FILE__, which is
// relative when ccache compiles with relative paths), from any build directory.
const fs::path kExamples = fs::path(MURMUR_SOURCE_DIR) / "examples" / "sim";

std::int64_t parameters_with_prefix(const ModelProfile& p, const std::string& prefix) {
  std::int64_t total = 0;
  for (const auto& layer : p.layers) {
    if (layer.name.rfind(prefix, 0) == 0) total += layer.parameters;
  }
  return total;
}

TEST(BuiltinProfile, ResNet50HasTorchvisionTensors) {
  const ModelProfile p = builtin_profile("resnet50");
  EXPECT_EQ(p.parameters(), 25'557'032);
  EXPECT_EQ(p.layers.size(), 161u);
  EXPECT_EQ(p.layers.front().name, "conv1.weight");
  EXPECT_EQ(p.layers.front().parameters, 7 * 7 * 3 * 64);
  EXPECT_EQ(p.layers.back().name, "fc.bias");
  EXPECT_EQ(p.batch, 64);
  EXPECT_DOUBLE_EQ(p.single_gpu_samples_per_s, 253.1);
  EXPECT_DOUBLE_EQ(p.gradient_bytes(), 25'557'032.0 * 4);
}

struct BertCase {
  std::string name;
  std::int64_t parameters;
  int encoder_layers;
  std::int64_t hidden;
  std::int64_t bert_model_parameters;  // HuggingFace BertModel at vocabulary 30522
  int batch;
  double samples_per_s;
};

// BertForPreTraining with the benchmark's vocabulary padded to 30528: the
// "bert." part is HuggingFace's BertModel plus 6 padded embedding rows, then
// 7 head tensors (cls.predictions.bias, transform dense and LayerNorm,
// seq_relationship).
class BertProfile : public ::testing::TestWithParam<BertCase> {};

TEST_P(BertProfile, HasPretrainingTensors) {
  const BertCase& c = GetParam();
  const ModelProfile p = builtin_profile(c.name);
  EXPECT_EQ(p.parameters(), c.parameters);
  EXPECT_EQ(p.layers.size(), 5u + 16 * c.encoder_layers + 2 + 7);
  EXPECT_EQ(parameters_with_prefix(p, "bert.") - 6 * c.hidden, c.bert_model_parameters);
  EXPECT_EQ(p.layers.front().parameters, 30528 * c.hidden);
  EXPECT_EQ(p.batch, c.batch);
  EXPECT_DOUBLE_EQ(p.single_gpu_samples_per_s, c.samples_per_s);
}

INSTANTIATE_TEST_SUITE_P(Builtins, BertProfile,
                         ::testing::Values(BertCase{"bert-base", 110'111'042, 12, 768, 109'482'240, 64, 212.8},
                                           BertCase{"bert-large", 336'232'258, 24, 1024, 335'141'888, 8, 49}));

TEST(BuiltinProfile, TimesAddUpToSingleGpuThroughput) {
  for (const auto& name : builtin_profile_names()) {
    SCOPED_TRACE(name);
    const ModelProfile p = builtin_profile(name);
    const double expected = p.batch / p.single_gpu_samples_per_s;
    EXPECT_NEAR(p.iteration_s(), expected, 1e-9 * expected);
    std::set<std::string> names;
    for (const auto& layer : p.layers) {
      EXPECT_GT(layer.parameters, 0) << layer.name;
      EXPECT_GT(layer.forward_s, 0) << layer.name;
      EXPECT_NEAR(layer.backward_s, 2 * layer.forward_s, 1e-12) << layer.name;
      EXPECT_TRUE(names.insert(layer.name).second) << layer.name << " twice";
    }
  }
}

TEST(BuiltinProfile, UnknownNameListsTheBuiltins) {
  try {
    builtin_profile("vgg16");
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    EXPECT_STREQ(e.what(), "unknown built-in profile 'vgg16' (known: resnet50, bert-base, bert-large)");
  }
}

// The backward pass runs from the last tensor to the first; the share of it
// done when a tensor's gradient is ready.
std::vector<double> ready_fraction(const ModelProfile& p) {
  double total = 0;
  for (const auto& layer : p.layers) total += layer.backward_s;
  std::vector<double> ready(p.layers.size());
  double t = 0;
  for (std::size_t i = p.layers.size(); i-- > 0;) ready[i] = (t += p.layers[i].backward_s) / total;
  return ready;
}

std::size_t index_of(const ModelProfile& p, const std::string& name) {
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].name == name) return i;
  }
  ADD_FAILURE() << "no layer " << name;
  return 0;
}

// ResNet-50's gradients: stage 4's big tensors are all ready early in the
// backward pass, the high-resolution stages 1 and 2 take over half of it.
TEST(BuiltinProfile, ResNet50BackwardIsHeavyAtHighResolution) {
  const ModelProfile p = builtin_profile("resnet50");
  const auto ready = ready_fraction(p);
  for (std::size_t i = 1; i < ready.size(); ++i) EXPECT_GT(ready[i - 1], ready[i]) << p.layers[i].name;
  EXPECT_LT(ready[index_of(p, "fc.weight")], 0.01);
  EXPECT_LT(ready[index_of(p, "layer4.0.conv1.weight")], 0.2);
  EXPECT_GT(1 - ready[index_of(p, "layer3.0.conv1.weight")], 0.5);
  EXPECT_DOUBLE_EQ(ready[0], 1.0);
  // Stage 4 holds 15 M of the 25.6 M parameters.
  EXPECT_EQ(parameters_with_prefix(p, "layer4."), 14'964'736);
}

// BERT's encoder layers are alike: each takes the same time, and the
// masked-LM decoder (about a fifth of BERT-Base's compute) runs before any
// encoder gradient is ready.
TEST(BuiltinProfile, BertEncoderLayersTakeEqualTime) {
  const ModelProfile p = builtin_profile("bert-base");
  auto layer_time = [&](int l) {
    double t = 0;
    for (const auto& layer : p.layers) {
      if (layer.name.rfind("bert.encoder.layer." + std::to_string(l) + ".", 0) == 0) {
        t += layer.forward_s + layer.backward_s;
      }
    }
    return t;
  };
  for (int l = 1; l < 12; ++l) EXPECT_NEAR(layer_time(l), layer_time(0), 1e-12) << l;
  const auto ready = ready_fraction(p);
  const double before_encoder = ready[index_of(p, "bert.encoder.layer.11.output.LayerNorm.bias")];
  EXPECT_GT(before_encoder, 0.15);
  EXPECT_LT(before_encoder, 0.3);
  EXPECT_NEAR(12 * layer_time(0) / p.iteration_s(), 0.75, 0.08);
}

TEST(ProfileFile, ExampleLoads) {
  const ModelProfile p = load_profile_file((kExamples / "small-cnn.profile").string());
  EXPECT_EQ(p.name, "small-cnn");
  EXPECT_EQ(p.batch, 128);
  EXPECT_DOUBLE_EQ(p.single_gpu_samples_per_s, 9000);
  ASSERT_EQ(p.layers.size(), 8u);
  EXPECT_EQ(p.layers[2].name, "conv2.weight");
  EXPECT_EQ(p.parameters(), 864 + 32 + 18432 + 64 + 73728 + 128 + 20480 + 10);
  EXPECT_NEAR(p.iteration_s(), 128.0 / 9000, 1e-9 * 128 / 9000);
  // Shares follow flops=: conv2.weight and conv3.weight cost the same.
  EXPECT_NEAR(p.layers[2].forward_s, p.layers[4].forward_s, 1e-15);
  EXPECT_NEAR(p.layers[2].backward_s, 2 * p.layers[2].forward_s, 1e-15);
}

// A file holding `text` in this process's scratch directory.
std::string temp_file(const std::string& text) {
  const std::string path = murmur::testing::scratch_path("test.profile").string();
  std::ofstream(path) << text;
  return path;
}

TEST(ProfileFile, MillisecondsAreTakenAsGiven) {
  const ModelProfile p =
      load_profile_file(temp_file("# measured\nmodel m\nbatch 8\n\n"
                                  "layer a params=10 forward-ms=1 backward-ms=2\n"
                                  "layer b params=20 forward-ms=0.5 backward-ms=1.5  # last\n"));
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_DOUBLE_EQ(p.layers[1].forward_s, 0.5e-3);
  EXPECT_DOUBLE_EQ(p.layers[1].backward_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(p.single_gpu_samples_per_s, 8 / 5e-3);
  EXPECT_EQ(p.bytes_per_parameter, 4);
}

TEST(ProfileFile, MillisecondsAreScaledToAGivenThroughput) {
  const ModelProfile p =
      load_profile_file(temp_file("model m\nbatch 8\nsamples-per-s 800\nbytes-per-parameter 2\n"
                                  "layer a params=10 forward-ms=1 backward-ms=3\n"));
  EXPECT_DOUBLE_EQ(p.layers[0].forward_s, 2.5e-3);
  EXPECT_DOUBLE_EQ(p.layers[0].backward_s, 7.5e-3);
  EXPECT_DOUBLE_EQ(p.gradient_bytes(), 20);
}

// A malformed file, the line its error names (the last line for something
// missing) and the reason after "path:line: ".
struct BadProfile {
  std::string text;
  int line;
  std::string reason;
};

const std::string kHead = "model m\nbatch 8\nsamples-per-s 100\n";  // lines 1 to 3
const std::string kUsage = "expected 'layer NAME params=N flops=F' or 'layer NAME params=N forward-ms=A backward-ms=B'";

const BadProfile kBadProfiles[] = {
    {kHead + "layers a params=1 flops=1\n", 4,
     "unknown keyword 'layers'; expected model, batch, samples-per-s, bytes-per-parameter or "
     "layer"},
    {"model m\nbatch\n", 2, "missing value; expected 'batch N'"},
    {"model m\nbatch 8 16\n", 2, "'16' after the value; expected 'batch N'"},
    {"batch 12abc\n", 1, "batch '12abc' is not a whole number from 1 to 1048576"},
    {"batch 0\n", 1, "batch '0' is not a whole number from 1 to 1048576"},
    {"bytes-per-parameter 32\n", 1, "bytes-per-parameter '32' is not a whole number from 1 to 16"},
    {"samples-per-s nan\n", 1, "samples-per-s 'nan' is not a number; expected e.g. 120.5"},
    {"samples-per-s inf\n", 1, "samples-per-s 'inf' is not a number; expected e.g. 120.5"},
    {"samples-per-s -3\n", 1, "samples-per-s is -3; it must be above 0"},
    {"model a\n\nmodel b\n", 3, "'model' given twice (first on line 1)"},
    {"batch 8\nbatch 8\n", 2, "'batch' given twice (first on line 1)"},
    {kHead + "layer\n", 4, "missing layer name; " + kUsage},
    {kHead + "layer params=1 flops=1\n", 4, "missing layer name; " + kUsage},
    {kHead + "layer a params=1 flops\n", 4, "'flops' is not KEY=VALUE; " + kUsage},
    {kHead + "layer a params= flops=1\n", 4, "missing value after 'params='"},
    {kHead + "layer a params=1 flops=1 size=3\n", 4,
     "unknown key 'size=' in layer 'a'; known: params=, flops=, forward-ms=, backward-ms="},
    {kHead + "layer a params=1 flops=2 flops=3\n", 4, "'flops=' given twice in layer 'a'"},
    {kHead + "layer a params=1.5 flops=1\n", 4, "params '1.5' is not a whole number from 1 to 1099511627776"},
    {kHead + "layer a params=3 flops=0\n", 4, "flops is 0; it must be above 0"},
    {kHead + "layer a params=3 flops=1e3x\n", 4, "flops '1e3x' is not a number; expected e.g. 120.5"},
    {kHead + "layer a params=3 forward-ms=-1 backward-ms=1\n", 4, "forward-ms is -1; it must be above 0"},
    {kHead + "layer a flops=1\n", 4, "layer 'a' has no params=N; " + kUsage},
    {kHead + "layer a params=1 flops=1\n# note\nlayer a params=2 flops=1\n", 6,
     "layer 'a' given twice (first on line 4)"},
    {kHead + "layer a params=1\n", 4, "layer 'a' has no time; give flops=F or forward-ms=A backward-ms=B"},
    {kHead + "layer a params=1 forward-ms=1\n", 4, "layer 'a' gives forward-ms= without backward-ms=; give both"},
    {kHead + "layer a params=1 flops=1 backward-ms=1\n", 4,
     "layer 'a' gives flops= and forward-ms=/backward-ms=; give one"},
    {kHead + "layer a params=1 flops=1\nlayer b params=1 forward-ms=1 backward-ms=2\n", 5,
     "layer 'b' gives forward-ms=/backward-ms= but the layer on line 4 gives flops=; "
     "a profile uses one kind for all its layers"},
    {"batch 8\nlayer a params=1 flops=1\n", 2, "no 'model NAME' line; name the model"},
    {"model m\nlayer a params=1 flops=1\n\n", 3, "no 'batch N' line; give the per-GPU batch the times are for"},
    {kHead, 3, "no 'layer' lines; list the gradient tensors in forward order"},
    {"model m\nbatch 8\nlayer a params=1 flops=1\n", 3,
     "layers give flops= but there is no 'samples-per-s X' line to turn FLOPs into seconds"},
    {"", 0, "no 'model NAME' line; name the model"},
};

class ProfileFileRefuses : public ::testing::TestWithParam<BadProfile> {};

TEST_P(ProfileFileRefuses, AtTheLineAtFault) {
  const std::string path = temp_file(GetParam().text);
  std::string message = "no error";
  try {
    load_profile_file(path);
  } catch (const ProfileError& e) {
    message = e.what();
  }
  // Line 0 is the file as a whole (an empty file): "path: reason".
  const std::string where = GetParam().line == 0 ? path : path + ":" + std::to_string(GetParam().line);
  EXPECT_EQ(message, where + ": " + GetParam().reason);
}

INSTANTIATE_TEST_SUITE_P(BadFiles, ProfileFileRefuses, ::testing::ValuesIn(kBadProfiles));

TEST(ProfileFileErrors, UnreadableFileNamesPathAndReason) {
  const std::string missing = murmur::testing::scratch_path("no-such.profile").string();
  try {
    load_profile_file(missing);
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read profile file: No such file or directory");
  }
  EXPECT_THROW(load_profile_file(::testing::TempDir()), ProfileError);
}

TEST(ResolveProfile, BuiltinNameThenFile) {
  EXPECT_EQ(resolve_profile("bert-large").name, "bert-large");
  EXPECT_EQ(resolve_profile((kExamples / "small-cnn.profile").string()).name, "small-cnn");
  try {
    resolve_profile("resnet-50");
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown profile 'resnet-50': not a built-in (resnet50, bert-base, bert-large) "
                 "and no such file");
  }
}

}  // namespace
}  // namespace murmur::sim
