// The proof of the job token a Hello carries (rendezvous.capnp, Challenge):
// HMAC-SHA256 keyed with the token over a context string and the server's
// nonce, so that a proof seen on one connection is worth nothing on another,
// nor as an answer in the asio transport's handshake (another context).
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/job_token.h"

namespace murmur::fabric::rendezvous {

inline job_token::Proof hello_digest(std::string_view job_token, std::string_view nonce) {
  std::string message = "murmur rendezvous hello v1";
  message += nonce;
  return job_token::prove(job_token, message);
}

// What the client puts in Hello.proof.
inline std::string hello_proof(std::string_view job_token, std::string_view nonce) {
  return std::string(job_token::bytes_of(hello_digest(job_token, nonce)));
}

// The server's check, in constant time.
inline bool hello_proof_matches(std::string_view job_token, std::string_view nonce, std::string_view proof) {
  return job_token::same_proof(hello_digest(job_token, nonce), proof);
}

}  // namespace murmur::fabric::rendezvous
