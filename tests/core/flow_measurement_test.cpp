// FlowMeasurement: the per-packet path and what its summaries promise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/measure/flow_measurement.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::core {
namespace {

using flowsketch::testing::expect_same_windows;
using flowsketch::testing::flow_key;
using flowsketch::testing::skewed_stream;

MeasurementConfig small_config(std::uint32_t width, std::uint32_t depth) {
    MeasurementConfig config;
    config.sketch.variant = CountMinVariant::kirsch_mitzenmacher;
    config.sketch.width = width;
    config.sketch.depth = depth;
    config.top_k = 5;
    config.track_flows = false;
    return config;
}

// A light flow that shares every sketch cell with a heavy one gets the heavy
// one's Count-Min estimate; selection would make it a phantom heavy hitter
// with a false lower bound. Both are flagged; the candidates' exact counts
// tell them apart: each is estimated as the cells less the other's exact
// count, and its lower bound is its own exact count.
TEST(FlowMeasurement, FlowsSharingEveryCellAreFlaggedAndToldApartByExactCounts) {
    const MeasurementConfig config = small_config(11, 3);
    FlowMeasurement measurement(config);
    CountMinSketch probe(measurement.sketch_params());
    const auto columns = [&](const FlowKey& key) {
        const Hash128 h = hash_key(key, config.hash_seed);
        return std::vector<std::uint32_t>{probe.column(h, 0), probe.column(h, 1), probe.column(h, 2)};
    };
    // With w = 11 a pair sharing all cells turns up within a few hundred keys.
    const FlowKey heavy = flow_key(0);
    FlowKey twin = heavy;
    for (std::uint32_t i = 1; i < 100000; ++i) {
        if (columns(flow_key(i)) == columns(heavy)) {
            twin = flow_key(i);
            break;
        }
    }
    ASSERT_FALSE(twin == heavy) << "no twin found";
    for (int i = 0; i < 1000; ++i) measurement.add(PacketRecord{heavy, i, 100, 0});
    measurement.add(PacketRecord{twin, 1000, 100, 0});
    const WindowSummary summary = measurement.summary(core::Window::run);
    ASSERT_EQ(summary.top_packets.size(), 2u);
    const HeavyHitter& first = summary.top_packets[0];
    const HeavyHitter& second = summary.top_packets[1];
    EXPECT_EQ(first.key, heavy);
    EXPECT_EQ(second.key, twin);
    EXPECT_TRUE(first.shares_cells);
    EXPECT_TRUE(second.shares_cells);
    EXPECT_EQ(first.estimate, 1000u);  // the cells' 1,001 less the twin's exact 1
    EXPECT_EQ(first.lower, 1000u);
    EXPECT_EQ(second.estimate, 1u);
    EXPECT_EQ(second.lower, 1u);
}

TEST(FlowMeasurement, DistinctCellsKeepTheirLowerBound) {
    FlowMeasurement measurement(small_config(1009, 4));
    for (int i = 0; i < 500; ++i) measurement.add(PacketRecord{flow_key(1), i, 60, 0});
    for (int i = 0; i < 100; ++i) measurement.add(PacketRecord{flow_key(2), i, 60, 0});
    const WindowSummary summary = measurement.summary(core::Window::run);
    ASSERT_EQ(summary.top_packets.size(), 2u);
    EXPECT_FALSE(summary.top_packets[0].shares_cells);
    EXPECT_EQ(summary.top_packets[0].estimate, 500u);
    EXPECT_GT(summary.top_packets[0].lower, 0u);
    EXPECT_LE(summary.top_packets[0].lower, 500u);
}

// Memory is fixed by configuration: a million distinct flows change nothing.
TEST(FlowMeasurement, MemoryDoesNotGrowWithFlows) {
    MeasurementConfig config;
    config.sketch = CountMinParams::for_error(0.001, 0.001, CountMinVariant::kirsch_mitzenmacher);
    config.lifecycle.max_flows = 100'000;
    FlowMeasurement measurement(config);
    const std::size_t before = measurement.memory_bytes();
    std::vector<PacketRecord> batch;
    for (std::uint32_t i = 0; i < 1'000'000; ++i) {
        batch.push_back(PacketRecord{flow_key(i), std::int64_t{i} * 1000, 64, 0x02});
        if (batch.size() == 256) {
            measurement.add_batch(batch);
            batch.clear();
        }
    }
    EXPECT_EQ(measurement.memory_bytes(), before);
    const WindowSummary summary = measurement.summary(core::Window::run);
    EXPECT_EQ(summary.packets, 1'000'000u - 1'000'000u % 256);
    EXPECT_TRUE(summary.flows.overfilled);
}

// The footprint a command line checks before allocating is what gets allocated.
TEST(FlowMeasurement, FootprintPredictsTheAllocation) {
    for (const SeenFilterKind kind :
         {SeenFilterKind::blocked, SeenFilterKind::standard, SeenFilterKind::two_choice}) {
        for (const bool recent : {true, false}) {
            MeasurementConfig config;
            config.sketch = CountMinParams::for_error(0.0005, 0.01, CountMinVariant::kirsch_mitzenmacher);
            config.lifecycle.kind = kind;
            config.lifecycle.max_flows = 300'000;
            config.lifecycle.recent_flow_table = recent;
            const FlowMeasurement::Footprint planned = FlowMeasurement::footprint(config);
            const FlowMeasurement measurement(config);
            SCOPED_TRACE(std::string(seen_filter_kind_name(kind)) + (recent ? " recent" : ""));
            EXPECT_EQ(planned.lifecycle_bytes, measurement.lifecycle()->memory_bytes());
            const CountMinParams& p = measurement.sketch_params();
            // Four lanes (interval and run, packets and bytes) and the previous interval's two.
            EXPECT_EQ(planned.sketch_bytes, std::uint64_t{p.width} * p.depth * 6 * 8);
            EXPECT_LE(planned.sketch_bytes, measurement.sketch_memory_bytes());
            EXPECT_GT(planned.sketch_bytes, measurement.sketch_memory_bytes() * 99 / 100);
        }
    }
    // The rest (candidate sets, aggregation cache, scratch) exactly, for a few
    // --top and cache sizes: with the lifecycle's and the sketch's own shares,
    // the footprint is the memory_bytes the reports print.
    for (const std::uint32_t top : {1u, 10u, 1000u}) {
        for (const std::uint32_t slots : {0u, 1024u, 8192u}) {
            MeasurementConfig config;
            config.sketch = CountMinParams::for_error(0.001, 0.001, CountMinVariant::kirsch_mitzenmacher);
            config.top_k = top;
            config.aggregation_slots = slots;
            config.lifecycle.max_flows = 10'000;
            const FlowMeasurement measurement(config);
            const std::uint64_t rest = measurement.memory_bytes() - measurement.sketch_memory_bytes() -
                                       measurement.lifecycle()->memory_bytes();
            const FlowMeasurement::Footprint planned = FlowMeasurement::footprint(config);
            EXPECT_EQ(planned.candidate_bytes + planned.fixed_bytes, rest)
                << "top " << top << ", " << slots << " slots";
        }
    }
    MeasurementConfig untracked;
    untracked.sketch = CountMinParams::for_error(0.001, 0.001, CountMinVariant::standard);
    untracked.track_flows = false;
    EXPECT_EQ(FlowMeasurement::footprint(untracked).lifecycle_bytes, 0u);
    const FlowMeasurement::Footprint heavy_hitters_only = FlowMeasurement::footprint(untracked);
    EXPECT_EQ(heavy_hitters_only.candidate_bytes + heavy_hitters_only.fixed_bytes,
              FlowMeasurement(untracked).memory_bytes() -
                  FlowMeasurement(untracked).sketch_memory_bytes());
    untracked.lifecycle.target_fpr = 2.0;  // not validated when not tracked
    EXPECT_NO_THROW(FlowMeasurement::footprint(untracked));
    MeasurementConfig bad;
    bad.sketch = untracked.sketch;
    bad.lifecycle.target_fpr = 2.0;
    EXPECT_THROW(FlowMeasurement::footprint(bad), std::invalid_argument);
}

// Feeds `stream` in batches of pseudo-random sizes (1 = packet by packet),
// closing an interval every `interval` packets; returns every summary.
std::vector<WindowSummary> run(FlowMeasurement& m, const std::vector<PacketRecord>& stream,
                               std::size_t max_batch, std::size_t interval, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<WindowSummary> summaries;
    std::size_t at = 0;
    while (at < stream.size()) {
        const std::size_t end = std::min(stream.size(), (at / interval + 1) * interval);
        while (at < end) {
            const std::size_t n = std::min(end - at, 1 + rng() % max_batch);
            m.add_batch(std::span<const PacketRecord>(&stream[at], n));
            at += n;
        }
        summaries.push_back(m.summary(core::Window::interval));
        m.start_new_interval();
    }
    summaries.push_back(m.summary(core::Window::run));
    return summaries;
}

// The standard update is additive, so summing packets in the aggregation cache
// leaves every counter as per-packet updates do; with candidates for every
// flow, the reports are then the same too, and the lifecycle's counts
// (generations of 5 ms: the 120 ms stream crosses 24 boundaries, and light
// flows expire) are those of observing every packet.
TEST(FlowMeasurement, AggregationCacheLeavesEveryCounterAsPerPacketUpdates) {
    const auto stream = skewed_stream(120'000, 3000, 11);
    // 64 slots: flows are displaced all the time; 4096: the heavy ones stay.
    for (const auto& [variant, slots] : {std::pair{CountMinVariant::kirsch_mitzenmacher, 64u},
                                        std::pair{CountMinVariant::standard, 64u},
                                        std::pair{CountMinVariant::kirsch_mitzenmacher, 4096u}}) {
        SCOPED_TRACE(slots);
        MeasurementConfig config = small_config(1009, 4);
        config.sketch.variant = variant;
        config.top_k = 20;
        config.candidates = 4096;  // every flow fits: selection cannot differ
        config.track_flows = true;
        config.lifecycle.max_flows = 10'000;
        config.lifecycle.idle_timeout_ns = 20'000'000;
        config.lifecycle.generations = 4;
        MeasurementConfig direct = config;
        direct.aggregation_slots = 0;
        direct.lifecycle.recent_flow_table = false;  // every packet reads its cells
        config.aggregation_slots = slots;
        FlowMeasurement cached(config), uncached(direct);
        const auto a = run(cached, stream, 300, 40'000, 1);
        expect_same_windows(a, run(uncached, stream, 1, 40'000, 2));
        cached.flush_pending();
        const auto ca = cached.sketch().counters();
        const auto cb = uncached.sketch().counters();
        ASSERT_EQ(ca.size(), cb.size());
        EXPECT_TRUE(std::equal(ca.begin(), ca.end(), cb.begin()));
        const auto ta = cached.sketch().totals();
        const auto tb = uncached.sketch().totals();
        EXPECT_TRUE(std::equal(ta.begin(), ta.end(), tb.begin()));
        EXPECT_GT(a.back().top_packets.front().estimate, 1000u) << "the stream has a heavy head";
        EXPECT_GT(a.back().flows.expired, 100.0) << "flows expire";
        EXPECT_GT(a.back().flows.ended, 100u) << "flows end";
    }
}

// A packet summed into a pending cache entry skips the lifecycle, which is
// exact only while the entry's first packet is in the current generation:
// time passed without packets (a live capture's idle timer) must drain the
// cache too, or a flow still pending there would never be refreshed again.
TEST(FlowMeasurement, IdleTimeDrainsTheCacheForTheLifecycle) {
    MeasurementConfig config = small_config(1009, 4);
    config.track_flows = true;
    config.lifecycle.max_flows = 1000;
    config.lifecycle.idle_timeout_ns = 20'000'000;
    config.lifecycle.generations = 4;
    MeasurementConfig direct = config;
    direct.aggregation_slots = 0;
    FlowMeasurement cached(config), uncached(direct);
    for (FlowMeasurement* m : {&cached, &uncached}) {
        const auto packet = [&](std::int64_t ms) {
            m->add(PacketRecord{flow_key(1), ms * 1'000'000, 100, 0x10});
        };
        packet(0);
        packet(1);
        m->advance_to(8'000'000);  // a boundary (P = 5 ms): flow 1 is pending, not refreshed
        packet(9);                 // refreshes it in the new generation
        m->advance_to(26'000'000);
        packet(27);                // active: 18 ms since its last packet, under T
        m->advance_to(60'000'000);
        packet(61);                // expired: 34 ms since its last packet
    }
    const WindowSummary a = cached.summary(core::Window::run);
    const WindowSummary b = uncached.summary(core::Window::run);
    EXPECT_EQ(b.flows.new_flows, 2u);
    EXPECT_EQ(a.flows.new_flows, b.flows.new_flows);
    EXPECT_EQ(a.flows.active, b.flows.active);
    EXPECT_EQ(a.flows.expired, b.flows.expired);
}

// The sketch and the candidates see the displaced entries in the order of
// the packets, whatever the batches: reports do not depend on how a stream is
// cut (the two-thread pipeline cuts it differently), even when the candidate
// set is too small to hold every flow.
TEST(FlowMeasurement, ReportsDoNotDependOnBatchSizes) {
    const auto stream = skewed_stream(100'000, 20'000, 12);
    MeasurementConfig config = small_config(499, 3);
    config.top_k = 8;
    config.candidates = 8;
    config.track_flows = true;
    config.lifecycle.max_flows = 50'000;
    config.lifecycle.idle_timeout_ns = 20'000'000;
    config.aggregation_slots = 256;
    FlowMeasurement one_by_one(config), batched(config);
    expect_same_windows(run(one_by_one, stream, 1, 30'000, 3),
                        run(batched, stream, 2048, 30'000, 4));
}

// With the conservative update the cache changes cells (the update is not
// additive) but every estimate stays between the truth and the standard one.
TEST(FlowMeasurement, ConservativeUpdateWithTheCacheStaysAnUpperBound) {
    const auto stream = skewed_stream(60'000, 2000, 13);
    MeasurementConfig config = small_config(211, 3);
    config.top_k = 30;
    config.candidates = 4096;
    MeasurementConfig standard = config;
    config.sketch.conservative_update = true;
    config.aggregation_slots = 32;
    FlowMeasurement conservative(config), plain(standard);
    std::map<std::uint32_t, std::uint64_t> truth;
    for (const auto& p : stream) ++truth[p.key.src[3] | (std::uint32_t{p.key.src[2]} << 8)];
    conservative.add_batch(stream);
    plain.add_batch(stream);
    const WindowSummary cu = conservative.summary(core::Window::run);
    plain.flush_pending();
    for (const HeavyHitter& h : cu.top_packets) {
        const std::uint64_t exact = truth[h.key.src[3] | (std::uint32_t{h.key.src[2]} << 8)];
        EXPECT_GE(h.estimate, exact);
        EXPECT_LE(h.estimate, plain.sketch().estimate(hash_key(h.key, config.hash_seed),
                                                      lane_of(Window::run, Weight::packets)));
    }
}

// Extra key specs count the same packets in the same pass, each under its own
// mask: a destination's estimate is at least its packets over every flow to
// it, the 5-tuple lists are those of a measurement without extra keys, and
// every list carries its spec and window total.
TEST(FlowMeasurement, ExtraKeySpecsCountTheSamePacketsUnderTheirMasks) {
    MeasurementConfig config = small_config(1009, 4);
    config.top_k = 10;
    config.track_flows = true;
    MeasurementConfig with_keys = config;
    with_keys.extra_keys = {KeySpec::parse("dst"), KeySpec::parse("dst/24"), KeySpec::parse("dport")};
    std::vector<PacketRecord> stream = skewed_stream(50000, 2000, 7);
    for (PacketRecord& packet : stream) {  // 97 destinations in two /24s, several flows each
        const std::uint32_t flow = packet.key.src[3] | (std::uint32_t{packet.key.src[2]} << 8);
        packet.key = FlowKey::ipv4(0x0a000000u + flow, 0xC6336400u + (flow % 97) * 3, 4000, 443, 6);
    }
    std::map<std::array<std::uint8_t, 16>, std::uint64_t> per_dst;
    for (const PacketRecord& packet : stream) ++per_dst[packet.key.dst];
    FlowMeasurement plain(config);
    FlowMeasurement keyed(with_keys);
    plain.add_batch(stream);
    keyed.add_batch(stream);
    const WindowSummary a = plain.summary(Window::run);
    const WindowSummary b = keyed.summary(Window::run);
    expect_same_windows({a}, {b});
    ASSERT_EQ(b.keys.size(), 3u);
    const TopList& by_dst = b.keys[0].top_packets;
    EXPECT_EQ(by_dst.spec, KeySpec::parse("dst"));
    EXPECT_EQ(by_dst.total, stream.size());
    ASSERT_FALSE(by_dst.empty());
    for (const HeavyHitter& row : by_dst) {
        EXPECT_EQ(row.key.src_port, 0);
        EXPECT_EQ(row.key.protocol, 0);
        EXPECT_GE(row.estimate, per_dst[row.key.dst]);
    }
    // The heaviest destination is listed first (its count dwarfs ε·N here).
    const auto heaviest = std::max_element(per_dst.begin(), per_dst.end(),
                                           [](const auto& x, const auto& y) { return x.second < y.second; });
    EXPECT_EQ(by_dst[0].key.dst, heaviest->first);
    EXPECT_EQ(b.keys[2].top_bytes.spec, KeySpec::parse("dport"));
    EXPECT_EQ(b.keys[2].top_bytes.total, b.bytes);
    EXPECT_GT(keyed.memory_bytes(), plain.memory_bytes());
    EXPECT_EQ(FlowMeasurement::footprint(with_keys).sketch_bytes, 4 * FlowMeasurement::footprint(config).sketch_bytes);
}

// Heavy changes: a destination that starts sending in the second interval
// is the largest rise, one that stops is the largest fall, each change within
// its bound of the truth; the first interval has no previous one.
TEST(FlowMeasurement, ChangesBetweenIntervalsFindWhatStartedAndStopped) {
    MeasurementConfig config = small_config(2003, 4);
    config.top_k = 5;
    config.extra_keys = {KeySpec::parse("dst")};
    FlowMeasurement measurement(config);
    std::vector<PacketRecord> background = skewed_stream(20000, 500, 11);
    const auto burst = [](std::uint32_t dst, std::size_t packets, std::int64_t start_ns) {
        std::vector<PacketRecord> records;
        for (std::size_t i = 0; i < packets; ++i) {
            records.push_back(PacketRecord{FlowKey::ipv4(0x0b000000u + static_cast<std::uint32_t>(i % 50), dst,
                                                         1000, 80, 6),
                                           start_ns + static_cast<std::int64_t>(i), 100, 0});
        }
        return records;
    };
    const std::uint32_t stopped = 0xC6336401;  // 198.51.100.1: only in the first interval
    const std::uint32_t started = 0xC6336402;  // 198.51.100.2: only in the second
    measurement.add_batch(background);
    measurement.add_batch(burst(stopped, 3000, 30'000'000));
    const WindowSummary first = measurement.summary(Window::interval);
    EXPECT_FALSE(first.keys[0].changes_packets.has_previous);
    EXPECT_TRUE(first.changes_packets.empty());
    measurement.start_new_interval();
    measurement.add_batch(background);
    measurement.add_batch(burst(started, 5000, 60'000'000));
    const WindowSummary second = measurement.summary(Window::interval);
    const ChangeList& changes = second.keys[0].changes_packets;
    ASSERT_TRUE(changes.has_previous);
    ASSERT_GE(changes.size(), 2u);
    EXPECT_EQ(changes.previous_total, 23000u);
    EXPECT_EQ(changes.current_total, 25000u);
    EXPECT_DOUBLE_EQ(changes.bound, measurement.sketch_params().epsilon() * 25000);
    const auto dst_of = [](std::uint32_t address) { return KeySpec::parse("dst").apply(FlowKey::ipv4(0, address, 0, 0, 0)); };
    EXPECT_EQ(changes.rows[0].key, dst_of(started));
    EXPECT_LE(std::abs(changes.rows[0].change - 5000), changes.bound);
    EXPECT_EQ(changes.rows[1].key, dst_of(stopped));
    EXPECT_LE(std::abs(changes.rows[1].change + 3000), changes.bound);
    EXPECT_LT(changes.rows[1].change, 0);
    // The 5-tuple's changes are those of single flows: 50 sources each.
    EXPECT_TRUE(second.changes_packets.has_previous);
    EXPECT_FALSE(second.changes_packets.empty());
}

}  // namespace
}  // namespace flowsketch::core
