// The asio transport's proof of the job token at connection set-up
// (TransportOptions::job_token). After the two handshakes (wire.h), with the
// token flag set on both:
//   dialer   -> acceptor: handshake | dialer nonce (32 bytes)
//   acceptor -> dialer:   handshake | acceptor nonce | acceptor proof
//   dialer   -> acceptor: dialer proof
// Each proof is HMAC-SHA256(token, context of its side | the other side's
// nonce | own rank | other rank), so it is fresh for the connection, names
// both ends (a proof for rank 1 -> 2 does not serve 3 -> 2), and cannot be
// reflected back (the two sides' contexts differ). The acceptor attaches the
// socket to its Link only after checking the dialer's proof: nothing a
// connection sends before that reaches a receive. Messages are not
// authenticated one by one (docs/security.md says what that leaves open).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/job_token.h"

namespace murmur::fabric::asio::auth {

enum class Side { kDialer, kAcceptor };

inline constexpr std::size_t kNonceBytes = sizeof(job_token::Nonce);
inline constexpr std::size_t kProofBytes = sizeof(job_token::Proof);

// The proof `side` (rank `own_rank`, talking to `other_rank`) sends over the
// other side's nonce.
job_token::Proof prove(std::string_view token, Side side, const job_token::Nonce& their_nonce, int own_rank,
                       int other_rank);

// Whether `received` is the proof `their_side` (rank `their_rank`) owes us
// (rank `our_rank`) over our nonce. Constant time.
bool check(std::string_view token, Side their_side, const job_token::Nonce& our_nonce, int their_rank, int our_rank,
           const job_token::Proof& received);

}  // namespace murmur::fabric::asio::auth
