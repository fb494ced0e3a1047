#include "sim/cost/iteration_pipeline.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>

#include "common/check.h"

namespace murmur::sim::cost {
namespace {

// When each unit is ready, given when each layer's gradient is.
std::vector<double> unit_ready_times(const PipelineSpec& spec, const std::vector<double>& gradient_ready) {
  std::vector<double> ready(spec.units.size(), 0.0);
  for (std::size_t u = 0; u < spec.units.size(); ++u)
    for (int layer : spec.units[u].layers)
      ready[u] = std::max(ready[u], gradient_ready[static_cast<std::size_t>(layer)]);
  return ready;
}

// The network's state between iterations: when each slot, the wire and the
// host thread free up.
struct CommState {
  std::vector<std::pair<double, double>> in_flight;  // (done, weight): slots weigh 1, a credit counts bytes
  double last_start = 0;                             // units start in order: the next one not before
  double wire_free = 0;
  double host_free = 0;
};

// Passes the units through the serial host stage in readiness order: a
// unit is ready for a slot once its host work is done.
void run_host_stage(const PipelineSpec& spec, std::vector<double>& ready, CommState& state) {
  std::vector<std::size_t> order(ready.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ready[a] < ready[b]; });
  for (std::size_t u : order) {
    if (spec.units[u].host_s <= 0) continue;
    state.host_free = std::max(state.host_free, ready[u]) + spec.units[u].host_s;
    ready[u] = state.host_free;
  }
}

// Runs one iteration's units; returns each unit's completion time. Units
// join a queue as they become ready; whenever a slot frees, the queue's best
// unit (earliest ready, or highest priority) takes it.
// When `wire_s` of transfer that starts at `start` ends, at `share` of the
// speed until `compute_end` and at full speed after.
double wire_end(double start, double wire_s, double compute_end, double share) {
  if (start >= compute_end) return start + wire_s;
  const double slow = (compute_end - start) * share;  // wire seconds done before compute ends
  return slow >= wire_s ? start + wire_s / share : compute_end + (wire_s - slow);
}

// When per-message costs that start at `start` end: they take
// busy_fixed_s while compute runs and fixed_s after (fixed_s may be 0: a
// link whose messages cost nothing on an idle host).
double fixed_end(double start, double fixed_s, double busy_fixed_s, double compute_end) {
  if (start >= compute_end || busy_fixed_s <= fixed_s) return start + fixed_s;
  const double share = (compute_end - start) / busy_fixed_s;  // of the work, done before compute ends
  return share >= 1 ? start + busy_fixed_s : compute_end + (1 - share) * fixed_s;
}

std::vector<double> schedule_units(const PipelineSpec& spec, const std::vector<double>& ready, double compute_end,
                                   CommState& state) {
  const std::size_t n = spec.units.size();
  std::vector<std::size_t> by_ready(n);
  std::iota(by_ready.begin(), by_ready.end(), std::size_t{0});
  std::stable_sort(by_ready.begin(), by_ready.end(), [&](std::size_t a, std::size_t b) { return ready[a] < ready[b]; });
  // Min-heap key: (priority or readiness, index) so that ties keep unit order.
  auto key = [&](std::size_t u) {
    return std::make_pair(spec.order == UnitOrder::kPriority ? static_cast<double>(spec.units[u].priority) : ready[u],
                          u);
  };
  const bool by_bytes = spec.credit_bytes > 0;
  const double capacity = by_bytes ? spec.credit_bytes : static_cast<double>(spec.slots);
  auto weight = [&](std::size_t u) { return by_bytes ? spec.units[u].bytes : 1.0; };
  std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>, std::greater<>>
      queue;
  std::vector<double> done(n, 0.0);
  std::size_t next = 0;  // into by_ready: the first unit not yet queued
  double now = state.last_start;
  const bool windowed = by_bytes && spec.refill_when_empty;
  double window_open = -std::numeric_limits<double>::infinity();  // windowed: when the open window opened
  double window_used = 0;
  auto retire = [&] {  // drops what finished by now; returns the weight still in flight
    double in_flight = 0;
    std::erase_if(state.in_flight, [&](const auto& f) { return f.first <= now; });
    for (const auto& f : state.in_flight) in_flight += f.second;
    return in_flight;
  };
  for (std::size_t scheduled = 0; scheduled < n; ++scheduled) {
    if (queue.empty() && next < n && ready[by_ready[next]] > now) now = ready[by_ready[next]];
    while (next < n && ready[by_ready[next]] <= now) queue.push(key(by_ready[next++]));
    MURMUR_CHECK(!queue.empty());
    std::size_t pick = queue.top().second;
    double start = now;
    if (windowed) {
      // Join the window that opened now if the unit fits; else wait for
      // every unit in flight, then open the next window with the best
      // unit ready by then.
      retire();
      const bool joins = now == window_open && window_used + weight(pick) <= capacity + 1e-9;
      if (!joins) {
        for (const auto& f : state.in_flight) now = std::max(now, f.first);
        retire();
        while (next < n && ready[by_ready[next]] <= now) queue.push(key(by_ready[next++]));
        pick = queue.top().second;
        window_open = now;
        window_used = 0;
      }
      window_used += weight(pick);
      start = window_open + spec.window_open_s;
    } else {
      // Wait for room: each time a unit in flight ends, a better unit may
      // have become ready meanwhile.
      for (double used = retire(); !state.in_flight.empty() && used + weight(pick) > capacity + 1e-9; used = retire()) {
        now = std::min_element(state.in_flight.begin(), state.in_flight.end())->first;
        while (next < n && ready[by_ready[next]] <= now) queue.push(key(by_ready[next++]));
        pick = queue.top().second;
      }
      start = now;
    }
    queue.pop();
    const CommUnit& unit = spec.units[pick];
    const double wire_start = std::max(fixed_end(start, unit.fixed_s, unit.busy_fixed_s, compute_end), state.wire_free);
    done[pick] = wire_end(wire_start, unit.wire_s, compute_end, spec.overlap_share);
    state.wire_free = done[pick];
    state.in_flight.emplace_back(done[pick], weight(pick));
  }
  state.last_start = now;
  return done;
}

}  // namespace

