// Engine::claim_held_messages: what the provider holds for us is taken back
// before the endpoint closes.
//
// Over tcp every chunk is one eager message of rxm (endpoint.cc), and a
// chunk that arrives before its receive is posted is kept by rxm in a
// buffer it mallocs for it. libfabric 1.17 frees that buffer when a receive
// claims the message, and not when the endpoint closes: every message still
// unclaimed at fi_close is lost to the process (LeakSanitizer: one
// chunk_bytes block per message, 16 MiB after
// FailedReceiveKeepsItsRetainedBufferUntilTheBackendLetsGo; test
// AMessageNobodyReceivedIsFreedWhenTheTransportCloses). Such messages are
// normal at close: a failed peer's last chunks, a message for a request the
// caller gave up on, a peer's send racing the shutdown. So before closing,
// the engine receives each of them into its scratch chunk with a receive
// that matches any tag from any peer, and drops it.
//
// rxm matches a held message as the receive is posted and completes it at
// once; a receive that matches nothing is cancelled, and that ends it. The
// number claimed is bounded because a live sender can keep the queue from
// emptying while this runs; what arrives after is the kernel's to drop.

#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <cstdint>
#include <string>

#include "common/log.h"
#include "fabric/libfabric/engine.h"
#include "fabric/libfabric/fi_check.h"

namespace murmur::fabric::libfabric {

namespace {

// 4096 chunks of the default 4 MiB: 16 GiB, far more than a peer has in
// flight; reaching it means a sender that does not stop.
constexpr int kMaxClaims = 4096;

bool holds_messages_in_own_buffers(const Endpoint& endpoint) {
  return endpoint.provider_name.find("ofi_rxm") != std::string::npos &&
         endpoint.provider_name.find("tcp") != std::string::npos;
}

}  // namespace

bool Engine::is_held_message_claim(const void* op_context) {
  if (op_context != &held_message_context_) return false;
  held_message_claimed_ = true;
  return true;
}

void Engine::claim_held_messages() {
  if (!endpoint_.ep || !holds_messages_in_own_buffers(endpoint_)) return;
  int claimed = 0;
  while (claimed < kMaxClaims) {
    held_message_claimed_ = false;
    const ssize_t ret = fi_trecv(endpoint_.ep.get(), scratch(), chunk_bytes_, scratch_desc_, FI_ADDR_UNSPEC,
                                 /*tag=*/0, /*ignore=*/~std::uint64_t{0}, &held_message_context_);
    if (ret != 0) {
      // -FI_EAGAIN (no receive slot) or a broken endpoint: close as it is.
      fabric_log().debug("libfabric: claiming held messages: {}", fi_error_text("fi_trecv", ret));
      break;
    }
    read_cq();
    if (held_message_claimed_) {
      ++claimed;
      continue;
    }
    // Nothing was held. Withdraw the receive; its cancellation (or a message
    // that matched it meanwhile) is read, if it is already there.
    fi_cancel(&endpoint_.ep->fid, &held_message_context_);
    read_cq();
    break;
  }
  if (claimed > 0) fabric_log().debug("libfabric: dropped {} message(s) nobody received, before closing", claimed);
}

}  // namespace murmur::fabric::libfabric
