// Which heavy-hitter series the Prometheus endpoint keeps: by key, for a
// staleness after a key left the top, never more than the cap.
#include "reports/heavy_hitter_series.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace flowsketch::reports {
namespace {

core::HeavyHitter flow(std::uint32_t host, std::uint64_t estimate, std::uint64_t lower) {
    return core::HeavyHitter{core::FlowKey::ipv4(0x0A000000 + host, 0x0A0000FE, 1000, 53, 17),
                             estimate, lower};
}

std::string labels_of(std::uint32_t host) {
    return heavy_hitter_labels(flow(host, 0, 0), core::KeySpec::five_tuple());
}

core::TopList top(std::vector<core::HeavyHitter> rows) {
    return core::TopList{core::KeySpec::five_tuple(), core::Weight::packets, 1000, std::move(rows)};
}

std::map<std::string, HeavyHitterSeries::Row> by_labels(const HeavyHitterSeries& series) {
    std::map<std::string, HeavyHitterSeries::Row> rows;
    for (const auto& row : series.rows())
        EXPECT_TRUE(rows.emplace(row.labels, row).second) << row.labels;
    return rows;
}

TEST(HeavyHitterSeries, LabelsAreTheKeysFieldsWithoutRank) {
    EXPECT_EQ(labels_of(7),
              R"({src="10.0.0.7",dst="10.0.0.254",sport="1000",dport="53",proto="udp"})");
    const core::KeySpec spec = core::KeySpec::parse("dst/24");
    EXPECT_EQ(heavy_hitter_labels(core::HeavyHitter{spec.apply(flow(7, 0, 0).key), 1, 0}, spec),
              R"({key="dst/24,64",dst="10.0.0.0/24"})");
}

TEST(HeavyHitterSeries, AKeyKeepsOneSeriesAcrossRankChanges) {
    HeavyHitterSeries series(10, 3, 1000);
    const core::TopList first = top({flow(1, 50, 45), flow(2, 40, 35)});
    const core::TopList second = top({flow(2, 60, 55), flow(1, 30, 25)});
    series.observe({&first});
    series.observe({&second});
    const auto rows = by_labels(series);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows.at(labels_of(2)).rank, 1u);
    EXPECT_EQ(rows.at(labels_of(2)).estimate, 60u);
    EXPECT_EQ(rows.at(labels_of(1)).rank, 2u);
    EXPECT_EQ(rows.at(labels_of(1)).lower, 25u);
    // Rows in rank order.
    EXPECT_EQ(series.rows().front().labels, labels_of(2));
}

TEST(HeavyHitterSeries, AKeyThatLeftTheTopStaysForTheStalenessAtTheFloorThenEnds) {
    HeavyHitterSeries series(2, 2, 1000);
    const core::TopList with_key = top({flow(1, 90, 80), flow(2, 50, 40)});
    series.observe({&with_key});
    const core::TopList without =
        top({flow(3, 70, 60), flow(2, 20, 10), flow(4, 5, 0)});  // host 4: beyond 2
    for (int interval = 1; interval <= 2; ++interval) {
        series.observe({&without});
        const auto rows = by_labels(series);
        ASSERT_EQ(rows.size(), 3u) << interval;
        const HeavyHitterSeries::Row& left = rows.at(labels_of(1));
        EXPECT_EQ(left.rank, 0u);
        EXPECT_EQ(left.estimate, 20u);  // the smallest exported estimate bounds its count
        EXPECT_EQ(left.lower, 0u);
        EXPECT_EQ(rows.count(labels_of(4)), 0u);
        EXPECT_EQ(series.rows().back().labels, labels_of(1));  // after the current top
    }
    series.observe({&without});  // the third interval without it: gone
    const auto rows = by_labels(series);
    EXPECT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows.count(labels_of(1)), 0u);
    // Back in the top: the same series again.
    series.observe({&with_key});
    EXPECT_EQ(by_labels(series).at(labels_of(1)).rank, 1u);
}

TEST(HeavyHitterSeries, AnEmptyTopExportsLeftKeysAtZero) {
    HeavyHitterSeries series(10, 1, 1000);
    const core::TopList busy = top({flow(1, 9, 8)});
    const core::TopList silent = top({});
    series.observe({&busy});
    series.observe({&silent});
    const auto rows = series.rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].estimate, 0u);
    EXPECT_EQ(rows[0].rank, 0u);
}

TEST(HeavyHitterSeries, NeverMoreThanTheCapAndTheTopGoesFirst) {
    HeavyHitterSeries series(10, 100, 15);
    std::size_t most = 0;
    for (std::uint32_t interval = 0; interval < 20; ++interval) {
        std::vector<core::HeavyHitter> rows;
        for (std::uint32_t i = 0; i < 10; ++i)
            rows.push_back(flow(interval * 10 + i, 100 - i, 90 - i));
        const core::TopList list = top(rows);
        series.observe({&list});
        most = std::max(most, series.size());
        // The current top is always whole, in rank order, before the rest.
        const auto exported = series.rows();
        ASSERT_GE(exported.size(), 10u);
        for (std::size_t i = 0; i < 10; ++i) {
            EXPECT_EQ(exported[i].rank, i + 1);
            EXPECT_EQ(exported[i].labels, labels_of(interval * 10 + static_cast<std::uint32_t>(i)));
        }
    }
    EXPECT_EQ(most, 15u);
    // Of the previous interval's keys, the best ranked stay.
    const auto rows = by_labels(series);
    EXPECT_EQ(rows.count(labels_of(180)), 1u);
    EXPECT_EQ(rows.count(labels_of(184)), 1u);
    EXPECT_EQ(rows.count(labels_of(185)), 0u);
}

TEST(HeavyHitterSeries, CapBelowTheTopKeepsTheBestRanksOfEveryList) {
    HeavyHitterSeries series(10, 3, 3);
    const core::KeySpec spec = core::KeySpec::parse("dst/24");
    const core::TopList five_tuple = top({flow(1, 9, 8), flow(2, 8, 7), flow(3, 7, 6)});
    const core::TopList keyed{spec,
                              core::Weight::packets,
                              100,
                              {core::HeavyHitter{spec.apply(flow(1, 0, 0).key), 30, 20}}};
    series.observe({&five_tuple, &keyed});
    const auto rows = series.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].labels, labels_of(1));
    EXPECT_EQ(rows[1].labels, labels_of(2));
    EXPECT_EQ(rows[2].list, 1u);  // rank 1 of the second list beats rank 3 of the first
}

}  // namespace
}  // namespace flowsketch::reports
