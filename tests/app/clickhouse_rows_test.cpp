// The INSERT bodies of a batch of windows: every sketch row of every key spec
// and lane, its counters those of the window's sketch, in the sketch_rows
// table's sort order whatever the windows' order (ClickHouse then stores the
// block without sorting it); the candidates in the same order.
#include "src/sinks/clickhouse_rows.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/measure/flow_measurement.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::app {
namespace {

// Reads RowBinary as clickhouse_rows.cpp writes it.
struct RowBinaryReader {
    std::string_view in;
    template <class T>
    T number() {
        T value{};
        EXPECT_GE(in.size(), sizeof(T));
        std::memcpy(&value, in.data(), sizeof(T));
        in.remove_prefix(sizeof(T));
        return value;
    }
    std::uint64_t length() {
        std::uint64_t n = 0;
        for (int shift = 0;; shift += 7) {
            const auto byte = number<std::uint8_t>();
            n |= std::uint64_t{byte & 0x7fu} << shift;
            if ((byte & 0x80u) == 0) return n;
        }
    }
    std::string text() {
        const std::uint64_t n = length();
        std::string value(in.substr(0, n));
        in.remove_prefix(n);
        return value;
    }
};

struct SketchRow {
    std::string probe;
    std::int64_t start_ns = 0;
    std::string spec;
    std::uint8_t lane = 0;
    std::uint16_t row = 0;
    std::uint64_t total = 0;
    std::vector<std::uint64_t> counters;
};

std::vector<SketchRow> read_sketch_rows(std::string_view body) {
    std::vector<SketchRow> rows;
    RowBinaryReader in{body};
    while (!in.in.empty()) {
        SketchRow row;
        in.number<std::uint16_t>();  // day
        row.probe = in.text();
        row.start_ns = in.number<std::int64_t>();
        in.number<std::int64_t>();  // end_ns
        row.spec = in.text();
        row.lane = in.number<std::uint8_t>();
        in.text();                    // variant
        in.number<std::uint32_t>();   // width
        in.number<std::uint16_t>();   // depth
        in.number<std::uint64_t>();   // sketch seed
        in.number<std::uint64_t>();   // hash seed
        in.number<std::uint8_t>();    // conservative
        in.number<double>();          // stated epsilon
        row.row = in.number<std::uint16_t>();
        row.total = in.number<std::uint64_t>();
        row.counters.resize(in.length());
        for (std::uint64_t& counter : row.counters) counter = in.number<std::uint64_t>();
        rows.push_back(std::move(row));
    }
    return rows;
}

// The 5-tuple and one more key spec, without flow tracking.
core::MeasurementConfig config_with_key(const char* spec) {
    core::MeasurementConfig config;
    config.sketch = core::CountMinParams::for_error(0.01, 0.01, core::CountMinVariant::kirsch_mitzenmacher);
    config.extra_keys = {core::KeySpec::parse(spec)};
    config.track_flows = false;
    return config;
}

TEST(ClickHouseRows, SketchRowsAreTheWindowsCountersInTheTablesSortOrder) {
    core::FlowMeasurement measurement(config_with_key("dst"));
    // Three windows handed over out of time order, each with counts of its own.
    std::vector<reports::Snapshot> windows(3);
    const std::int64_t starts[] = {3'000'000'000, 1'000'000'000, 2'000'000'000};
    for (std::size_t w = 0; w < windows.size(); ++w) {
        measurement.add_batch(flowsketch::testing::skewed_stream(500 * (w + 1), 40, static_cast<std::uint32_t>(w)));
        windows[w].value = measurement.window_value(core::Window::interval);
        windows[w].value.start_ns = starts[w];
        windows[w].value.end_ns = starts[w] + 1'000'000'000;
        windows[w].context.probe = "p";
        measurement.start_new_interval();
    }
    ClickHouseRows rows;
    append_clickhouse_rows(windows, rows);
    const std::vector<SketchRow> sketch_rows = read_sketch_rows(rows.sketch_rows);

    const std::size_t keys = windows[0].value.keys.size();
    const std::uint32_t depth = windows[0].value.keys[0].sketch.params().depth;
    ASSERT_EQ(keys, 2u);
    ASSERT_EQ(sketch_rows.size(), windows.size() * keys * 2 * depth);
    for (std::size_t i = 1; i < sketch_rows.size(); ++i) {
        const SketchRow& a = sketch_rows[i - 1];
        const SketchRow& b = sketch_rows[i];
        EXPECT_LT(std::tie(a.spec, a.lane, a.start_ns, a.probe, a.row), std::tie(b.spec, b.lane, b.start_ns, b.probe, b.row))
            << "rows " << i - 1 << " and " << i;
    }
    for (const SketchRow& row : sketch_rows) {
        const reports::Snapshot* window = nullptr;
        for (const reports::Snapshot& w : windows) {
            if (w.value.start_ns == row.start_ns) window = &w;
        }
        ASSERT_NE(window, nullptr);
        const core::KeyWindow* key = nullptr;
        for (const core::KeyWindow& k : window->value.keys) {
            if (k.spec.name() == row.spec) key = &k;
        }
        ASSERT_NE(key, nullptr) << row.spec;
        const core::CountMinSketch& sketch = key->sketch;
        const std::uint32_t width = sketch.params().width;
        const std::uint32_t lanes = sketch.params().lanes;
        EXPECT_EQ(row.total, sketch.total(row.lane));
        ASSERT_EQ(row.counters.size(), width);
        for (std::uint32_t column = 0; column < width; ++column) {
            ASSERT_EQ(row.counters[column],
                      sketch.counters()[(std::size_t{row.row} * width + column) * lanes + row.lane])
                << row.spec << " lane " << int{row.lane} << " row " << row.row << " column " << column;
        }
    }

    // Candidates: one line per candidate, in the same order (key spec, lane, start).
    std::vector<std::tuple<std::string, int, std::int64_t>> order;
    std::size_t candidates = 0;
    for (const reports::Snapshot& w : windows) {
        for (const core::KeyWindow& k : w.value.keys) candidates += k.candidates[0].size() + k.candidates[1].size();
    }
    std::string_view text = rows.candidates;
    while (!text.empty()) {
        const std::string_view line = text.substr(0, text.find('\n'));
        text.remove_prefix(line.size() + 1);
        std::vector<std::string> fields;
        for (std::size_t at = 0;;) {
            const std::size_t tab = line.find('\t', at);
            fields.emplace_back(line.substr(at, tab - at));
            if (tab == std::string_view::npos) break;
            at = tab + 1;
        }
        ASSERT_GE(fields.size(), 6u);
        order.emplace_back(fields[4], std::stoi(fields[5]), std::stoll(fields[2]));
    }
    EXPECT_GT(candidates, 0u);
    EXPECT_EQ(order.size(), candidates);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(ClickHouseRows, RefusesDistinctCountsBeforeAppendingAnything) {
    core::FlowMeasurement measurement(config_with_key("dst:distinct=src"));
    measurement.add_batch(flowsketch::testing::skewed_stream(500, 40, 1));
    std::vector<reports::Snapshot> windows(1);
    windows[0].value = measurement.window_value(core::Window::interval);
    ClickHouseRows rows;
    EXPECT_THROW(append_clickhouse_rows(windows, rows), std::invalid_argument);
    EXPECT_TRUE(rows.sketch_rows.empty());
    EXPECT_TRUE(rows.candidates.empty());
    EXPECT_TRUE(rows.interval.empty());
}

}  // namespace
}  // namespace flowsketch::app
