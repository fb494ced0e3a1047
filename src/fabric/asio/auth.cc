#include "fabric/asio/auth.h"

#include <cstdint>
#include <string>

namespace murmur::fabric::asio::auth {

job_token::Proof prove(std::string_view token, Side side, const job_token::Nonce& their_nonce, int own_rank,
                       int other_rank) {
  std::string message = side == Side::kDialer ? "murmur asio dialer v1" : "murmur asio acceptor v1";
  message += job_token::bytes_of(their_nonce);
  for (int rank : {own_rank, other_rank}) {
    const auto r = static_cast<std::uint32_t>(rank);
    for (int shift = 0; shift < 32; shift += 8) message.push_back(static_cast<char>((r >> shift) & 0xff));
  }
  return job_token::prove(token, message);
}

bool check(std::string_view token, Side their_side, const job_token::Nonce& our_nonce, int their_rank, int our_rank,
           const job_token::Proof& received) {
  return job_token::same_proof(prove(token, their_side, our_nonce, their_rank, our_rank),
                               job_token::bytes_of(received));
}

}  // namespace murmur::fabric::asio::auth
