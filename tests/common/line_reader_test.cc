#include "common/line_reader.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace murmur {
namespace {

std::vector<Line> all_lines(LineReader& reader) {
  std::vector<Line> lines;
  for (Line line; reader.next(line);) lines.push_back(line);
  return lines;
}

TEST(Text, TrimStripsWhitespaceOnBothEnds) {
  EXPECT_EQ(trim("  a b \t\r"), "a b");
  EXPECT_EQ(trim("\f\va\n"), "a");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim(""), "");
}

TEST(Text, StripCommentCutsAtTheFirstCommentCharacter) {
  EXPECT_EQ(strip_comment("a b # c # d", '#'), "a b ");
  EXPECT_EQ(strip_comment("a ; b", ';'), "a ");
  EXPECT_EQ(strip_comment("no comment", '#'), "no comment");
}

TEST(Text, SplitWordsOnAnyWhitespace) {
  EXPECT_EQ(split_words("  nodes\t8  x=1 \r"), (std::vector<std::string>{"nodes", "8", "x=1"}));
  EXPECT_TRUE(split_words(" \t ").empty());
}

TEST(Text, ParseNumberTakesTheWholeTextOnly) {
  int i = 0;
  EXPECT_TRUE(parse_number("42", i));
  EXPECT_EQ(i, 42);
  EXPECT_TRUE(parse_number("-7", i));
  EXPECT_EQ(i, -7);
  for (const char* bad : {"", " 1", "1 ", "1x", "0x10", "1.5", "99999999999"}) {
    EXPECT_FALSE(parse_number(bad, i)) << bad;
  }
  std::uint8_t small = 0;
  EXPECT_FALSE(parse_number("256", small));
  double d = 0;
  EXPECT_TRUE(parse_number("1e-3", d));
  EXPECT_DOUBLE_EQ(d, 1e-3);
  EXPECT_TRUE(parse_number("-0.25", d));
  EXPECT_DOUBLE_EQ(d, -0.25);
  for (const char* bad : {"", "inf", "nan", "-inf", "1e999", "1.5.2", "2ms"}) {
    EXPECT_FALSE(parse_number(bad, d)) << bad;
  }
}

TEST(LineReader, SkipsBlankAndCommentLinesAndNumbersFromOne) {
  LineReader reader("# header\n\n  nodes 8  # eight\r\n\t\nedge 0 1\nlast", "g.topo");
  const auto lines = all_lines(reader);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].number, 3);
  EXPECT_EQ(lines[0].text, "nodes 8");
  EXPECT_EQ(lines[0].raw, "  nodes 8  # eight\r");
  EXPECT_EQ(lines[0].words(), (std::vector<std::string>{"nodes", "8"}));
  EXPECT_EQ(lines[1].number, 5);
  EXPECT_EQ(lines[2].number, 6);
  EXPECT_EQ(lines[2].text, "last");  // no final line break
  EXPECT_EQ(reader.lines_read(), 6);
}

TEST(LineReader, CountsLinesLikeGetline) {
  for (const auto& [text, count] :
       std::vector<std::pair<std::string, int>>{{"", 0}, {"\n", 1}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"a\n\n", 2}}) {
    LineReader reader(text, "x");
    all_lines(reader);
    EXPECT_EQ(reader.lines_read(), count) << "'" << text << "'";
  }
}

TEST(LineReader, UsesTheFormatsCommentCharacter) {
  LineReader reader("a # not a comment ; but this is\n;only\n", "x", {.comment = ';'});
  const auto lines = all_lines(reader);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "a # not a comment");
}

TEST(ParseError, MessageNamesPathAndLine) {
  const ParseError located("hosts.txt", 3, "bad slots");
  EXPECT_STREQ(located.what(), "hosts.txt:3: bad slots");
  EXPECT_EQ(located.path(), "hosts.txt");
  EXPECT_EQ(located.line(), 3);
  EXPECT_EQ(located.reason(), "bad slots");
  EXPECT_STREQ(ParseError("hosts.txt", 0, "names no hosts").what(), "hosts.txt: names no hosts");
  EXPECT_STREQ(ParseError("", 0, "ring of 1 node").what(), "ring of 1 node");
}

struct FormatError : ParseError {
  using ParseError::ParseError;
};

TEST(LineReader, FailThrowsTheFormatsErrorType) {
  LineReader reader("x\n", "f.txt", {.raise = &raise_as<FormatError>});
  try {
    reader.fail(1, "unknown keyword 'x'");
    FAIL() << "fail() returned";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "f.txt:1: unknown keyword 'x'");
    EXPECT_EQ(e.line(), 1);
  }
}

TEST(LineReader, WholeNumberSaysWhatIsWrong) {
  LineReader reader("", "c.cluster");
  EXPECT_EQ(reader.whole_number(2, "16", "gpus", 1, 1024), 16);
  for (const char* bad : {"0", "1025", "1.5", "x", ""}) {
    try {
      reader.whole_number(2, bad, "gpus", 1, 1024);
      ADD_FAILURE() << bad;
    } catch (const ParseError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("c.cluster:2: gpus '") + bad + "' is not a whole number from 1 to 1024");
    }
  }
}

TEST(LineReader, FromStreamReadsEverything) {
  std::istringstream in("a\n\nb # c\n");
  LineReader reader = LineReader::from_stream(in, "<stdin>");
  const auto lines = all_lines(reader);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].text, "b");
  EXPECT_EQ(lines[1].number, 3);
}

TEST(LineReader, FromFileReadsAFileAndNamesOneItCannotRead) {
  const auto dir = std::filesystem::temp_directory_path() / ("murmur_line_reader_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "f.txt").string();
  std::ofstream(path) << "one\n# two\nthree\n";
  LineReader reader = LineReader::from_file(path, "cannot read test file");
  const auto lines = all_lines(reader);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].text, "three");
  EXPECT_EQ(lines[1].number, 3);

  try {
    LineReader::from_file(path + ".missing", "cannot read test file", {.raise = &raise_as<FormatError>});
    ADD_FAILURE() << "no error for a missing file";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), path + ".missing: cannot read test file: No such file or directory");
    EXPECT_EQ(e.line(), 0);
  }
  try {
    LineReader::from_file(dir.string(), "cannot read test file");
    ADD_FAILURE() << "no error for a directory";
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": cannot read test file: is a directory");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace murmur
