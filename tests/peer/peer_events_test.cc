// The @murmur event lines between peers and murmur-run (murmur::peer_events):
// round trips, extra keys, and what a malformed line is told.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

TEST(PeerEvents, ViewRoundTripsThroughALine) {
  ViewEvent v{3, 7, 3, {2}, {}, 0.25};
  auto line = format_event(to_json(v));
  EXPECT_EQ(
      line,
      R"(@murmur {"event":"view","generation":7,"joined":[],"lost":[2],"members":3,"rank":3,"spectral_gap":0.25})");
  auto back = view_from_json(parse_event(line));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.generation, 7u);
  EXPECT_EQ(back.members, 3);
  EXPECT_EQ(back.lost, std::vector<int>{2});
  EXPECT_TRUE(back.joined.empty());
  EXPECT_DOUBLE_EQ(back.spectral_gap, 0.25);
  v.spectral_gap = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(parse_event(format_event(to_json(v)))["spectral_gap"].is_null());
  EXPECT_TRUE(std::isnan(view_from_json(parse_event(format_event(to_json(v)))).spectral_gap));
}

TEST(PeerEvents, MalformedViewsSayWhy) {
  auto why = [](const std::string& json_text) {
    try {
      view_from_json(parse_event("@murmur " + json_text));
    } catch (const EventError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = R"({"event":"view","rank":0,"generation":1,"members":)";
  EXPECT_EQ(why(head + R"(3,"lost":[1],"joined":[]})"), "no error");  // spectral_gap is optional
  EXPECT_EQ(why(head + R"(-1,"lost":[],"joined":[]})"), "key 'members' is negative");
  EXPECT_EQ(why(head + R"(3,"lost":1,"joined":[]})"), "key 'lost' is not an array");
  EXPECT_EQ(why(head + R"(3,"lost":[-2],"joined":[]})"), "key 'lost' holds something that is not a rank");
  EXPECT_EQ(why(head + R"(3,"lost":[],"joined":["x"]})"), "key 'joined' holds something that is not a rank");
  EXPECT_EQ(why(R"({"event":"view","rank":0,"generation":-1,"members":3,"lost":[],"joined":[]})"),
            "key 'generation' is negative");
}

}  // namespace
}  // namespace murmur::peer::events
