// Decoder tests of the Ethernet/IPv4 fast path against the general path.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/capture/decode_test_frames.hpp"

namespace {

using namespace decode_test;

// ---------------------------------------------------------------------------------------------
// The Ethernet/IPv4 fast path against the general one
//
// decode_frame takes the commonest frames (Ethernet, IPv4 without options, TCP or UDP) by
// loads at fixed offsets. A Linux cooked capture of the same IP packet goes the general way
// only, so the two must agree on every frame: same reason, and when keyed the same key,
// flags and fragment bit. The frames sweep every field the fast path tests around its
// limits, at every captured length.

// An IP packet behind an Ethernet type, with what made it.
struct LinkPayload {
    unsigned type;
    Frame packet;
    std::string name;
};

// Every field the fast path tests, around its limits: Ethernet type, IP version, IHL,
// fragment field, protocol, TCP data offset or UDP length, IP total length.
std::vector<LinkPayload> ipv4_variants() {
    std::vector<LinkPayload> variants;
    const std::vector<std::pair<std::uint8_t, Frame>> transports = {
        {kTcp, tcp(1234, 80, 0x12, 0)},  {kTcp, tcp(1234, 80, 0x12, 4)},
        {kTcp, tcp(1234, 80, 0x12, 5)},  {kTcp, tcp(1234, 80, 0x12, 15)},
        {kUdp, udp(53, 4000, 0)},        {kUdp, udp(53, 4000, 7)},
        {kUdp, udp(53, 4000, 8)},        {kUdp, udp(53, 4000, 12)},
        {kUdp, udp(53, 4000, 400)},      {1, ports_then(7, 9, 12)},
        {132, ports_then(7, 9, 12)},
    };
    for (const unsigned type : {0x0800u, 0x86DDu, 0x0806u}) {
        for (const unsigned version : {4u, 6u}) {
            for (const unsigned ihl : {4u, 5u, 6u}) {
                const unsigned header = ihl < 5 ? 20 : ihl * 4;
                std::vector<std::optional<unsigned>> totals = {std::nullopt, header + 6, header + 13,
                                                               header + 14};
                for (const unsigned t : {0u, 19u, 20u, 25u, 33u, 34u, 40u, 1500u}) totals.emplace_back(t);
                for (const unsigned fragment : {0x0000u, 0x2000u, 0x4000u, 0x0001u, 0x3FFFu}) {
                    for (const auto& [protocol, transport] : transports) {
                        for (const auto& total : totals) {
                            Ipv4 ip;
                            ip.version(version).ihl(ihl).fragment(fragment).protocol(protocol);
                            if (total) ip.total_length(*total);
                            variants.push_back(
                                {type, ip.wrap(transport).fill(6, 0xEE),  // link padding
                                 "type " + std::to_string(type) + " version " + std::to_string(version) +
                                     " ihl " + std::to_string(ihl) + " fragment " +
                                     std::to_string(fragment) + " protocol " + std::to_string(protocol) +
                                     " total " + std::to_string(total.value_or(0))});
                        }
                    }
                }
            }
        }
    }
    return variants;
}

TEST(DecodeFastPath, AgreesWithTheGeneralPathOnEveryVariantAndPrefix) {
    std::size_t keyed = 0;
    std::size_t compared = 0;
    for (const LinkPayload& v : ipv4_variants()) {
        const Frame eth = ethernet(v.type) + v.packet;
        const Frame cooked = sll(v.type) + v.packet;
        for (std::size_t cut = 0; cut <= v.packet.size(); ++cut) {
            const Decoded fast = decode(link_type::ethernet, eth, 14 + cut);
            const Decoded general = decode(link_type::linux_sll, cooked, 16 + cut);
            ++compared;
            ASSERT_EQ(fast.reason, general.reason) << v.name << " captured IP bytes " << cut;
            if (fast.reason != SkipReason::none) continue;
            ++keyed;
            ASSERT_EQ(fast.packet.key, general.packet.key);
            ASSERT_EQ(fast.packet.tcp_flags, general.packet.tcp_flags);
            ASSERT_EQ(fast.packet.is_fragment, general.packet.is_fragment);
        }
    }
    // The sweep reaches both answers often: a comparison of skips alone would prove nothing.
    EXPECT_GT(keyed, 10000u);
    EXPECT_GT(compared - keyed, 10000u);
}

}  // namespace
