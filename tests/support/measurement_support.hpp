// Shared helpers for tests that drive FlowMeasurement directly: a skewed
// packet stream, and comparisons of summaries that must be identical.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/measure/flow_measurement.hpp"

namespace flowsketch::testing {

/// Flow i's key: 10.0.0.0 + i → 192.168.0.1, TCP 4000 → 443.
inline core::FlowKey flow_key(std::uint32_t i) {
    return core::FlowKey::ipv4(0x0a000000u + i, 0xc0a80001u, 4000, 443, 6);
}

/// A skewed stream over `flows` flows, 1 µs apart, some packets ending their
/// flow (FIN) now and then.
inline std::vector<core::PacketRecord> skewed_stream(std::size_t packets, std::uint32_t flows,
                                                     std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<core::PacketRecord> stream;
    stream.reserve(packets);
    for (std::size_t i = 0; i < packets; ++i) {
        // Squaring a uniform variate favours low flow numbers: a heavy head, a long tail.
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        const auto flow = static_cast<std::uint32_t>(u * u * flows);
        const auto bytes = static_cast<std::uint32_t>(40 + rng() % 1460);
        const std::uint8_t flags = rng() % 500 == 0 ? 0x01 : 0x10;
        stream.push_back(
            core::PacketRecord{flow_key(flow), static_cast<std::int64_t>(i) * 1000, bytes, flags});
    }
    return stream;
}

inline void expect_same_hitters(const std::vector<core::HeavyHitter>& a,
                                const std::vector<core::HeavyHitter>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].key, b[i].key) << i;
        EXPECT_EQ(a[i].estimate, b[i].estimate) << i;
        EXPECT_EQ(a[i].lower, b[i].lower) << i;
        EXPECT_EQ(a[i].shares_cells, b[i].shares_cells) << i;
    }
}

inline void expect_same_window(const core::WindowSummary& a, const core::WindowSummary& b) {
    EXPECT_EQ(a.packets, b.packets);
    EXPECT_EQ(a.bytes, b.bytes);
    expect_same_hitters(a.top_packets.rows, b.top_packets.rows);
    expect_same_hitters(a.top_bytes.rows, b.top_bytes.rows);
    EXPECT_EQ(a.flows.new_flows, b.flows.new_flows);
    EXPECT_EQ(a.flows.ended, b.flows.ended);
    EXPECT_EQ(a.flows.active, b.flows.active);
    EXPECT_EQ(a.flows.expired, b.flows.expired);
    EXPECT_EQ(a.flows.fpr, b.flows.fpr);
}

inline void expect_same_windows(const std::vector<core::WindowSummary>& a,
                                const std::vector<core::WindowSummary>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        SCOPED_TRACE(i);
        expect_same_window(a[i], b[i]);
    }
}

}  // namespace flowsketch::testing
