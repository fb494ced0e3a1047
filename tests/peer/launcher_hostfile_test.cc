// Hostfile and -H parsing (src/peer/launcher/hostfile.h): every accepted
// format, and each kind of malformed line reported with its line number.
#include <gtest/gtest.h>

#include <sstream>

#include "peer/launcher/hostfile.h"

namespace murmur::peer::launcher {
namespace {

std::vector<HostSlots> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_hostfile(in, "hosts.txt");
}

// The message of the HostfileError that parsing `text` throws.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const HostfileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no HostfileError for:\n" << text;
  return "";
}

TEST(Hostfile, ReadsEveryFormatWithCommentsBlanksAndWhitespace) {
  auto hosts = parse(
      "# cluster\n"
      "nodeA slots=4\n"
      "\n"
      "  nodeB:2   # horovod\n"
      "nodeC\n"
      "\tnodeD slots=3 max_slots=8\t\n"
      "user@nodeE max_slots=2 slots=1\n");
  ASSERT_EQ(hosts.size(), 5u);
  EXPECT_EQ(hosts[0].host, "nodeA");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[0].line, 2);
  EXPECT_EQ(hosts[1].host, "nodeB");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[1].line, 4);
  EXPECT_EQ(hosts[2].host, "nodeC");
  EXPECT_EQ(hosts[2].slots, 1);
  EXPECT_EQ(hosts[2].line, 5);
  EXPECT_EQ(hosts[3].host, "nodeD");
  EXPECT_EQ(hosts[3].slots, 3);
  EXPECT_EQ(hosts[4].host, "user@nodeE");
  EXPECT_EQ(hosts[4].slots, 1);
}

TEST(Hostfile, OnlyCommentsAndBlanksIsEmpty) { EXPECT_TRUE(parse("# nothing\n\n   \n").empty()); }

TEST(Hostfile, BadSlotsCountsNameTheLine) {
  EXPECT_EQ(error_of("nodeA slots=2\n\nnodeB slots=x\n"),
            "hosts.txt:3: bad slots count 'x' (expected a whole number from 1 to 65536): 'nodeB slots=x'");
  EXPECT_EQ(error_of("nodeA:0\n"),
            "hosts.txt:1: bad slots count '0' (expected a whole number from 1 to 65536): 'nodeA:0'");
  EXPECT_NE(error_of("nodeA slots=-1\n").find("hosts.txt:1: bad slots count '-1'"), std::string::npos);
  EXPECT_NE(error_of("nodeA slots=\n").find("hosts.txt:1: bad slots count ''"), std::string::npos);
  EXPECT_NE(error_of("nodeA slots=99999999999\n").find("bad slots count"), std::string::npos);
  EXPECT_NE(error_of("nodeA:4x\n").find("hosts.txt:1: bad slots count '4x'"), std::string::npos);
  EXPECT_NE(error_of("nodeA max_slots=z\n").find("hosts.txt:1: bad max_slots"), std::string::npos);
}

TEST(Hostfile, UnknownKeysNameTheLine) {
  EXPECT_EQ(error_of("# c\nnodeA slots=2 gpus=4\n"),
            "hosts.txt:2: unknown key 'gpus' (expected slots or max_slots): 'nodeA slots=2 gpus=4'");
}

TEST(Hostfile, JunkNamesTheLine) {
  EXPECT_EQ(error_of("nodeA 4\n"), "hosts.txt:1: unexpected '4' after the host (expected slots=N): 'nodeA 4'");
  EXPECT_NE(error_of("nodeA:2 slots=2\n").find("hosts.txt:1: unexpected 'slots=2' after the host"), std::string::npos);
  EXPECT_EQ(error_of("slots=4\n"), "hosts.txt:1: missing host name before 'slots=4': 'slots=4'");
  EXPECT_EQ(error_of("x\n:4\n"), "hosts.txt:2: missing host name: ':4'");
  EXPECT_EQ(error_of("node$A\n"), "hosts.txt:1: bad host name 'node$A': 'node$A'");
  EXPECT_EQ(error_of("nodeA slots=1 slots=2\n"), "hosts.txt:1: slots given twice: 'nodeA slots=1 slots=2'");
}

TEST(Hostfile, TheQuotedLineDropsOnlySurroundingWhitespace) {
  EXPECT_EQ(error_of("   nodeA   slots=q   \n"),
            "hosts.txt:1: bad slots count 'q' (expected a whole number from 1 to 65536): 'nodeA   slots=q'");
}

TEST(Hostfile, MissingFileNamesThePath) {
  try {
    read_hostfile("/nonexistent/hosts.txt");
    FAIL() << "no error";
  } catch (const HostfileError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/hosts.txt: cannot read hostfile: No such file or directory");
  }
}

TEST(HostList, ReadsTheDashHForm) {
  auto hosts = parse_host_list("h1:4, h2:2,h3");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "h1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].host, "h2");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[1].line, 2);
  EXPECT_EQ(hosts[2].host, "h3");
  EXPECT_EQ(hosts[2].slots, 1);
}

TEST(HostList, ErrorsNameTheItem) {
  auto message = [](const std::string& list) {
    try {
      parse_host_list(list);
    } catch (const HostfileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("h1:4,h2:x"), "-H:2: bad slots count 'x' (expected a whole number from 1 to 65536): 'h2:x'");
  EXPECT_EQ(message("h1:4,,h2"), "-H:2: empty host: ''");
  EXPECT_EQ(message("h1 slots=2"), "-H:1: unexpected space (expected host or host:N): 'h1 slots=2'");
}

}  // namespace
}  // namespace murmur::peer::launcher
