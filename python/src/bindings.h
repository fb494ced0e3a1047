// The pieces of the murmur._murmur extension module, one binding file each.
// Each function adds its classes and functions to `m`.
#pragma once

#include <nanobind/nanobind.h>

namespace murmur::python {

void bind_peer(nanobind::module_& m);
void bind_partition(nanobind::module_& m);

}  // namespace murmur::python
