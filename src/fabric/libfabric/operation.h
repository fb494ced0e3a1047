// Operation: the progress thread's record of one isend or irecv, split into
// chunks of at most chunk_bytes. Every posted chunk has its own context (the
// fi_context2 libfabric hands back in the completion).
//
// Wire protocol: chunk 0 is sent with fi_tsenddata, its remote CQ data the
// total size; chunks 1..n-1 follow with fi_tsend on the continuation tag
// (the message's tag with kBackendTagBit set, fabric/request.h). A receiver
// posts chunk 0 at once, learns the total from its completion and then
// posts every other chunk. All ranks must use the same chunk_bytes. (Up to
// 3 December 2026 continuations used the message's own tag; the two
// protocols do not mix in one job.) A gathered send (isendv) posts each
// chunk as the iovecs of the pieces it spans, or, past the provider's
// iov limit, as a copy in the chunk's bounce buffer: the wire is the same.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstddef>
#include <exception>
#include <list>
#include <memory>
#include <vector>

#include "fabric/libfabric/fid.h"
#include "fabric/request.h"
#include "fabric/send_pieces.h"

namespace murmur::fabric::libfabric {

struct Operation;

struct ChunkContext {
  fi_context2 context{};  // first member: libfabric returns its address
  Operation* op = nullptr;
  std::size_t index = 0;
  bool posted = false;    // handed to libfabric, completion not yet read
  const char* call = "";  // the libfabric call that posted it, for errors
  // A send chunk that spans more pieces than the provider takes iovecs:
  // its bytes, copied (and registered where the provider asks for it),
  // from its first post to its completion.
  std::unique_ptr<char[]> bounce;
  Fid<fid_mr> bounce_mr;
  void* bounce_desc = nullptr;
};

struct Operation {
  RequestPtr request;
  int peer = -1;
  Tag tag = 0;
  char* data = nullptr;                // receive: the caller's buffer
  SendPieces pieces;                   // send: the caller's pieces
  std::size_t capacity = 0;            // send: message size; receive: buffer size
  std::size_t total = 0;               // message size (receive: known after chunk 0)
  bool size_known = false;             // receive: chunk 0 completed, so total and chunks are set
  std::size_t chunks = 1;              // known count (receive: 1 until chunk 0 is done)
  std::size_t completed = 0;           // chunks whose completion was read
  std::size_t in_flight = 0;           // chunks posted and not yet completed
  bool overflow = false;               // receive: message larger than capacity
  bool reported = false;               // request completed or failed
  std::exception_ptr error;            // first failure
  std::vector<ChunkContext> contexts;  // resized only when none is in flight
  Fid<fid_mr> mr;                      // receive, when the provider's mr_mode asks for it
  void* desc = nullptr;
  std::vector<Fid<fid_mr>> piece_mrs;  // send: one per piece, likewise
  std::vector<void*> piece_descs;
  std::list<std::unique_ptr<Operation>>::iterator self;  // in Engine::ops_

  bool is_send() const { return request->kind() == Request::Kind::kSend; }
};

}  // namespace murmur::fabric::libfabric
