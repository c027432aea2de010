// Which buckets `query` reads from a rollup: only those whose rollup rows
// count each whole window once, for every (lane, row) of each of its key
// specs in one configuration; consecutive ones as one span per probe.
#include "src/clickhouse_rollups.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace flowsketch::app {
namespace {

constexpr std::int64_t minute = minute_rollup.bucket_ns;
constexpr std::int64_t hour = hour_rollup.bucket_ns;
constexpr std::int64_t t0 = 1'700'000'040'000'000'000;  // a whole minute

// `count` one-second windows of `probe` from `start`, of the key specs `specs`.
void add_windows(std::vector<WindowIdentity>& windows, const std::string& probe, std::int64_t start, int count,
                 const std::vector<std::string>& specs = {"5tuple"}) {
    for (int i = 0; i < count; ++i) windows.push_back(WindowIdentity{probe, start + i * 1'000'000'000LL, specs});
}

std::string fmt_bounds(std::int64_t first, std::int64_t last) {
    return "bucket_ns >= " + std::to_string(first) + " AND bucket_ns <= " + std::to_string(last);
}

// A key spec's rows in a bucket: depth 4, both lanes, each counting `windows`.
RollupSummary exact(const std::string& probe, std::int64_t bucket, std::uint64_t windows,
                    const std::string& spec = "5tuple") {
    return RollupSummary{probe, bucket, spec, 8, 1, 4, windows, windows};
}

TEST(ClickHouseRollups, ConsecutiveExactBucketsOfAProbeAreOneSpan) {
    std::vector<WindowIdentity> windows;
    add_windows(windows, "edge-1", t0, 3);
    add_windows(windows, "edge-1", t0 + minute, 60);
    add_windows(windows, "edge-1", t0 + 2 * minute + 5'000'000'000, 2);
    add_windows(windows, "edge-2", t0 + minute, 7);
    const std::vector<RollupSummary> summaries = {exact("edge-1", t0, 3), exact("edge-1", t0 + minute, 60),
                                                  exact("edge-1", t0 + 2 * minute, 2),
                                                  exact("edge-2", t0 + minute, 7)};
    const std::vector<ProbeSpan> spans = exact_rollup_spans(minute_rollup, windows, summaries, {});
    const std::vector<ProbeSpan> expected = {{"edge-1", t0, t0 + 3 * minute}, {"edge-2", t0 + minute, t0 + 2 * minute}};
    EXPECT_EQ(spans, expected);
}

TEST(ClickHouseRollups, AWindowCountedTwiceOrNotWholeLeavesItsBucketToTheSketchRows) {
    std::vector<WindowIdentity> windows;
    add_windows(windows, "edge-1", t0, 3 * 60);
    std::vector<RollupSummary> summaries = {exact("edge-1", t0, 60), exact("edge-1", t0 + minute, 60),
                                            exact("edge-1", t0 + 2 * minute, 60)};
    summaries[1].most_windows = 61;  // a retried insert's twin, or a window without its `intervals` row
    const std::vector<ProbeSpan> expected = {{"edge-1", t0, t0 + minute}, {"edge-1", t0 + 2 * minute, t0 + 3 * minute}};
    EXPECT_EQ(exact_rollup_spans(minute_rollup, windows, summaries, {}), expected);
    summaries[1].most_windows = 60;
    summaries[1].fewest_windows = 59;  // some rows of a whole window missing
    EXPECT_EQ(exact_rollup_spans(minute_rollup, windows, summaries, {}), expected);
    summaries[1].fewest_windows = 60;
    const std::vector<ProbeSpan> one = {{"edge-1", t0, t0 + 3 * minute}};
    EXPECT_EQ(exact_rollup_spans(minute_rollup, windows, summaries, {}), one);
}

TEST(ClickHouseRollups, ABucketShortOfARowOrAKeySpecOrOfTwoConfigurationsIsNotExact) {
    std::vector<WindowIdentity> windows;
    add_windows(windows, "edge-1", t0, 10, {"5tuple", "src/24"});
    const std::vector<RollupSummary> whole = {exact("edge-1", t0, 10), exact("edge-1", t0, 10, "src/24")};
    ASSERT_EQ(exact_rollup_spans(minute_rollup, windows, whole, {}).size(), 1u);

    std::vector<RollupSummary> summaries = whole;
    summaries[1].groups = 7;  // a lane of a row missing
    EXPECT_TRUE(exact_rollup_spans(minute_rollup, windows, summaries, {}).empty());
    summaries = whole;
    summaries[0].configurations = 2;  // another width or seed in the bucket
    EXPECT_TRUE(exact_rollup_spans(minute_rollup, windows, summaries, {}).empty());
    summaries = {whole[0]};  // a key spec missing
    EXPECT_TRUE(exact_rollup_spans(minute_rollup, windows, summaries, {}).empty());
    summaries = whole;
    summaries.push_back(exact("edge-1", t0, 10, "dst"));  // a key spec of no whole window
    EXPECT_TRUE(exact_rollup_spans(minute_rollup, windows, summaries, {}).empty());
    // Windows of two sets of key specs in one bucket.
    add_windows(windows, "edge-1", t0 + 30'000'000'000, 1, {"5tuple"});
    EXPECT_TRUE(exact_rollup_spans(minute_rollup, windows, whole, {}).empty());
}

TEST(ClickHouseRollups, ABucketWithoutWholeWindowsOrInsideACoarserSpanIsNotRead) {
    std::vector<WindowIdentity> windows;
    const std::int64_t h0 = t0 / hour * hour;
    add_windows(windows, "edge-1", h0, 120);
    add_windows(windows, "edge-1", h0 + hour, 60);
    const std::vector<RollupSummary> summaries = {exact("edge-1", h0, 60), exact("edge-1", h0 + minute, 60),
                                                  exact("edge-1", h0 + hour, 60), exact("edge-2", h0, 5)};
    const std::vector<ProbeSpan> hours = {{"edge-1", h0, h0 + hour}};
    const std::vector<ProbeSpan> expected = {{"edge-1", h0 + hour, h0 + hour + minute}};
    EXPECT_EQ(exact_rollup_spans(minute_rollup, windows, summaries, hours), expected);
}

TEST(ClickHouseRollups, RollupsFitReportsOfWholeMultiplesOfTheirBuckets) {
    EXPECT_TRUE(rollup_fits_reports(minute_rollup, 0));
    EXPECT_TRUE(rollup_fits_reports(minute_rollup, 2 * minute));
    EXPECT_FALSE(rollup_fits_reports(minute_rollup, 90'000'000'000));
    EXPECT_FALSE(rollup_fits_reports(hour_rollup, minute));
    EXPECT_TRUE(rollup_fits_reports(hour_rollup, 24 * hour));
}

TEST(ClickHouseRollups, SummariesAreAskedForBucketsWhollyInsideTheRange) {
    const std::string sql = rollup_summary_sql(minute_rollup, "`f`.`sketch_minute`", t0 + 10, t0 + 3 * minute,
                                               "probe IN ('edge-1')");
    EXPECT_NE(sql.find(fmt_bounds(t0 + 10, t0 + 2 * minute)), std::string::npos) << sql;
    EXPECT_NE(sql.find("AND probe IN ('edge-1')"), std::string::npos) << sql;
    EXPECT_NE(sql.find("FROM `f`.`sketch_minute`"), std::string::npos) << sql;
    // Unbounded: from 1970; a range shorter than a bucket: none.
    const std::string all = rollup_summary_sql(hour_rollup, "t", INT64_MIN, INT64_MAX, "");
    EXPECT_NE(all.find(fmt_bounds(0, INT64_MAX - hour)), std::string::npos) << all;
    EXPECT_NE(rollup_summary_sql(hour_rollup, "t", INT64_MIN, 5, "").find(fmt_bounds(0, -1)), std::string::npos);
}

TEST(ClickHouseRollups, SpansBecomeOneConditionOnAColumn) {
    EXPECT_EQ(spans_condition({}, "start_ns"), "0");
    EXPECT_EQ(spans_condition({{"a", 1, 2}, {"it's", 3, 4}}, "bucket_ns"),
              "((probe = 'a' AND bucket_ns >= 1 AND bucket_ns < 2) OR "
              "(probe = 'it\\'s' AND bucket_ns >= 3 AND bucket_ns < 4))");
}

}  // namespace
}  // namespace flowsketch::app
