// murmur::Peer for Python (include/murmur/peer.h has the contract).
//
// Tensors cross as raw addresses: the Python layer (python/murmur/_peer.py)
// checks a torch tensor's dtype, device, layout and contiguity, keeps it
// alive, and hands its data_ptr() here, so murmur reads and writes the
// tensor's own memory and nothing is copied on the way.
//
// Every call that may block (joining, step, flush, finish, collectives)
// releases the GIL, so other Python threads (a data loader) run meanwhile.
// A closed Peer (close(), or the C++ Peer finished and destroyed) raises
// RuntimeError naming the call.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "bindings.h"
#include "murmur/peer.h"

namespace nb = nanobind;

namespace murmur::python {
namespace {

using Release = nb::call_guard<nb::gil_scoped_release>;

// Owns the C++ Peer so that close() can end it before Python collects the
// object: leaving the job must not wait for the garbage collector.
class PeerHandle final {
 public:
  explicit PeerHandle(const PeerConfig& config) : peer_(std::make_unique<Peer>(config)) {}

  Peer& get(const char* call) {
    if (!peer_) throw std::logic_error(std::string("murmur.Peer.") + call + "(): the peer is closed");
    return *peer_;
  }
  // Finishes (errors are logged by ~Peer, not raised) and leaves the job.
  void close() { peer_.reset(); }
  bool closed() const { return !peer_; }

