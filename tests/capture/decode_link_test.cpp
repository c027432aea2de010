// Decoder tests of the link layer: VLAN/QinQ, MPLS, PPPoE, Linux cooked, raw IP,
// null/loopback headers and unsupported link types.
#include <gtest/gtest.h>

#include "tests/capture/decode_test_frames.hpp"

namespace {

using namespace decode_test;

// ---------------------------------------------------------------------------------------------
// Link-layer encapsulations

TEST(DecodeLink, VlanTagsGiveTheSameKey) {
    const Frame ip = Ipv4().protocol(kTcp).wrap(tcp(1, 2, 0x02));
    const FlowKey plain = decode(link_type::ethernet, ethernet(0x0800) + ip).packet.key;
    ASSERT_EQ(plain, key4(1, 2, kTcp));
    expect_key(link_type::ethernet, ethernet(0x8100) + vlan_tag(0x0800) + ip, plain);
    expect_key(link_type::ethernet, ethernet(0x88A8) + vlan_tag(0x8100, 7) + vlan_tag(0x0800) + ip,
               plain);
    expect_key(link_type::ethernet, ethernet(0x9100) + vlan_tag(0x8100) + vlan_tag(0x0800) + ip,
               plain);
    const Frame ip6 = ipv6(kUdp, udp(1, 2));
    expect_key(link_type::ethernet, ethernet(0x8100) + vlan_tag(0x86DD) + ip6, key6(1, 2, kUdp));
}

// Asked for, the key carries the outer tag's 12-bit VLAN id (priority and DEI
// dropped, inner QinQ tags skipped); not asked for, every frame keys as untagged.
TEST(DecodeLink, OuterVlanIdWhenAskedFor) {
    DecodeLimits with_vlan;
    with_vlan.outer_vlan = true;
    const Frame ip = Ipv4().protocol(kTcp).wrap(tcp(1, 2, 0x02));
    const auto vlan_of = [&](const Frame& frame) {
        const Decoded d = decode(link_type::ethernet, frame, with_vlan);
        EXPECT_EQ(d.reason, SkipReason::none);
        FlowKey key = d.packet.key;
        EXPECT_EQ(decode(link_type::ethernet, frame).packet.key.vlan, 0);
        key.vlan = 0;
        EXPECT_EQ(key, key4(1, 2, kTcp));
        return d.packet.key.vlan;
    };
    EXPECT_EQ(vlan_of(ethernet(0x0800) + ip), 0);
    EXPECT_EQ(vlan_of(ethernet(0x8100) + vlan_tag(0x0800, 10) + ip), 10);
    EXPECT_EQ(vlan_of(ethernet(0x8100) + vlan_tag(0x0800, 0xE000 | 4094) + ip), 4094);  // priority 7
    EXPECT_EQ(vlan_of(ethernet(0x8100) + vlan_tag(0x0800, 0x1000 | 20) + ip), 20);      // DEI set
    EXPECT_EQ(vlan_of(ethernet(0x8100) + vlan_tag(0x0800, 0x2000) + ip), 0);           // priority-tagged
    EXPECT_EQ(vlan_of(ethernet(0x88A8) + vlan_tag(0x8100, 300) + vlan_tag(0x0800, 7) + ip), 300);
    EXPECT_EQ(vlan_of(ethernet(0x9100) + vlan_tag(0x8100, 12) + vlan_tag(0x0800, 13) + ip), 12);
    // Through the MPLS and PPPoE paths and from a Linux cooked header.
    EXPECT_EQ(vlan_of(ethernet(0x8100) + vlan_tag(0x8847, 55) + mpls_label(5, true) + ip), 55);
    EXPECT_EQ(decode(link_type::linux_sll, sll(0x8100) + vlan_tag(0x0800, 77) + ip, with_vlan).packet.key.vlan, 77);
    // IPv6 and a skipped frame.
    const Decoded v6 = decode(link_type::ethernet, ethernet(0x8100) + vlan_tag(0x86DD, 9) + ipv6(kUdp, udp(1, 2)),
                              with_vlan);
    EXPECT_EQ(v6.reason, SkipReason::none);
    EXPECT_EQ(v6.packet.key.vlan, 9);
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x8100) + vlan_tag(0x0806, 9) + Frame{}.be32(0), with_vlan),
              SkipReason::non_ip);
}

