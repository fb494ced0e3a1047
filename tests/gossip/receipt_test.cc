// The receipt's wire format (gossip/algorithm/receipt.h): what it encodes
// decodes, and everything else is refused with the reason.
#include "gossip/algorithm/receipt.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "gossip/algorithm/communicator.h"

namespace murmur::gossip::detail {
namespace {

const fabric::Tag kTag = make_tag(3, Phase::kChoco, 12345);

std::vector<std::byte> encoded(double seconds) {
  const auto b = encode_receipt(kTag, seconds);
  return {b.begin(), b.end()};
}

TEST(Receipt, RoundTrips) {
  std::string why;
  for (double s : {0.0, 1.5e-6, 0.25, 1e6}) {
    const auto b = encoded(s);
    ASSERT_EQ(b.size(), kReceiptBytes);
    const auto got = decode_receipt(b, kTag, why);
    ASSERT_TRUE(got.has_value()) << why;
    EXPECT_EQ(*got, s);
  }
}

TEST(Receipt, RefusesWhatIsNotAReceiptForThisMessage) {
  std::string why;
  auto b = encoded(0.5);
  EXPECT_FALSE(decode_receipt(std::span(b).first(23), kTag, why));
  EXPECT_EQ(why, "23 bytes, a receipt has 24");
  EXPECT_FALSE(decode_receipt(b, make_tag(3, Phase::kChoco, 12346), why));
  EXPECT_NE(why.find("for tag"), std::string::npos) << why;
  auto bad = b;
  bad[0] = std::byte{0};
  EXPECT_FALSE(decode_receipt(bad, kTag, why));
  EXPECT_EQ(why, "bad magic");
  bad = b;
  bad[4] = std::byte{2};
  EXPECT_FALSE(decode_receipt(bad, kTag, why));
  EXPECT_EQ(why, "version 2, this build reads 1");
  bad = b;
  bad[6] = std::byte{1};
  EXPECT_FALSE(decode_receipt(bad, kTag, why));
  EXPECT_EQ(why, "reserved bits set");
  for (double s : {-1.0, 2e6, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    EXPECT_FALSE(decode_receipt(encoded(s), kTag, why)) << s;
    EXPECT_NE(why.find("is not in [0, 1e6]"), std::string::npos) << why;
  }
}

TEST(Receipt, TagsNeverMatchAMessageOrAnotherReceipt) {
  const fabric::Tag a = make_tag(1, Phase::kChoco, 7), b = make_tag(1, Phase::kDpsgd, 7),
                    c = make_tag(2, Phase::kChoco, 7), d = make_tag(1, Phase::kChoco, 8);
  EXPECT_TRUE(is_receipt_tag(receipt_tag(a)));
  EXPECT_FALSE(is_receipt_tag(a));
  for (fabric::Tag x : {a, b, c, d}) {
    for (fabric::Tag y : {a, b, c, d}) {
      EXPECT_NE(receipt_tag(x), y);
      if (x != y) {
        EXPECT_NE(receipt_tag(x), receipt_tag(y));
      }
    }
  }
  EXPECT_EQ(receipt_tag(a) >> 56, 1u);  // the channel is kept
}

}  // namespace
}  // namespace murmur::gossip::detail
