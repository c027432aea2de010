// FlowKey: the byte layout that hashing and equality read.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/key/flow_key.hpp"

namespace flowsketch::core {
namespace {

// The documented layout, field by field: addresses most significant byte
// first in the first 4 bytes (the rest zero), ports in host order.
FlowKey expected_ipv4(std::uint32_t src, std::uint32_t dst, std::uint16_t sport,
                      std::uint16_t dport, std::uint8_t proto) {
    FlowKey key;
    for (std::size_t i = 0; i < 4; ++i) {
        key.src[i] = static_cast<std::uint8_t>(src >> (24 - 8 * i));
        key.dst[i] = static_cast<std::uint8_t>(dst >> (24 - 8 * i));
    }
    key.src_port = sport;
    key.dst_port = dport;
    key.protocol = proto;
    key.family = AddressFamily::ipv4;
    return key;
}

// assign_ipv4 (the decoder's wide-store form, which ipv4() also uses) writes
// every one of the 40 bytes as the layout says, over whatever the key held.
TEST(FlowKey, AssignIpv4WritesTheSameBytesAsIpv4) {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 10000; ++i) {
        const auto src = static_cast<std::uint32_t>(rng());
        const auto dst = static_cast<std::uint32_t>(rng());
        const auto sport = static_cast<std::uint16_t>(rng());
        const auto dport = static_cast<std::uint16_t>(rng());
        const auto proto = static_cast<std::uint8_t>(rng());
        FlowKey assigned;
        std::memset(static_cast<void*>(&assigned), 0xa5, sizeof assigned);  // stale bytes must not survive
        assigned.assign_ipv4(src, dst, sport, dport, proto);
        const FlowKey made = expected_ipv4(src, dst, sport, dport, proto);
        ASSERT_EQ(std::memcmp(&assigned, &made, sizeof(FlowKey)), 0) << i;
        const FlowKey returned = FlowKey::ipv4(src, dst, sport, dport, proto);
        ASSERT_EQ(std::memcmp(&returned, &made, sizeof(FlowKey)), 0) << i;
    }
    FlowKey key;
    key.assign_ipv4(0x0a000001, 0xc0a80102, 1234, 443, 6);
    EXPECT_EQ(format_address(key, true), "10.0.0.1");
    EXPECT_EQ(format_address(key, false), "192.168.1.2");
    EXPECT_EQ(key.src_port, 1234);
    EXPECT_EQ(key.family, AddressFamily::ipv4);
}

}  // namespace
}  // namespace flowsketch::core
