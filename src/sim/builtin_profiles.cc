// The built-in profiles: ResNet-50 (torchvision) and BERT-Base/-Large
// (HuggingFace BertForPreTraining, as the seed paper's benchmark trains them),
// one LayerProfile per gradient tensor in forward order, named as PyTorch's
// named_parameters() names them. docs/sim-files.md gives the derivation.
//
// Time: each op's forward FLOPs for one sample, backward twice that, scaled
// to the paper's single-GPU samples/s (set_times_from_flops). Memory-bound
// ops (batch norm, ReLU, bias adds, softmax, LayerNorm) are counted as
// kPassFlops per element per pass over their output.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/model_profile.h"

namespace murmur::sim {

namespace {

// One pass over an fp32 element (read 4 bytes, write 4) takes as long as
// about 140 FLOPs of convolution or GEMM on the paper's RTX 2080 Ti: 8 bytes
// at ~0.8 of its 616 GB/s against ~0.65 of its 13.4 TFLOPS. An estimate,
// not a measurement: it only sets how much of the iteration the
// memory-bound ops take (about 30% of ResNet-50's, less of BERT's).
constexpr double kPassFlops = 140;

// Collects tensors and FLOPs in forward order. An op without a tensor of its
// own (ReLU, residual add, pooling, the attention scores, the loss) is
// charged to the tensors of the op before it: in backward it runs before
// them, so they are the first gradients that wait for it.
class ProfileBuilder {
 public:
  // An op owning gradient tensors {name, parameters}; its FLOPs are split
  // evenly between them (batch norm's weight and bias come from one kernel).
  void op(const std::vector<std::pair<std::string, std::int64_t>>& tensors, double flops) {
    last_ = profile_.layers.size();
    for (const auto& [name, parameters] : tensors) {
      profile_.layers.push_back({name, parameters, 0, 0});
      flops_.push_back(flops / static_cast<double>(tensors.size()));
    }
  }
  void charge(double flops) {
    const double share = flops / static_cast<double>(flops_.size() - last_);
    for (std::size_t i = last_; i < flops_.size(); ++i) flops_[i] += share;
  }
  // A weight computing `flops` and its bias added over `outputs` elements.
  void dense(const std::string& prefix, std::int64_t in, std::int64_t out, double flops, double outputs) {
    op({{prefix + ".weight", in * out}}, flops);
    op({{prefix + ".bias", out}}, outputs * kPassFlops);
  }
  // weight and bias of a normalisation over `elements`, `passes` times.
  void norm(const std::string& prefix, std::int64_t channels, double elements, double passes) {
    op({{prefix + ".weight", channels}, {prefix + ".bias", channels}}, elements * passes * kPassFlops);
  }
  ModelProfile finish(const std::string& name, int batch, double samples_per_s) {
    profile_.name = name;
    profile_.batch = batch;
    profile_.single_gpu_samples_per_s = samples_per_s;
    set_times_from_flops(profile_, flops_);
    return std::move(profile_);
  }

 private:
  ModelProfile profile_;
  std::vector<double> flops_;  // forward, per sample, per tensor
  std::size_t last_ = 0;       // first tensor of the latest op
};

// torchvision resnet50 at 224x224: conv1, bn1, bottleneck stages [3,4,6,3]
// (stride on the 3x3 conv, downsample on each stage's first block), fc.
ModelProfile resnet50() {
  ProfileBuilder b;
  auto conv = [&](const std::string& name, int k, std::int64_t in, std::int64_t out, int size) {
    b.op({{name + ".weight", k * k * in * out}}, 2.0 * k * k * in * out * size * size);
  };
  conv("conv1", 7, 3, 64, 112);
  b.norm("bn1", 64, 64.0 * 112 * 112, 2);   // batch norm and ReLU
  b.charge(64.0 * 112 * 112 * kPassFlops);  // max pool to 56x56
  std::int64_t in = 64;
  int size = 56;
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = 64 << stage;
    const std::int64_t out = 4 * width;
    for (int block = 0; block < blocks[stage]; ++block) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      const int out_size = (block == 0 && stage > 0) ? size / 2 : size;
      conv(p + ".conv1", 1, in, width, size);
      b.norm(p + ".bn1", width, double(width) * size * size, 2);
      conv(p + ".conv2", 3, width, width, out_size);
      b.norm(p + ".bn2", width, double(width) * out_size * out_size, 2);
      conv(p + ".conv3", 1, width, out, out_size);
      b.norm(p + ".bn3", out, double(out) * out_size * out_size, 1);
      if (block == 0) {
        conv(p + ".downsample.0", 1, in, out, out_size);
        b.norm(p + ".downsample.1", out, double(out) * out_size * out_size, 1);
      }
      b.charge(2.0 * out * out_size * out_size * kPassFlops);  // residual add and ReLU
      in = out;
      size = out_size;
    }
  }
  b.charge(2048.0 * 7 * 7 * kPassFlops);  // global average pool
  b.dense("fc", 2048, 1000, 2.0 * 2048 * 1000, 1000);
  b.charge(3 * 1000 * kPassFlops);  // softmax cross-entropy
  return b.finish("resnet50", 64, 253.1);
}

