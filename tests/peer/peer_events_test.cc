// The @murmur event lines between peers and murmur-run (murmur::peer_events):
// round trips, extra keys, and what a malformed line is told.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "peer/events/peer_events.h"

namespace murmur::peer::events {
namespace {

using nlohmann::json;

TEST(PeerEvents, ProgressRoundTripsThroughALine) {
  ProgressEvent p{3, 2, 5, 120, 600, 0.25, std::nan(""), 123456789012ULL};
  auto line = format_event(to_json(p));
  EXPECT_TRUE(line.starts_with("@murmur {"));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = progress_from_json(parse_event(line));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.epoch, 2);
  EXPECT_EQ(back.epochs, 5);
  EXPECT_EQ(back.step, 120);
  EXPECT_EQ(back.steps, 600);
  EXPECT_DOUBLE_EQ(back.loss, 0.25);
  EXPECT_TRUE(std::isnan(back.accuracy));  // NaN travels as null
  EXPECT_EQ(back.bytes_sent, 123456789012ULL);
}

TEST(PeerEvents, ResultKeepsExtraKeysAndNullAverage) {
  auto event = to_json(ResultEvent{1, 0.8, std::nan(""), 10, 20, 1.5});
  event["model"] = "line one\nline two";
  auto line = format_event(event);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto parsed = parse_event(line);
  EXPECT_EQ(parsed["model"], "line one\nline two");
  EXPECT_TRUE(parsed["average_model_test_accuracy"].is_null());
  auto r = result_from_json(parsed);
  EXPECT_DOUBLE_EQ(r.test_accuracy, 0.8);
  EXPECT_TRUE(std::isnan(r.average_model_test_accuracy));
  EXPECT_EQ(r.bytes_received, 20u);
}

TEST(PeerEvents, MalformedLinesSayWhy) {
  EXPECT_FALSE(is_event_line("@murmurx {}"));
  EXPECT_THROW(format_event(json{{"rank", 1}}), std::invalid_argument);
  auto why = [](const std::string& line) {
    try {
      progress_from_json(parse_event(line));
    } catch (const EventError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(why("@murmur {not json"), "not valid JSON after '@murmur '");
  EXPECT_EQ(why("@murmur [1,2]"), "the JSON after '@murmur ' is not an object");
  EXPECT_EQ(why("@murmur {\"rank\":1}"), "no string \"event\" key");
  EXPECT_EQ(why("@murmur {\"event\":\"progress\",\"rank\":1}"), "missing key 'epoch'");
  EXPECT_EQ(why(R"(@murmur {"event":"progress","rank":1,"epoch":"x"})"), "key 'epoch' is not an integer");
}

}  // namespace
}  // namespace murmur::peer::events