PipelineResult run_pipeline(const PipelineSpec& spec) {
  const std::size_t layers = spec.forward_s.size();
  MURMUR_CHECK_EQ(layers, spec.backward_s.size());
  MURMUR_CHECK(layers > 0);
  MURMUR_CHECK(spec.slots >= 1);
  MURMUR_CHECK(spec.iterations >= 3);
  MURMUR_CHECK(spec.overlap_share > 0 && spec.overlap_share <= 1);

  CommState state;
  // When layer j's parameters are updated, i.e. the next forward may use them.
  std::vector<double> params_ready(layers, 0.0);
  double compute_free = 0;  // the GPU's compute stream
  std::vector<double> iteration_starts;
  for (int it = 0; it < spec.iterations; ++it) {
    double t = compute_free;
    for (std::size_t j = 0; j < layers; ++j) {
      t = std::max(t, params_ready[j]);
      if (j == 0) iteration_starts.push_back(t);
      t += spec.forward_s[j];
    }
    std::vector<double> gradient_ready(layers, 0.0);
    for (std::size_t j = layers; j-- > 0;) {
      t += spec.backward_s[j];
      gradient_ready[j] = t;
    }
    compute_free = t;
    std::vector<double> ready = unit_ready_times(spec, gradient_ready);
    run_host_stage(spec, ready, state);
    const std::vector<double> done = schedule_units(spec, ready, compute_free, state);
    if (spec.barrier) {
      double all = compute_free;
      for (double d : done) all = std::max(all, d);
      std::fill(params_ready.begin(), params_ready.end(), all);
    } else {
      std::fill(params_ready.begin(), params_ready.end(), compute_free);
      for (std::size_t u = 0; u < spec.units.size(); ++u)
        for (int layer : spec.units[u].layers) {
          double& ready = params_ready[static_cast<std::size_t>(layer)];
          ready = std::max(ready, done[u]);
        }
    }
  }
  // The next forward's start closes the last iteration.
  iteration_starts.push_back(std::max(compute_free, params_ready[0]));

  PipelineResult result;
  const std::size_t warm_up = 2;
  const std::size_t measured = iteration_starts.size() - 1 - warm_up;
  result.iteration_s = (iteration_starts.back() - iteration_starts[warm_up]) / static_cast<double>(measured);
  result.compute_s = std::accumulate(spec.forward_s.begin(), spec.forward_s.end(), 0.0) +
                     std::accumulate(spec.backward_s.begin(), spec.backward_s.end(), 0.0);
  for (const CommUnit& unit : spec.units) result.comm_s += unit.host_s + unit.fixed_s + unit.wire_s;
  result.exposed_s = std::max(0.0, result.iteration_s - result.compute_s);
  result.overlap_s = std::max(0.0, result.comm_s - result.exposed_s);
  result.units = static_cast<int>(spec.units.size());
  return result;
}

}  // namespace murmur::sim::cost