TEST(DecodeLink, VlanDepthLimit) {
    auto tagged = [](unsigned tags) {
        Frame f = ethernet(tags == 0 ? 0x0800 : 0x8100);
        for (unsigned i = 0; i < tags; ++i) f.append(vlan_tag(i + 1 == tags ? 0x0800 : 0x8100, i));
        return f + Ipv4().protocol(kUdp).wrap(udp(1, 2));
    };
    const DecodeLimits defaults;
    expect_key(link_type::ethernet, tagged(defaults.max_vlan_tags), key4(1, 2, kUdp));
    EXPECT_EQ(reason_of(link_type::ethernet, tagged(defaults.max_vlan_tags + 1)),
              SkipReason::link_limit);
    EXPECT_EQ(reason_of(link_type::ethernet, tagged(100)), SkipReason::link_limit);
    DecodeLimits none;
    none.max_vlan_tags = 0;
    expect_key(link_type::ethernet, tagged(0), key4(1, 2, kUdp), none);
    EXPECT_EQ(reason_of(link_type::ethernet, tagged(1), none), SkipReason::link_limit);
}

TEST(DecodeLink, MplsStacksGiveTheSameKey) {
    const Frame ip4 = Ipv4().protocol(kTcp).wrap(tcp(1, 2, 0x02));
    const Frame ip6 = ipv6(kUdp, udp(3, 4));
    expect_key(link_type::ethernet, ethernet(0x8847) + mpls_label(100, true) + ip4,
               key4(1, 2, kTcp));
    expect_key(
        link_type::ethernet,
        ethernet(0x8847) + mpls_label(1, false) + mpls_label(2, false) + mpls_label(3, true) + ip6,
        key6(3, 4, kUdp));
    expect_key(link_type::ethernet, ethernet(0x8848) + mpls_label(16, true) + ip4,
               key4(1, 2, kTcp));
    // VLAN outside MPLS.
    expect_key(link_type::ethernet, ethernet(0x8100) + vlan_tag(0x8847) + mpls_label(5, true) + ip6,
               key6(3, 4, kUdp));
}

TEST(DecodeLink, MplsLimitsAndPayloadGuess) {
    const Frame ip4 = Ipv4().protocol(kTcp).wrap(tcp(1, 2, 0x02));
    auto stack = [&](unsigned labels, bool bottom_last) {
        Frame f = ethernet(0x8847);
        for (unsigned i = 0; i < labels; ++i)
            f.append(mpls_label(i + 16, bottom_last && i + 1 == labels));
        return f + ip4;
    };
    const DecodeLimits defaults;
    expect_key(link_type::ethernet, stack(defaults.max_mpls_labels, true), key4(1, 2, kTcp));
    EXPECT_EQ(reason_of(link_type::ethernet, stack(defaults.max_mpls_labels + 1, true)),
              SkipReason::link_limit);
    // No bottom-of-stack within the limit (the IPv4 bytes that follow read as labels).
    EXPECT_EQ(reason_of(link_type::ethernet, stack(defaults.max_mpls_labels, false)),
              SkipReason::link_limit);
    // No bottom-of-stack and the frame ends: cut inside the label stack.
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x8847) + mpls_label(1, false)),
              SkipReason::truncated_link);
    // Ethernet pseudowire (payload starts with a MAC, first nibble 0) is not IP.
    EXPECT_EQ(reason_of(link_type::ethernet,
                        ethernet(0x8847) + mpls_label(1, true) + ethernet(0x0800) + ip4),
              SkipReason::non_ip);
}

TEST(DecodeLink, PppoeSession) {
    expect_key(link_type::ethernet,
               ethernet(0x8864) + pppoe_session(0x0021) + Ipv4().protocol(kUdp).wrap(udp(1, 2)),
               key4(1, 2, kUdp));
    expect_key(link_type::ethernet,
               ethernet(0x8864) + pppoe_session(0x0057) + ipv6(kTcp, tcp(3, 4, 2)),
               key6(3, 4, kTcp));
    expect_key(
        link_type::ethernet,
        ethernet(0x8100) + vlan_tag(0x8864) + pppoe_session(0x0021) + Ipv4().wrap(tcp(3, 4, 2)),
        key4(3, 4, kTcp));
    // LCP is not IP.
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x8864) + pppoe_session(0xC021).fill(10, 0)),
              SkipReason::non_ip);
}

TEST(DecodeLink, NonIpEthertypes) {
    const Frame body = Frame{}.fill(46, 0);
    for (unsigned type : {0x0806u, 0x88CCu, 0x8863u, 0x0040u, 0x05DCu, 0x88E5u}) {
        SCOPED_TRACE(type);
        EXPECT_EQ(reason_of(link_type::ethernet, ethernet(type) + body), SkipReason::non_ip);
    }
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x8100) + vlan_tag(0x0806) + body),
              SkipReason::non_ip);
}

