// The window value: what closing a window yields, merged and serialised.
// The bound under test: sketches are linear, so the merge of windows over any
// split of a stream carries exactly the estimates of one window over all of
// it; serialisation gives back the same value or refuses it whole.
#include "core/measure/window_value.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/measure/flow_measurement.hpp"
#include "core/sketch/serialization.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::core {
namespace {

using flowsketch::testing::expect_same_window;
using flowsketch::testing::skewed_stream;

MeasurementConfig config_with_keys() {
    MeasurementConfig config;
    config.sketch = CountMinParams::for_error(0.01, 0.01, CountMinVariant::kirsch_mitzenmacher);
    config.top_k = 8;
    config.extra_keys = {KeySpec::parse("src/24"), KeySpec::parse("dport")};
    config.track_flows = false;
    return config;
}

WindowValue measure(const MeasurementConfig& config, std::span<const PacketRecord> packets) {
    FlowMeasurement measurement(config);
    measurement.add_batch(packets);
    return measurement.window_value(Window::run);
}

// The candidates' exact counts depend on when a key entered each part's set,
// so the merge's corrected estimates may differ from the whole's (both are
// bounds of the truth: MergedCandidateCountsStayBoundsOfTheTruth); without
// them the lists are the sketch's, which merges exactly.
TEST(WindowValue, MergedSplitsCarryTheSketchOfTheWhole) {
    const MeasurementConfig config = config_with_keys();
    const std::vector<PacketRecord> stream = skewed_stream(60000, 3000, 5);
    const std::span<const PacketRecord> all(stream);
    WindowValue whole = measure(config, all);
    for (KeyWindow& key : whole.keys) key.candidate_counts = {};
    for (const std::size_t cut : {std::size_t{1}, std::size_t{20000}, std::size_t{59999}}) {
        WindowValue merged = measure(config, all.first(cut));
        merged.merge(measure(config, all.subspan(cut)));
        ASSERT_EQ(merged.keys.size(), whole.keys.size());
        for (std::size_t k = 0; k < whole.keys.size(); ++k) {
            const auto a = whole.keys[k].sketch.counters();
            const auto b = merged.keys[k].sketch.counters();
            EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "key " << k << " cut " << cut;
            merged.keys[k].candidate_counts = {};
        }
        const WindowSummary a = whole.summary();
        const WindowSummary b = merged.summary();
        expect_same_window(a, b);
        ASSERT_EQ(a.keys.size(), b.keys.size());
        for (std::size_t k = 0; k < a.keys.size(); ++k) {
            // Every key listed in the whole is listed in the merge, with the same estimate.
            for (const HeavyHitter& row : a.keys[k].top_packets) {
                const auto found = std::find_if(b.keys[k].top_packets.begin(), b.keys[k].top_packets.end(),
                                                [&](const HeavyHitter& other) { return other.key == row.key; });
                ASSERT_NE(found, b.keys[k].top_packets.end()) << "cut " << cut;
                EXPECT_EQ(found->estimate, row.estimate);
                EXPECT_EQ(found->lower, row.lower);
            }
        }
    }
}

// Reports render the measurement's summary; the value's own summary must be
// the same, interval and run, with the lifecycle and extra keys.
TEST(WindowValue, SummaryIsTheMeasurementsSummary) {
    MeasurementConfig config = config_with_keys();
    config.track_flows = true;
    config.lifecycle.idle_timeout_ns = 2'000'000;  // expiries within the stream
    const std::vector<PacketRecord> stream = skewed_stream(30000, 2000, 4);
    FlowMeasurement measurement(config);
    const std::span<const PacketRecord> all(stream);
    measurement.add_batch(all.first(10000));
    measurement.start_new_interval();
    measurement.add_batch(all.subspan(10000));
    for (const Window window : all_windows) {
        const WindowSummary direct = measurement.summary(window);
        const WindowSummary from_value = measurement.window_value(window).summary();
        expect_same_window(direct, from_value);
        EXPECT_EQ(direct.flows.expired_stderr, from_value.flows.expired_stderr);
        ASSERT_EQ(direct.keys.size(), 2u);
        ASSERT_EQ(from_value.keys.size(), 2u);
        for (std::size_t k = 0; k < 2; ++k) {
            flowsketch::testing::expect_same_hitters(direct.keys[k].top_bytes.rows, from_value.keys[k].top_bytes.rows);
        }
    }
}

TEST(WindowValue, SerialisesAndReadsBackTheSameValue) {
    MeasurementConfig config = config_with_keys();
    config.track_flows = true;
    const std::vector<PacketRecord> stream = skewed_stream(20000, 1000, 9);
    FlowMeasurement measurement(config);
    measurement.add_batch(stream);
    WindowValue value = measurement.window_value(Window::interval);
    value.start_ns = 1'700'000'000'000'000'000;
    value.end_ns = value.start_ns + 10'000'000'000;
    value.frames = 20017;
    value.skipped = {{"non_ip", 17}, {"truncated_ip", 0}};
    value.interfaces = {{"eth0", 20017, 20100, 83, 0}};
    const std::vector<std::uint8_t> bytes = value.serialize();
    const WindowValue back = WindowValue::deserialize(bytes);
    expect_same_window(value.summary(), back.summary());
    EXPECT_EQ(back.start_ns, value.start_ns);
    EXPECT_EQ(back.frames, 20017u);
    EXPECT_EQ(back.skipped.size(), 2u);
    EXPECT_EQ(back.skipped[0].name, "non_ip");
    EXPECT_EQ(back.interfaces.at(0).dropped, 83u);
    EXPECT_EQ(back.flows.new_undercount_bound, value.flows.new_undercount_bound);
    EXPECT_EQ(back.serialize(), bytes);
}

// A value made in the storage of an older one (recycled by the sinks) is the
// value made anew, byte for byte: nothing of the older window survives, not
// its counters, candidates, totals or flow counts, and its sketches' memory
// is used again.
TEST(WindowValue, MadeInRecycledStorageIsTheValueMadeAnew) {
    MeasurementConfig config = config_with_keys();
    config.track_flows = true;
    FlowMeasurement measurement(config);
    measurement.add_batch(skewed_stream(20000, 1000, 9));
    WindowValue older = measurement.window_value(Window::interval);
    older.frames = 99;
    older.skipped = {{"non_ip", 5}};
    std::vector<const std::uint64_t*> storage;
    for (const KeyWindow& part : older.keys) storage.push_back(part.sketch.counters().data());
    measurement.start_new_interval();
    measurement.add_batch(skewed_stream(5000, 300, 10));

    const std::vector<std::uint8_t> anew = measurement.window_value(Window::interval).serialize();
    const WindowValue recycled = measurement.window_value(Window::interval, std::move(older));
    EXPECT_EQ(recycled.serialize(), anew);
    ASSERT_EQ(recycled.keys.size(), storage.size());
    for (std::size_t k = 0; k < storage.size(); ++k) EXPECT_EQ(recycled.keys[k].sketch.counters().data(), storage[k]) << k;

    // The run window's lanes have the interval's shape: the same storage serves both.
    const std::vector<std::uint8_t> run = measurement.window_value(Window::run).serialize();
    EXPECT_EQ(measurement.window_value(Window::run, WindowValue(recycled)).serialize(), run);
    // Storage of another configuration is not written into.
    MeasurementConfig other = config_with_keys();
    other.sketch = CountMinParams::for_error(0.02, 0.01, CountMinVariant::kirsch_mitzenmacher);
    FlowMeasurement foreign(other);
    foreign.add_batch(skewed_stream(100, 10, 11));
    EXPECT_EQ(measurement.window_value(Window::interval, foreign.window_value(Window::interval)).serialize(), anew);
}

// Candidates' exact counts merge as lower bounds: every part counted at most
// its own packets of a key. Each row of the merge stays within its truth.
TEST(WindowValue, MergedCandidateCountsStayBoundsOfTheTruth) {
    MeasurementConfig config = config_with_keys();
    config.candidates = 16;  // fewer than the flows: keys enter late and leave
    const std::vector<PacketRecord> stream = skewed_stream(60000, 3000, 11);
    std::map<FlowKey, std::pair<std::uint64_t, std::uint64_t>, bool (*)(const FlowKey&, const FlowKey&)> truth(
        [](const FlowKey& a, const FlowKey& b) { return compare_keys(a, b) < 0; });
    for (const PacketRecord& packet : stream) {
        truth[packet.key].first += 1;
        truth[packet.key].second += packet.wire_length;
    }
    const std::span<const PacketRecord> all(stream);
    const WindowValue first = measure(config, all.first(25000));
    const WindowValue second = measure(config, all.subspan(25000));
    WindowValue merged = first;
    merged.merge(second);
    for (std::size_t w = 0; w < 2; ++w) {
        const KeyWindow& key = merged.keys[0];
        ASSERT_EQ(key.candidate_counts[w].size(), key.candidates[w].size());
        for (std::size_t i = 0; i < key.candidates[w].size(); ++i) {
            const auto counted = truth.at(key.candidates[w][i]);
            const std::uint64_t true_count = w == 0 ? counted.first : counted.second;
            EXPECT_LE(key.candidate_counts[w][i].exact, true_count);
            EXPECT_GE(key.candidate_counts[w][i].upper, true_count);
        }
    }
    const WindowSummary summary = merged.summary();
    for (const TopList* list : {&summary.top_packets, &summary.top_bytes}) {
        ASSERT_FALSE(list->empty());
        for (const HeavyHitter& row : *list) {
            const auto counted = truth.at(row.key);
            const std::uint64_t true_count = list->weight == Weight::packets ? counted.first : counted.second;
            EXPECT_GE(row.estimate, true_count);
            EXPECT_LE(row.lower, true_count);
        }
    }
}

// Values written before candidates carried exact counts (version 3) still
// read: their lists are ranked on the sketch alone.
TEST(WindowValue, ReadsValuesWithoutCandidateCounts) {
    MeasurementConfig config = config_with_keys();
    config.extra_keys.clear();
    WindowValue value = measure(config, skewed_stream(20000, 1000, 9));
    ASSERT_FALSE(value.keys[0].candidate_counts[0].empty());
    for (auto& counts : value.keys[0].candidate_counts) counts.clear();
    const std::vector<std::uint8_t> bytes = value.serialize();
    // Version 4 adds two u32 counts (0 here) after the key's candidate lists,
    // which a value with one key and no flows ends with, before u32 totals.
    constexpr std::size_t header = 24;
    constexpr std::size_t checksum = 8;
    std::vector<std::uint8_t> body(bytes.begin() + header, bytes.end() - checksum);
    ASSERT_EQ(std::vector<std::uint8_t>(body.end() - 12, body.end()), std::vector<std::uint8_t>(12, 0));
    body.erase(body.end() - 12, body.end() - 4);
    const WindowValue old = WindowValue::deserialize(frame_value(SketchKind::window_value, 3, value.hash_seed, body));
    EXPECT_TRUE(old.keys[0].candidate_counts[0].empty());
    EXPECT_EQ(old.keys[0].candidates[1], value.keys[0].candidates[1]);
    expect_same_window(value.summary(), old.summary());
    EXPECT_EQ(old.serialize(), bytes);
}

TEST(WindowValue, DamagedOrForeignBytesAreRefusedWhole) {
    const std::vector<PacketRecord> stream = skewed_stream(2000, 100, 3);
    const std::vector<std::uint8_t> bytes = measure(config_with_keys(), stream).serialize();
    for (const std::size_t at : {std::size_t{0}, std::size_t{4}, std::size_t{30}, bytes.size() / 2, bytes.size() - 1}) {
        std::vector<std::uint8_t> damaged = bytes;
        damaged[at] ^= 0x40;
        EXPECT_THROW(WindowValue::deserialize(damaged), FormatError) << "byte " << at;
    }
    EXPECT_THROW(WindowValue::deserialize(std::span(bytes).first(bytes.size() - 9)), FormatError);
    CountMinSketch sketch(CountMinParams::for_error(0.01, 0.01, CountMinVariant::standard));
    EXPECT_THROW(WindowValue::deserialize(serialize(sketch)), FormatError);
}

TEST(WindowValue, MergeRefusesOtherConfigurations) {
    const std::vector<PacketRecord> stream = skewed_stream(1000, 50, 3);
    MeasurementConfig config = config_with_keys();
    WindowValue a = measure(config, stream);
    MeasurementConfig other_seed = config;
    other_seed.hash_seed ^= 1;
    EXPECT_THROW(a.merge(measure(other_seed, stream)), std::invalid_argument);
    MeasurementConfig other_keys = config;
    other_keys.extra_keys = {KeySpec::parse("dst")};
    EXPECT_THROW(a.merge(measure(other_keys, stream)), std::invalid_argument);
    MeasurementConfig other_width = config;
    other_width.sketch.width = next_prime(other_width.sketch.width + 1);
    EXPECT_THROW(a.merge(measure(other_width, stream)), std::invalid_argument);
    EXPECT_THROW(a.merge(a), std::invalid_argument);
}

// Distinct counts merge by register maximum: the merge of any split carries
// exactly the whole's counts and bounds; the value's summary is the
// measurement's, across an interval close; serialised values read back the same.
TEST(WindowValue, DistinctCountsMergeExactlyAndRoundTrip) {
    MeasurementConfig config = config_with_keys();
    config.extra_keys = {KeySpec::parse("src/24:distinct=dport"), KeySpec::parse("dport:distinct=src")};
    const std::vector<PacketRecord> stream = skewed_stream(40000, 3000, 7);
    const std::span<const PacketRecord> all(stream);
    const WindowValue whole = measure(config, all);
    WindowValue merged = measure(config, all.first(15000));
    merged.merge(measure(config, all.subspan(15000)));
    const WindowSummary a = whole.summary();
    const WindowSummary b = merged.summary();
    ASSERT_TRUE(a.has_distinct_totals);
    EXPECT_EQ(a.distinct_totals.sources.estimate, b.distinct_totals.sources.estimate);
    EXPECT_EQ(a.distinct_totals.flows.upper, b.distinct_totals.flows.upper);
    for (std::size_t k = 0; k < 2; ++k) {
        ASSERT_TRUE(a.keys[k].has_distinct);
        EXPECT_EQ(a.keys[k].distinct_pairs.estimate, b.keys[k].distinct_pairs.estimate);
        ASSERT_FALSE(a.keys[k].top_distinct.list.empty());
        ASSERT_EQ(a.keys[k].top_distinct.list.size(), b.keys[k].top_distinct.list.size());
        for (std::size_t r = 0; r < a.keys[k].top_distinct.list.size(); ++r) {
            EXPECT_EQ(a.keys[k].top_distinct.list[r].key, b.keys[k].top_distinct.list[r].key) << k << " " << r;
            EXPECT_EQ(a.keys[k].top_distinct.distinct[r].estimate, b.keys[k].top_distinct.distinct[r].estimate);
            EXPECT_EQ(a.keys[k].top_distinct.distinct[r].lower, b.keys[k].top_distinct.distinct[r].lower);
        }
    }

    FlowMeasurement measurement(config);
    measurement.add_batch(all.first(20000));
    measurement.start_new_interval();
    measurement.add_batch(all.subspan(20000));
    for (const Window window : all_windows) {
        const WindowSummary direct = measurement.summary(window);
        const WindowValue value = measurement.window_value(window);
        const WindowSummary from_value = value.summary();
        for (std::size_t k = 0; k < 2; ++k) {
            ASSERT_EQ(direct.keys[k].top_distinct.distinct.size(), from_value.keys[k].top_distinct.distinct.size());
            for (std::size_t r = 0; r < direct.keys[k].top_distinct.distinct.size(); ++r) {
                EXPECT_EQ(direct.keys[k].top_distinct.distinct[r].estimate,
                          from_value.keys[k].top_distinct.distinct[r].estimate);
            }
            EXPECT_EQ(direct.keys[k].distinct_pairs.estimate, from_value.keys[k].distinct_pairs.estimate);
        }
        EXPECT_EQ(direct.distinct_totals.destinations.estimate, from_value.distinct_totals.destinations.estimate);
        const std::vector<std::uint8_t> bytes = value.serialize();
        const WindowValue back = WindowValue::deserialize(bytes);
        EXPECT_EQ(back.serialize(), bytes);
        EXPECT_EQ(back.summary().keys[1].distinct_pairs.estimate, from_value.keys[1].distinct_pairs.estimate);
        std::vector<std::uint8_t> damaged = bytes;
        damaged[bytes.size() / 2] ^= 0x10;
        EXPECT_THROW(WindowValue::deserialize(damaged), FormatError);
    }
}

}  // namespace
}  // namespace flowsketch::core