struct BertShape {
  const char* name;
  int layers;
  std::int64_t hidden;
  std::int64_t heads;
  std::int64_t intermediate;
  int batch;
  double samples_per_s;
};

// BertForPreTraining at sequence length 64. The benchmark pads the vocabulary
// to a multiple of 8 (30522 to 30528) and predicts every position.
ModelProfile bert(const BertShape& s) {
  constexpr std::int64_t kVocab = 30528, kPositions = 512, kTypes = 2;
  constexpr double kSeq = 64;
  const std::int64_t h = s.hidden;
  const double tokens_h = kSeq * h;  // elements of one hidden-state tensor
  ProfileBuilder b;
  b.op({{"bert.embeddings.word_embeddings.weight", kVocab * h}}, tokens_h * kPassFlops);
  b.op({{"bert.embeddings.position_embeddings.weight", kPositions * h}}, tokens_h * kPassFlops);
  b.op({{"bert.embeddings.token_type_embeddings.weight", kTypes * h}}, tokens_h * kPassFlops);
  b.charge(2 * tokens_h * kPassFlops);  // the two sums
  b.norm("bert.embeddings.LayerNorm", h, tokens_h, 2);
  b.charge(tokens_h * kPassFlops);  // dropout
  const double matmul = 2 * kSeq * h * h;
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    for (const char* qkv : {".attention.self.query", ".attention.self.key", ".attention.self.value"}) {
      b.dense(p + qkv, h, h, matmul, tokens_h);
    }
    // Scores and context (2 * seq * seq * hidden each); scale, mask, softmax
    // and dropout over heads * seq * seq; the context's transpose copy.
    b.charge(4 * kSeq * kSeq * h + (4 * s.heads * kSeq * kSeq + tokens_h) * kPassFlops);
    b.dense(p + ".attention.output.dense", h, h, matmul, tokens_h);
    b.charge(2 * tokens_h * kPassFlops);  // dropout and residual add
    b.norm(p + ".attention.output.LayerNorm", h, tokens_h, 2);
    b.dense(p + ".intermediate.dense", h, s.intermediate, matmul * s.intermediate / h, kSeq * s.intermediate);
    b.charge(kSeq * s.intermediate * kPassFlops);  // GELU
    b.dense(p + ".output.dense", s.intermediate, h, matmul * s.intermediate / h, tokens_h);
    b.charge(2 * tokens_h * kPassFlops);
    b.norm(p + ".output.LayerNorm", h, tokens_h, 2);
  }
  b.dense("bert.pooler.dense", h, h, 2.0 * h * h, h);  // first token only
  b.charge(h * kPassFlops);                            // tanh
  b.dense("cls.predictions.transform.dense", h, h, matmul, tokens_h);
  b.charge(tokens_h * kPassFlops);  // GELU
  b.norm("cls.predictions.transform.LayerNorm", h, tokens_h, 2);
  // The decoder's weight is the word embeddings' (tied, listed once, first);
  // its product is charged to the LayerNorm above, whose gradients are the
  // first that wait for it in backward.
  b.charge(2 * kSeq * h * kVocab);
  b.op({{"cls.predictions.bias", kVocab}}, kSeq * kVocab * kPassFlops);
  b.dense("cls.seq_relationship", h, 2, 2.0 * h * 2, 2);
  b.charge(3 * kSeq * kVocab * kPassFlops);  // masked-LM softmax cross-entropy
  return b.finish(s.name, s.batch, s.samples_per_s);
}

}  // namespace

const std::vector<std::string>& builtin_profile_names() {
  static const std::vector<std::string> names = {"resnet50", "bert-base", "bert-large"};
  return names;
}

ModelProfile builtin_profile(const std::string& name) {
  if (name == "resnet50") return resnet50();
  if (name == "bert-base") return bert({"bert-base", 12, 768, 12, 3072, 64, 212.8});
  if (name == "bert-large") return bert({"bert-large", 24, 1024, 16, 4096, 8, 49});
  std::string known;
  for (const auto& n : builtin_profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw ProfileError("unknown built-in profile '" + name + "' (known: " + known + ")");
}

}  // namespace murmur::sim
