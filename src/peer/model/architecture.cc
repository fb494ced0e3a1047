// Model names and the layer stacks they stand for.
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer/model/sequential.h"

namespace murmur::peer::model {
namespace detail {
namespace {

constexpr const char* kAccepted = "accepted: mlp, mlp:H1,H2,... (hidden sizes), cnn, logreg";
constexpr int kMaxHidden = 1 << 16;

struct Architecture {
  bool cnn = false;
  std::vector<int> hidden;  // MLP hidden sizes (none: logistic regression)
};

[[noreturn]] void bad_spec(const std::string& name, const std::string& why) {
  throw std::invalid_argument("model spec '" + name + "': " + why + "; " + kAccepted);
}

Architecture parse_architecture(const std::string& name) {
  if (name == "cnn") return {true, {}};
  if (name == "logreg") return {false, {}};
  if (name == "mlp") return {false, {256, 128}};
  const std::string prefix = "mlp:";
  if (name.compare(0, prefix.size(), prefix) != 0) bad_spec(name, "unknown model");
  Architecture a;
  std::size_t pos = prefix.size();
  while (true) {
    const std::size_t comma = name.find(',', pos);
    const std::string token = name.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int h = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), h);
    if (token.empty() || ec != std::errc() || end != token.data() + token.size() || h <= 0 || h > kMaxHidden)
      bad_spec(name, "hidden size '" + token + "' is not an integer in [1, " + std::to_string(kMaxHidden) + "]");
    a.hidden.push_back(h);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return a;
}

}  // namespace

std::vector<std::unique_ptr<Layer>> build_layers(const ModelSpec& spec, Ops& ops) {
  const Architecture a = parse_architecture(spec.name);
  std::vector<std::unique_ptr<Layer>> layers;
  Shape shape{spec.input_rows, spec.input_cols, spec.input_channels};
  auto add = [&](std::unique_ptr<Layer> l) {
    shape = l->output_shape();
    layers.push_back(std::move(l));
  };
  if (a.cnn) {
    if (spec.input_rows < 4 || spec.input_cols < 4)
      bad_spec(spec.name, "the cnn pools twice and needs inputs of at least 4x4, not " +
                              std::to_string(spec.input_rows) + "x" + std::to_string(spec.input_cols));
    for (int filters : {16, 32}) {
      add(make_conv3x3(ops, shape, filters, spec.max_batch));
      add(make_relu(ops, shape));
      add(make_maxpool2(ops, shape, spec.max_batch));
    }
    add(make_dense(ops, shape, 128, 6.0));
    add(make_relu(ops, shape));
  }
  for (int h : a.hidden) {
    add(make_dense(ops, shape, h, 6.0));
    add(make_relu(ops, shape));
  }
  add(make_dense(ops, shape, spec.classes, 3.0));  // no ReLU after the logits
  return layers;
}

}  // namespace detail

const char* to_string(Device d) { return d == Device::kCuda ? "cuda" : "cpu"; }

ModelSpec parse_model_spec(const std::string& name, Device device) {
  detail::parse_architecture(name);  // throws for a bad name
  ModelSpec spec;
  spec.name = name;
  spec.device = device;
  return spec;
}

std::unique_ptr<Model> make_model(const ModelSpec& spec) {
  detail::parse_architecture(spec.name);
  auto positive = [&](int v, const char* what) {
    if (v <= 0) detail::bad_spec(spec.name, std::string(what) + " must be positive, not " + std::to_string(v));
  };
  positive(spec.input_channels, "input_channels");
  positive(spec.input_rows, "input_rows");
  positive(spec.input_cols, "input_cols");
  positive(spec.max_batch, "max_batch");
  if (spec.classes < 2 || spec.classes > 256)
    detail::bad_spec(spec.name, "classes must be in [2, 256] (labels are bytes), not " + std::to_string(spec.classes));
  auto ops = detail::make_ops(spec.device);
  auto layers = detail::build_layers(spec, *ops);
  return detail::make_sequential(spec, std::move(ops), std::move(layers));
}

}  // namespace murmur::peer::model
