// Endpoint: the libfabric objects of one transport, opened in order
// (fi_getinfo, fabric, domain, av, cq, ep) and closed in reverse by their
// RAII owners. Also the provider choice ("auto") and verbs detection.
//
// Threading: opened on the constructing thread; afterwards every data call
// on these objects is made by the progress thread (FI_THREAD_DOMAIN).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fabric/libfabric/fid.h"
#include "fabric/transport_options.h"

namespace murmur::fabric::libfabric {

// "tcp", "shm" or "verbs" for options.provider (resolving "auto").
std::string choose_provider(const TransportOptions& options);

// True when the kernel lists an RDMA device; asks no libfabric provider
// (tune_rxm_for_tcp in endpoint.cc: nothing may initialise libfabric before it).
bool rdma_device_listed();

struct Endpoint {
  // Opens everything; throws FabricError naming the provider and the call.
  Endpoint(const TransportOptions& options, const std::string& provider);

  std::string provider;          // what was asked: tcp, shm, verbs
  std::string provider_name;     // what libfabric gave: e.g. "tcp;ofi_rxm"
  bool register_memory = false;  // mr_mode asks for local registration
  bool mr_prov_key = false;
  bool mr_endpoint = false;
  std::size_t cq_data_size = 0;  // bytes of remote CQ data
  std::size_t max_msg_size = 0;
  std::size_t rx_iov_limit = 1;
  std::size_t tx_iov_limit = 1;
  int wait_fd = -1;            // the CQ's wait fd, or -1 when polled with back-off
  bool wait_in_sread = false;  // block in fi_cq_sread, not on wait_fd (waiter.h)
  std::string shm_region;      // shm: the region's name (endpoint.cc), which doorbell.h's are named after
  // shm: whether peers may read this process (cross_memory_access.h), so that shm
  // moves large messages in one copy, not by segments that need both sides' polling.
  bool shm_single_copy = false;

  // Members in creation order: they close in reverse.
  InfoPtr info;
  Fid<fid_fabric> fabric;
  Fid<fid_domain> domain;
  Fid<fid_av> av;
  Fid<fid_cq> cq;
  Fid<fid_ep> ep;
};

}  // namespace murmur::fabric::libfabric
