// Every model kind learns a synthetic problem that a linear classifier can
// separate (ten Gaussian clusters, well apart), to > 95% held-out accuracy
// within a few hundred SGD steps: the pieces (model, optimizer, schedule)
// work together. No dataset needed.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "peer/model/lr_schedule.h"
#include "peer/model/model.h"
#include "peer/model/optimizer.h"

namespace mm = murmur::peer::model;

namespace {

struct Problem {
  int features;
  std::vector<float> x;
  std::vector<std::uint8_t> y;
};

// Cluster centres ~ N(0, 1) per feature, samples = centre + N(0, 0.5^2).
Problem clusters(int features, int samples, unsigned seed, const std::vector<float>& centres) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::uniform_int_distribution<int> label(0, 9);
  Problem p{features, std::vector<float>(std::size_t(samples) * features), std::vector<std::uint8_t>(samples)};
  for (int s = 0; s < samples; ++s) {
    const int c = label(gen);
    p.y[s] = static_cast<std::uint8_t>(c);
    for (int f = 0; f < features; ++f)
      p.x[std::size_t(s) * features + f] = centres[std::size_t(c) * features + f] + noise(gen);
  }
  return p;
}

struct Case {
  std::string name;
  int rows, cols;
  int steps;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class Learning : public ::testing::TestWithParam<Case> {};

TEST_P(Learning, ReachesNinetyFivePercentOnSeparableClusters) {
  const Case& c = GetParam();
  const int features = c.rows * c.cols, batch = 32;
  std::mt19937 gen(11);
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> centres(10 * std::size_t(features));
  for (auto& v : centres) v = unit(gen);
  const Problem train = clusters(features, 2048, 1, centres), test = clusters(features, 512, 2, centres);

  mm::ModelSpec spec = mm::parse_model_spec(c.name, mm::Device::kCpu);
  spec.input_rows = c.rows;
  spec.input_cols = c.cols;
  spec.max_batch = batch;
  auto model = mm::make_model(spec);
  model->initialize(123);
  mm::SgdOptimizer opt(model->parameter_count(), mm::Device::kCpu, {});
  const auto schedule = mm::parse_lr_schedule(0.05, 20, c.steps, "cosine");

  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < c.steps; ++step) {
    const std::size_t start = std::size_t(step * batch) % (train.y.size() - batch);
    const mm::StepResult r = model->train_batch(train.x.data() + start * features, train.y.data() + start, batch);
    if (step == 0) first_loss = r.loss;
    last_loss = r.loss;
    opt.step(model->parameters(), model->gradients(), mm::learning_rate_at(schedule, step));
  }
  int correct = 0;
  for (std::size_t s = 0; s < test.y.size(); s += batch) {
    const mm::EvalResult e = model->evaluate(test.x.data() + s * features, test.y.data() + s, batch);
    correct += e.correct;
  }
  const double accuracy = double(correct) / double(test.y.size());
  EXPECT_GT(accuracy, 0.95) << c.name << ": loss " << first_loss << " -> " << last_loss;
  EXPECT_LT(last_loss, first_loss);
}

INSTANTIATE_TEST_SUITE_P(Models, Learning,
                         ::testing::Values(Case{"logreg", 1, 32, 200}, Case{"mlp:32", 1, 32, 200},
                                           Case{"cnn", 8, 8, 200}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (auto& ch : n)
                             if (ch == ':') ch = '_';
                           return n;
                         });

}  // namespace
