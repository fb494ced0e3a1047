// murmur._murmur: the compiled half of the `murmur` Python package. Users
// import `murmur` (python/murmur/__init__.py), which wraps these bindings
// with launcher handling and tensor checks.
//
// C++ exceptions keep their text and become nanobind's standard Python
// types: std::invalid_argument -> ValueError, std::logic_error and
// std::runtime_error -> RuntimeError (docs/python.md, "Errors").
#include "bindings.h"

NB_MODULE(_murmur, m) {
  m.doc() = "murmur's C++ runtime: murmur::Peer and the data partition (use the `murmur` package instead).";
  murmur::python::bind_peer(m);
  murmur::python::bind_partition(m);
}