TEST(DecodeLink, LinuxCooked) {
    const Frame ip4 = Ipv4().protocol(kTcp).wrap(tcp(1, 2, 0x02));
    const Frame ip6 = ipv6(kUdp, udp(3, 4));
    expect_key(link_type::linux_sll, sll(0x0800) + ip4, key4(1, 2, kTcp));
    expect_key(link_type::linux_sll, sll(0x86DD) + ip6, key6(3, 4, kUdp));
    expect_key(link_type::linux_sll, sll(0x8100) + vlan_tag(0x0800) + ip4, key4(1, 2, kTcp));
    expect_key(link_type::linux_sll2, sll2(0x0800) + ip4, key4(1, 2, kTcp));
    expect_key(link_type::linux_sll2, sll2(0x86DD) + ip6, key6(3, 4, kUdp));
    expect_key(link_type::linux_sll2, sll2(0x8847) + mpls_label(3, true) + ip6, key6(3, 4, kUdp));
    expect_key(link_type::linux_sll2, sll2(0x8864) + pppoe_session(0x0021) + ip4, key4(1, 2, kTcp));
    // 802.2 LLC frames carry protocol 4 in the cooked header.
    EXPECT_EQ(reason_of(link_type::linux_sll, sll(0x0004) + ip4), SkipReason::non_ip);
    EXPECT_EQ(reason_of(link_type::linux_sll2, sll2(0x0806) + ip4), SkipReason::non_ip);
}

TEST(DecodeLink, RawIpByVersionNibble) {
    const Frame ip4 = Ipv4().protocol(kUdp).wrap(udp(1, 2));
    const Frame ip6 = ipv6(kTcp, tcp(3, 4, 0x04));
    for (int link : {link_type::raw, link_type::raw_openbsd, link_type::raw_linktype,
                     link_type::ipv4, link_type::ipv6}) {
        SCOPED_TRACE(link);
        expect_key(link, ip4, key4(1, 2, kUdp));
        expect_key(link, ip6, key6(3, 4, kTcp));
        EXPECT_EQ(reason_of(link, Frame{0x50}.fill(39, 0)), SkipReason::invalid_ip);
        EXPECT_EQ(reason_of(link, Frame{}), SkipReason::truncated_ip);
    }
}

TEST(DecodeLink, NullAcceptsBothByteOrders) {
    const Frame ip4 = Ipv4().protocol(kUdp).wrap(udp(1, 2));
    const Frame ip6 = ipv6(kUdp, udp(1, 2));
    for (bool little : {true, false}) {
        SCOPED_TRACE(little);
        expect_key(link_type::null, null_header(2, little) + ip4, key4(1, 2, kUdp));
        for (std::uint32_t family : {10u, 24u, 28u, 30u}) {
            SCOPED_TRACE(family);
            expect_key(link_type::null, null_header(family, little) + ip6, key6(1, 2, kUdp));
        }
        for (std::uint32_t family : {0u, 1u, 7u, 17u, 255u}) {
            SCOPED_TRACE(family);
            EXPECT_EQ(reason_of(link_type::null, null_header(family, little) + ip4),
                      SkipReason::non_ip);
        }
    }
    // Neither byte order gives a family.
    EXPECT_EQ(reason_of(link_type::null, Frame{}.be32(0x00020002) + ip4), SkipReason::non_ip);
}

TEST(DecodeLink, LoopIsNetworkOrderOnly) {
    const Frame ip4 = Ipv4().protocol(kUdp).wrap(udp(1, 2));
    const Frame ip6 = ipv6(kUdp, udp(1, 2));
    expect_key(link_type::loop, null_header(2, false) + ip4, key4(1, 2, kUdp));
    expect_key(link_type::loop, null_header(24, false) + ip6, key6(1, 2, kUdp));
    expect_key(link_type::loop, null_header(30, false) + ip6, key6(1, 2, kUdp));
    EXPECT_EQ(reason_of(link_type::loop, null_header(2, true) + ip4), SkipReason::non_ip);
    EXPECT_EQ(reason_of(link_type::loop, null_header(7, false) + ip4), SkipReason::non_ip);
}

TEST(DecodeLink, UnsupportedLinkTypes) {
    const Frame ip4 = Ipv4().protocol(kUdp).wrap(udp(1, 2));
    for (int link : {-1, 9, 105, 127, 192, 277, 100000}) {
        SCOPED_TRACE(link);
        EXPECT_EQ(reason_of(link, ip4), SkipReason::unsupported_link_type);
        EXPECT_FALSE(flowsketch::capture::is_supported_link_type(link));
    }
    for (int link : {0, 1, 12, 14, 101, 108, 113, 228, 229, 276}) {
        EXPECT_TRUE(flowsketch::capture::is_supported_link_type(link)) << link;
    }
}

TEST(DecodeLink, EmptyAndNullInput) {
    DecodedPacket packet;
    EXPECT_EQ(decode_frame(link_type::ethernet, nullptr, 0, packet), SkipReason::truncated_link);
    EXPECT_EQ(decode_frame(link_type::raw, nullptr, 0, packet), SkipReason::truncated_ip);
    EXPECT_EQ(decode_frame(link_type::linux_sll2, nullptr, 0, packet), SkipReason::truncated_link);
}

}  // namespace
