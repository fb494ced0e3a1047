// Graph files (.topo), the text format of docs/topology-format.md:
//
//   # comment            (anywhere; '#' to the end of the line)
//   nodes 8              (once, before any edge)
//   undirected           (or: directed; once, before any edge)
//   0 1                  (edge; undirected edges are listed once)
//   1 2 0.25 class=ib    (edge with a mixing weight and a link class)
//   self 1 0.5           (self weight)
//
// A file is refused with TopologyError "path:line: reason" for: an unknown
// line, a missing or repeated header, an unknown node, a self loop, a
// duplicate edge, a negative, above-1 or non-numeric weight, weights on some
// edges but not others, weights whose rows (undirected) or columns (directed,
// push-sum) do not sum to 1 within 1e-9, and a graph that is not (strongly)
// connected. Blocking: reads the whole file.
#pragma once

#include <istream>
#include <string>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

// `path` names the source in error messages.
Graph parse_topology(std::istream& in, const std::string& path);
// Throws TopologyError "path: cannot open ..." when the file cannot be read.
Graph read_topology_file(const std::string& path);

}  // namespace murmur::gossip
