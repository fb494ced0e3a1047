// Schedule files and the --schedule flag: a good file, every kind of
// malformed line refused with path:line, and the flag forms.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gossip/schedule/schedule_file.h"

namespace murmur::gossip::schedule {
namespace {

ScheduleConfig parse(const std::string& text) {
  std::istringstream in(text);
  return parse_schedule(in, "net.sched");
}

// The error message of parsing `text`, or "" if it parsed.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "";
}

std::string flag_error_of(const std::string& spec) {
  try {
    parse_schedule_flag(spec);
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleFile, GoodFileSetsEveryKnobItNames) {
  const ScheduleConfig c = parse(
      "# a slow network\n"
      "\n"
      "min_ratio = 0.01\n"
      "max_ratio=0.5   # never dense\n"
      "  min_period = 2\n"
      "max_period = 8\n"
      "consensus_guard = 3\n"
      "budget_fraction = 0.9\n"
      "hysteresis = 0\n"
      "guard_cooldown_rounds = 4\n"
      "guard_release_rounds = 50\n"
      "guard_warmup_rounds = 3\n"
      "explore_rounds = 0\n"
      "probe_interval_s = 0.5\n"
      "window = 32\n"
      "change_factor = 4\n"
      "change_run = 2\n"
      "suspect_run = 2\n"
      "change_min_s = 1e-4\n"
      "small_message_bytes = 1024\n"
      "receipts = 0\n"
      "compute_window = 5\n");
  EXPECT_EQ(c.mode, ScheduleMode::kAdaptive);
  EXPECT_EQ(c.source, "@net.sched");
  EXPECT_EQ(c.bounds.min_ratio, 0.01);
  EXPECT_EQ(c.bounds.max_ratio, 0.5);
  EXPECT_EQ(c.bounds.min_period, 2);
  EXPECT_EQ(c.bounds.max_period, 8);
  EXPECT_EQ(c.bounds.consensus_guard, 3);
  EXPECT_EQ(c.bounds.budget_fraction, 0.9);
  EXPECT_EQ(c.bounds.hysteresis, 0);
  EXPECT_EQ(c.bounds.guard_cooldown_rounds, 4);
  EXPECT_EQ(c.bounds.guard_release_rounds, 50);
  EXPECT_EQ(c.guard_warmup_rounds, 3);
  EXPECT_EQ(c.bounds.explore_rounds, 0);
  EXPECT_EQ(c.link.probe_interval_s, 0.5);
  EXPECT_EQ(c.link.window, 32u);
  EXPECT_EQ(c.link.change_factor, 4);
  EXPECT_EQ(c.link.change_run, 2u);
  EXPECT_EQ(c.link.suspect_run, 2u);
  EXPECT_EQ(c.link.change_min_s, 1e-4);
  EXPECT_EQ(c.link.small_message_bytes, 1024);
  EXPECT_EQ(c.compute_window, 5u);
  EXPECT_FALSE(c.receipts);
  EXPECT_TRUE(ScheduleConfig{}.receipts);
  // Every knob is in the table that lists them, and the file above named them all.
  EXPECT_EQ(schedule_settings().size(), 20u);
}

TEST(ScheduleFile, EmptyFileGivesDefaults) {
  const ScheduleConfig c = parse("# nothing\n");
  const ScheduleBounds defaults;
  EXPECT_EQ(c.bounds.min_ratio, defaults.min_ratio);
  EXPECT_EQ(c.bounds.max_period, defaults.max_period);
  EXPECT_EQ(c.link.window, LinkEstimatorOptions{}.window);
}

TEST(ScheduleFile, MalformedLinesAreRefusedWithTheirLine) {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {
      {"min_ratio = 0.1\nmax_period 8\n", "net.sched:2: cannot read 'max_period 8'; expected 'key = value'"},
      {"= 3\n", "net.sched:1: cannot read '= 3'; expected 'key = value'"},
      {"\n\nmax_perod = 8\n", "net.sched:3: unknown key 'max_perod'; known keys: min_ratio, max_ratio"},
      {"window = 8\nwindow = 9\n", "net.sched:2: window given twice (first at line 1)"},
      {"min_ratio =\n", "net.sched:1: min_ratio: missing value"},
      {"min_ratio = 1%\n", "net.sched:1: min_ratio = '1%': not a number"},
      {"min_ratio = fast\n", "net.sched:1: min_ratio = 'fast': not a number"},
      {"min_ratio = inf\n", "net.sched:1: min_ratio = 'inf': not a number"},
      {"max_period = 2.5\n", "net.sched:1: max_period = 2.5: must be an integer"},
      {"min_ratio = 0\n", "net.sched:1: min_ratio = 0: out of range, must be in (0, 1]"},
      {"# c\nmax_ratio = 1.5\n", "net.sched:2: max_ratio = 1.5: out of range, must be in (0, 1]"},
      {"min_period = 0\n", "net.sched:1: min_period = 0: out of range, must be in [1, 1024]"},
      {"receipts = 2\n", "net.sched:1: receipts = 2: out of range, must be in 0 or 1"},
      {"consensus_guard = 0.5\n", "net.sched:1: consensus_guard = 0.5: out of range, must be in 0 (off) or [1, 1e6]"},
      {"min_ratio = 0.5\n\nmax_ratio = 0.1\n", "net.sched:3: min_ratio 0.5 > max_ratio 0.1"},
      {"max_ratio = 0.0001\n", "net.sched:1: min_ratio 0.001 > max_ratio 0.0001"},
      {"max_period = 4\nmin_period = 5\n", "net.sched:2: min_period 5 > max_period 4"},
      {"change_run = 20\n", "net.sched:1: change_run 20 > window 16"},
      {"change_run = 2\nsuspect_run = 3\n", "net.sched:2: suspect_run 3 > change_run 2"},
  };
  for (const auto& c : cases) {
    const std::string error = error_of(c.text);
    EXPECT_EQ(error.rfind(c.error, 0), 0u) << "text:\n" << c.text << "error: " << error;
  }
}

TEST(ScheduleFile, ReadsAFileAndNamesAMissingOne) {
  const std::string path = testing::TempDir() + "schedule_file_test.sched";
  {
    std::ofstream out(path);
    out << "max_period = 4\nbogus = 1\n";
  }
  try {
    read_schedule_file(path);
    ADD_FAILURE() << "bogus key accepted";
  } catch (const ScheduleError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":2: unknown key 'bogus'", 0), 0u) << e.what();
  }
  {
    std::ofstream out(path);
    out << "max_period = 4\n";
  }
  const ScheduleConfig c = parse_schedule_flag("@" + path);
  EXPECT_EQ(c.bounds.max_period, 4);
  EXPECT_EQ(c.source, "@" + path);
  std::remove(path.c_str());
  EXPECT_EQ(flag_error_of("@" + path).rfind(path + ": cannot open schedule file", 0), 0u) << flag_error_of("@" + path);
}