 private:
  std::unique_ptr<Peer> peer_;
};

float* address(std::uintptr_t data) { return reinterpret_cast<float*>(data); }

nb::callable callable(nb::object f, const char* field) {
  if (!PyCallable_Check(f.ptr()))
    throw nb::type_error(
        ("murmur: PeerConfig." + std::string(field) + " must be a callable or None, not " + nb::inst_name(f).c_str())
            .c_str());
  return nb::borrow<nb::callable>(f);
}

// A Python callable kept by a C++ PeerConfig (and the copy its Peer keeps).
// The Peer calls it on the thread inside step(), which released the GIL,
// and may drop it in close(), which releases the GIL too: both take it.
using PythonCallable = std::shared_ptr<nb::object>;

PythonCallable keep(nb::object f) {
  return PythonCallable(new nb::object(std::move(f)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
}

// PeerConfig::join_state from Python: the sponsor's state for a joiner, as
// bytes (a pickle, torch.save's output) or str.
struct JoinStateSource {
  PythonCallable f;
  std::string operator()() const {
    nb::gil_scoped_acquire gil;
    nb::object state = (*f)();
    if (nb::isinstance<nb::bytes>(state)) {
      const auto b = nb::borrow<nb::bytes>(state);
      return std::string(b.c_str(), b.size());
    }
    if (nb::isinstance<nb::str>(state)) return nb::cast<std::string>(state);
    throw nb::type_error(
        ("murmur: join_state() returned " + std::string(nb::inst_name(state).c_str()) + "; it must return bytes or str")
            .c_str());
  }
};

// PeerConfig::on_join_state from Python: the joiner receives it as bytes.
struct JoinStateSink {
  PythonCallable f;
  void operator()(const std::string& state) const {
    nb::gil_scoped_acquire gil;
    (*f)(nb::bytes(state.data(), state.size()));
  }
};

// PeerConfig::on_schedule_decision from Python: each decision as JSON text
// (murmur.Peer hands its callable a dict).
struct ScheduleDecisionSink {
  PythonCallable f;
  void operator()(const std::string& json) const {
    nb::gil_scoped_acquire gil;
    (*f)(nb::str(json.data(), json.size()));
  }
};

// Binds a std::function field of PeerConfig that Python sets to a callable
// or None; `Wrapper` keeps the callable (`f`) and converts the arguments.
// The getter returns the callable set from Python, None otherwise.
template <typename Wrapper, typename Signature>
void def_callback(nb::class_<PeerConfig>& config, const char* name, std::function<Signature> PeerConfig::*field,
                  nb::sig getter, nb::sig setter, const char* doc) {
  config.def_prop_rw(
      name,
      [field](const PeerConfig& c) -> nb::object {
        const auto* w = (c.*field).template target<Wrapper>();
        return w != nullptr ? *w->f : nb::none();
      },
      [field, name](PeerConfig& c, nb::object f) {
        c.*field =
            f.is_none() ? std::function<Signature>() : std::function<Signature>(Wrapper{keep(callable(f, name))});
      },
      nb::for_getter(getter), nb::for_setter(setter), nb::for_setter(nb::arg("f").none()), doc);
}

void bind_values(nb::module_& m) {
  nb::enum_<MemoryKind>(m, "MemoryKind", "Where a tensor's memory is: host, CUDA device, or asked of the CUDA runtime.")
      .value("AUTO", MemoryKind::kAuto)
      .value("HOST", MemoryKind::kHost)
      .value("DEVICE", MemoryKind::kDevice);

  auto config =
      nb::class_<PeerConfig>(m, "PeerConfig", "murmur::PeerConfig: gossip settings, membership and data plane.");
  config.def(nb::init<>())
      .def_rw("algorithm", &PeerConfig::algorithm)
      .def_rw("topology", &PeerConfig::topology)
      .def_rw("topology_degree", &PeerConfig::topology_degree)
      .def_rw("topology_probability", &PeerConfig::topology_probability)
      .def_rw("topology_seed", &PeerConfig::topology_seed)
      .def_rw("compressor", &PeerConfig::compressor)
      .def_rw("period", &PeerConfig::period)
      .def_rw("warmup_steps", &PeerConfig::warmup_steps)
      .def_rw("gamma", &PeerConfig::gamma)
      .def_rw("overlap", &PeerConfig::overlap)
      .def_rw("seed", &PeerConfig::seed)
      .def_rw("schedule", &PeerConfig::schedule)
      .def_rw("schedule_interval", &PeerConfig::schedule_interval)
      .def_rw("rank", &PeerConfig::rank)
      .def_rw("world_size", &PeerConfig::world_size)
      .def_rw("rendezvous", &PeerConfig::rendezvous)
      .def_rw("host_rendezvous", &PeerConfig::host_rendezvous)
      .def_rw("token", &PeerConfig::token)
      .def_rw("host_name", &PeerConfig::host_name)
      .def_rw("join_timeout_s", &PeerConfig::join_timeout_s)
      .def_rw("backend", &PeerConfig::backend)
      .def_rw("provider", &PeerConfig::provider)
      .def_rw("link_profile", &PeerConfig::link_profile)
      .def_rw("timeout_s", &PeerConfig::timeout_s)
      .def_rw("trace", &PeerConfig::trace, "Chrome trace-event file for this peer's timeline ({rank}: the rank)")
      .def_rw("interface", &PeerConfig::interface,
              "the interface name (ib0) or subnet (10.0.0.0/24) the data plane binds to; empty: $MURMUR_INTERFACE, "
              "else murmur's choice")
      .def_rw("survive_lost_peers", &PeerConfig::survive_lost_peers)
      .def_rw("join", &PeerConfig::join);
  def_callback<JoinStateSource>(
      config, "join_state", &PeerConfig::join_state,
      nb::sig("def join_state(self, /) -> typing.Callable[[], bytes | str] | None"),
      nb::sig("def join_state(self, f: typing.Callable[[], bytes | str] | None, /) -> None"),
      "A sponsor's state for a joiner (optimizer, step, epoch): a callable returning bytes or str, called on "
      "the thread in the sponsor's step() of the step the joiner enters in (docs/resilience.md)");
  def_callback<JoinStateSink>(config, "on_join_state", &PeerConfig::on_join_state,
                              nb::sig("def on_join_state(self, /) -> typing.Callable[[bytes], None] | None"),
                              nb::sig("def on_join_state(self, f: typing.Callable[[bytes], None] | None, /) -> None"),
                              "A joiner's receiver of its sponsor's join_state(), as bytes, inside its first step()");
  def_callback<ScheduleDecisionSink>(
      config, "on_schedule_decision", &PeerConfig::on_schedule_decision,
      nb::sig("def on_schedule_decision(self, /) -> typing.Callable[[str], None] | None"),
      nb::sig("def on_schedule_decision(self, f: typing.Callable[[str], None] | None, /) -> None"),
      "With an adaptive schedule: called with each scheduler decision as one JSON object (text), inside step() "
      "on its thread; it must not call the Peer (docs/scheduler.md has the fields)");

  nb::class_<PeerView::Departure>(m, "Departure", "A peer that left the view: its rank, host and why.")
      .def_ro("rank", &PeerView::Departure::rank)
      .def_ro("host", &PeerView::Departure::host)
      .def_ro("reason", &PeerView::Departure::reason);

  nb::class_<PeerView>(m, "PeerView", "A membership view: who takes part in the job from some round on.")
      .def_ro("generation", &PeerView::generation)
      .def_ro("ranks", &PeerView::ranks, "the live members, ascending")
      .def_ro("lost", &PeerView::lost, "departures since the previous view")
      .def_ro("joined", &PeerView::joined, "ranks that joined since the previous view")
      .def_ro("spectral_gap", &PeerView::spectral_gap)
      .def_ro("topology", &PeerView::topology);

  nb::class_<PeerLinkStats>(m, "LinkStats", "Traffic with one peer this rank exchanged with.")
      .def_ro("rank", &PeerLinkStats::rank)
      .def_ro("host", &PeerLinkStats::host)
      .def_ro("bytes_sent", &PeerLinkStats::bytes_sent)
      .def_ro("bytes_received", &PeerLinkStats::bytes_received)
      .def_ro("messages_sent", &PeerLinkStats::messages_sent)
      .def_ro("messages_received", &PeerLinkStats::messages_received);

  nb::class_<PeerStats>(m, "PeerStats", "Steps, rounds, bytes and time blocked (docs/embedding.md, \"Stats\").")
      .def_ro("steps", &PeerStats::steps)
      .def_ro("rounds", &PeerStats::rounds)
      .def_ro("wait_seconds", &PeerStats::wait_seconds, "caller time blocked in step()/flush()")
      .def_ro("comm_seconds", &PeerStats::comm_seconds, "background time inside rounds")
      .def_ro("comm_cpu_seconds", &PeerStats::comm_cpu_seconds,
              "the background thread's CPU time inside rounds (comm_seconds less the time rounds waited)")
      .def_ro("bytes_sent", &PeerStats::bytes_sent, "gossip payload, all links (collectives not included)")
      .def_ro("bytes_received", &PeerStats::bytes_received)
      .def_ro("collective_bytes_sent", &PeerStats::collective_bytes_sent)
      .def_ro("period", &PeerStats::period)
      .def_ro("ratio", &PeerStats::ratio)
      .def_ro("algorithm", &PeerStats::algorithm)
      .def_ro("compressor", &PeerStats::compressor)
      .def_ro("links", &PeerStats::links);
}

}  // namespace

void bind_peer(nb::module_& m) {
  bind_values(m);

  nb::class_<PeerHandle>(m, "Peer", "murmur::Peer over raw addresses; murmur.Peer wraps it for tensors.")
      .def(nb::init<const PeerConfig&>(), nb::arg("config"), Release(),
           "Joins the job; blocks until every rank has joined or join_timeout_s passes.")
      .def("close", &PeerHandle::close, Release(), "Finishes if needed and leaves the job.")
      .def(
          "leave_now", [](PeerHandle& h, const std::string& why) { h.get("leave_now").leave_now(why); }, nb::arg("why"),
          "Marks this rank as leaving at once (no finish, no barrier); close() then leaves.")
      .def_prop_ro("closed", &PeerHandle::closed)
      .def("rank", [](PeerHandle& h) { return h.get("rank").rank(); })
      .def("world_size", [](PeerHandle& h) { return h.get("world_size").world_size(); })
      .def(
          "host", [](PeerHandle& h, int rank) { return h.get("host").host(rank); }, nb::arg("rank"))
      .def(
          "add_tensor",
          [](PeerHandle& h, const std::string& name, std::uintptr_t data, std::size_t count, MemoryKind kind) {
            h.get("add_tensor").add_tensor(name, address(data), count, kind);
          },
          nb::arg("name"), nb::arg("data"), nb::arg("count"), nb::arg("kind") = MemoryKind::kAuto,
          "Registers `count` float32 values at address `data`; before the first step() only.")
      .def("parameter_count", [](PeerHandle& h) { return h.get("parameter_count").parameter_count(); })
      .def(
          "averages_gradients", [](PeerHandle& h) { return h.get("averages_gradients").averages_gradients(); },
          "Whether the algorithm averages gradients before the optimizer step (the gradient hand-off).")
      .def(
          "set_gradients",
          [](PeerHandle& h, std::uintptr_t data, std::size_t count, const std::vector<std::size_t>& layer_sizes) {
            h.get("set_gradients").set_gradients(address(data), count, layer_sizes);
          },
          nb::arg("data"), nb::arg("count"), nb::arg("layer_sizes"),
          "The gradient buffer: `count` float32 host values at `data`, layers of `layer_sizes` floats, front "
          "layer first; before the first step() only.")
      .def(
          "set_optimizer_state",
          [](PeerHandle& h, std::uintptr_t data, std::size_t count) {
            h.get("set_optimizer_state").set_optimizer_state(address(data), count);
          },
          nb::arg("data"), nb::arg("count"),
          "The optimizer's state beside the parameters: `count` float32 host values at `data`, re-averaged with "
          "the parameters when the membership changes; before the first step() only.")
      .def(
          "gradient_ready", [](PeerHandle& h, std::size_t layer) { h.get("gradient_ready").gradient_ready(layer); },
          nb::arg("layer"), Release(),
          "From the backward pass: `layer`'s gradient is final for this step (its first call runs the layout "
          "check, a collective).")
      .def(
          "average_gradients", [](PeerHandle& h) { h.get("average_gradients").average_gradients(); }, Release(),
          "Hands over the layers not handed over yet and blocks until every gradient is the mean over the members.")
      .def(
          "wait_layer_averaged",
          [](PeerHandle& h, std::size_t layer) { h.get("wait_layer_averaged").wait_layer_averaged(layer); },
          nb::arg("layer"), Release(),
          "The layer-wise step: after backward, blocks until `layer`'s gradient alone is the mean (front layers "
          "first under bytescheduler-*); average_gradients() still closes the round before step().")
      .def(
          "step", [](PeerHandle& h) { h.get("step").step(); }, Release())
      .def(
          "flush", [](PeerHandle& h) { h.get("flush").flush(); }, Release())
      .def(
          "finish", [](PeerHandle& h) { h.get("finish").finish(); }, Release())
      .def(
          "save_state",
          [](PeerHandle& h) {
            std::string state;
            {
              nb::gil_scoped_release release;
              state = h.get("save_state").save_state();
            }
            return nb::bytes(state.data(), state.size());
          },
          "The algorithm's and scheduler's state as bytes; after flush(), on every rank.")
      .def(
          "load_state",
          [](PeerHandle& h, nb::bytes state, bool other_view) {
            const std::string copy(static_cast<const char*>(state.data()), state.size());
            nb::gil_scoped_release release;
            h.get("load_state").load_state(copy, other_view);
          },
          nb::arg("state"), nb::arg("other_view") = false, "Before the first step(), on every rank.")
      .def(
          "average",
          [](PeerHandle& h, std::uintptr_t data, std::size_t count, MemoryKind kind) {
            h.get("average").average(address(data), count, kind);
          },
          nb::arg("data"), nb::arg("count"), nb::arg("kind") = MemoryKind::kAuto, Release(),
          "Exact mean over all ranks of `count` float32 values at `data`, in place (a collective).")
      .def(
          "average_scalar", [](PeerHandle& h, double value) { return h.get("average").average(value); },
          nb::arg("value"), Release(), "Exact mean of one number over all ranks (a collective).")
      .def(
          "averaged_model",
          [](PeerHandle& h, std::uintptr_t out) { h.get("averaged_model").averaged_model(address(out)); },
          nb::arg("out"), Release(),
          "The mean of every rank's registered tensors into parameter_count() floats at `out`.")
      .def(
          "consensus_distance", [](PeerHandle& h) { return h.get("consensus_distance").consensus_distance(); },
          Release(), "sqrt(mean over ranks of ||x_i - x_mean||^2) (a collective).")
      .def("stats", [](PeerHandle& h) { return h.get("stats").stats(); })
      .def("view", [](PeerHandle& h) { return h.get("view").view(); })
      .def("joining", [](PeerHandle& h) { return h.get("joining").joining(); })
      .def(
          "on_view_change",
          [](PeerHandle& h, std::function<void(const PeerView&)> callback) {
            h.get("on_view_change").on_view_change(std::move(callback));
          },
          nb::arg("callback"),
          "Calls callback(view) with every new view, on the thread that calls step(), from inside it.");
}

}  // namespace murmur::python
