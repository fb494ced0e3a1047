// A training step allocates nothing: every buffer is sized at construction
// (8 peers share 2 cores; the allocator is not free). Counts global
// operator new calls, which every C++ container and std::string go through.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "peer/model/model.h"
#include "peer/model/optimizer.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// gcc cannot see that these frees pair with the malloc above.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace mm = murmur::peer::model;

namespace {

TEST(ModelAllocation, TrainingAndEvaluationStepsAllocateNothing) {
  for (const char* name : {"logreg", "mlp", "cnn"}) {
    mm::ModelSpec spec = mm::parse_model_spec(name, mm::Device::kCpu);
    spec.max_batch = 32;
    auto model = mm::make_model(spec);
    model->initialize(1);
    mm::SgdOptimizer opt(model->parameter_count(), mm::Device::kCpu, {});
    std::vector<float> x(32 * 784, 0.25f);
    std::vector<std::uint8_t> labels(32, 3);
    model->train_batch(x.data(), labels.data(), 32);  // warm-up: BLAS sets itself up on first use

    const long before = g_allocations.load();
    for (int step = 0; step < 3; ++step) {
      model->train_batch(x.data(), labels.data(), step == 1 ? 17 : 32);
      opt.step(model->parameters(), model->gradients(), 0.01);
      model->evaluate(x.data(), labels.data(), 32);
    }
    EXPECT_EQ(g_allocations.load() - before, 0) << name;
  }
}

}  // namespace