TEST(ScheduleFlag, Forms) {
  EXPECT_EQ(parse_schedule_flag("fixed").mode, ScheduleMode::kFixed);
  const ScheduleConfig a = parse_schedule_flag("adaptive");
  EXPECT_EQ(a.mode, ScheduleMode::kAdaptive);
  EXPECT_EQ(a.bounds.min_ratio, ScheduleBounds{}.min_ratio);
  const ScheduleConfig b = parse_schedule_flag("adaptive:min_ratio=0.01, max_period=8");
  EXPECT_EQ(b.bounds.min_ratio, 0.01);
  EXPECT_EQ(b.bounds.max_period, 8);
  EXPECT_EQ(b.source, "adaptive:min_ratio=0.01, max_period=8");
}

TEST(ScheduleFlag, MalformedFlagsNameTheFlagAndItem) {
  const struct {
    const char* spec;
    const char* error;
  } cases[] = {
      {"adaptiv", "schedule 'adaptiv': expected fixed, adaptive, adaptive:key=value,... or @file"},
      {"fixed:max_period=2", "schedule 'fixed:max_period=2': fixed takes no settings"},
      {"@", "schedule '@': no file name after '@'"},
      {"adaptive:", "schedule 'adaptive:': '': expected key=value"},
      {"adaptive:max_period", "schedule 'adaptive:max_period': 'max_period': expected key=value"},
      {"adaptive:max_period=x", "schedule 'adaptive:max_period=x': max_period = 'x': not a number"},
      {"adaptive:window=4,window=5", "schedule 'adaptive:window=4,window=5': window given twice (first at 'window=4')"},
      {"adaptive:min_ratio=0.5,max_ratio=0.2",
       "schedule 'adaptive:min_ratio=0.5,max_ratio=0.2': min_ratio 0.5 > max_ratio 0.2"},
  };
  for (const auto& c : cases) EXPECT_EQ(flag_error_of(c.spec), c.error) << c.spec;
}

TEST(ScheduleSettings, ListsEveryKnobWithDefaultRangeAndHelp) {
  bool saw_min_ratio = false;
  for (const ScheduleSetting& s : schedule_settings()) {
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_FALSE(s.range.empty()) << s.name;
    // Each default parses back as a valid setting.
    EXPECT_NO_THROW(parse(s.name + " = " + s.default_value + "\n")) << s.name << " = " << s.default_value;
    if (s.name == "min_ratio") {
      saw_min_ratio = true;
      EXPECT_EQ(s.default_value, "0.001");
      EXPECT_EQ(s.type, "real");
    }
  }
  EXPECT_TRUE(saw_min_ratio);
}

}  // namespace
}  // namespace murmur::gossip::schedule
