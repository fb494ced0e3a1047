// The proofs of the job token at a rendezvous Hello (rendezvous.capnp,
// Challenge): HMAC-SHA256 keyed with the token over a context string and
// the other side's nonce. The client proves it over the server's Challenge
// nonce; the server proves it, in the Challenge, over the nonce of the
// client's first Hello. The contexts differ, so neither proof can be
// reflected as the other, nor serve as an answer in the asio transport's
// handshake. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/job_token.h"

namespace murmur::fabric::rendezvous {

enum class Prover { kClient, kServer };

inline job_token::Proof hello_digest(Prover who, std::string_view job_token, std::string_view nonce) {
  std::string message = who == Prover::kClient ? "murmur rendezvous hello v1" : "murmur rendezvous server v1";
  message += nonce;
  return job_token::prove(job_token, message);
}

// What `who` sends over the other side's nonce.
inline std::string hello_proof(Prover who, std::string_view job_token, std::string_view nonce) {
  return std::string(job_token::bytes_of(hello_digest(who, job_token, nonce)));
}

// The check of a proof `who` sent over our nonce, in constant time.
inline bool hello_proof_matches(Prover who, std::string_view job_token, std::string_view nonce,
                                std::string_view proof) {
  return job_token::same_proof(hello_digest(who, job_token, nonce), proof);
}

}  // namespace murmur::fabric::rendezvous
