// Decoder tests of the tunnel layer: each encapsulation byte by byte, the
// inner flow keyed (or the outer one with --tunnels outer), the depth limit,
// and truncation at every length: the outer key until the inner packet is
// complete, never a lost frame. Also PPPoE's compressed protocol field.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/capture/decode_test_frames.hpp"

namespace {

using namespace decode_test;
using flowsketch::capture::TunnelCounts;
using flowsketch::capture::TunnelType;

constexpr std::uint32_t kInnerSrc = 0x0A000001;  // 10.0.0.1
constexpr std::uint32_t kInnerDst = 0x0A000002;  // 10.0.0.2

// IPv4 from 10.0.0.1 to 10.0.0.2 around `payload`: the inner packet, told apart from the outer.
Frame inner_ipv4(std::uint8_t protocol, const Frame& payload) {
    Frame f;
    f.u8(0x45).u8(0).be16(static_cast<unsigned>(20 + payload.size())).be16(1).be16(0).u8(64);
    f.u8(protocol).be16(0).be32(kInnerSrc).be32(kInnerDst);
    return f.append(payload);
}
FlowKey inner_key(std::uint16_t sport, std::uint16_t dport, std::uint8_t protocol) {
    return FlowKey::ipv4(kInnerSrc, kInnerDst, sport, dport, protocol);
}

Frame gre(unsigned protocol, unsigned flags = 0) { return Frame{}.be16(flags).be16(protocol); }
// UDP header (ports, length, checksum) of a tunnel datagram.
Frame udp_header(unsigned dport, std::size_t payload) {
    return Frame{}.be16(49152).be16(dport).be16(static_cast<unsigned>(8 + payload)).be16(0);
}
Frame over_udp(unsigned dport, const Frame& payload) { return udp_header(dport, payload.size()) + payload; }
Frame vxlan(const Frame& payload) { return Frame{0x08, 0, 0, 0}.be32(5001u << 8).append(payload); }
Frame geneve(unsigned protocol, const Frame& options, const Frame& payload, unsigned version = 0) {
    Frame f;
    f.u8((version << 6) | static_cast<unsigned>(options.size() / 4)).u8(0).be16(protocol).be32(77u << 8);
    return f.append(options).append(payload);
}
Frame gtp_u(const Frame& payload, unsigned flags = 0x30, const Frame& extra = {}, unsigned type = 0xFF) {
    Frame f;
    f.u8(flags).u8(type).be16(static_cast<unsigned>(extra.size() + payload.size())).be32(0x1234);
    return f.append(extra).append(payload);
}

struct TunnelDecoded {
    SkipReason reason;
    DecodedPacket packet;
    TunnelCounts counts;
};

TunnelDecoded decode_tunnel(const Frame& frame, std::size_t length, const DecodeLimits& limits = {}) {
    auto buffer = std::make_unique<std::uint8_t[]>(length);
    if (length != 0) std::memcpy(buffer.get(), frame.data(), length);
    TunnelDecoded result{SkipReason::none, {}, {}};
    result.reason = flowsketch::capture::decode_frame(link_type::ethernet, buffer.get(), length,
                                                      result.packet, limits, result.counts);
    return result;
}
TunnelDecoded decode_tunnel(const Frame& frame, const DecodeLimits& limits = {}) {
    return decode_tunnel(frame, frame.size(), limits);
}

std::uint64_t inner_count(const TunnelCounts& counts, TunnelType type) {
    return counts.inner[static_cast<std::size_t>(type)];
}
std::uint64_t outer_keyed(const TunnelCounts& counts, SkipReason reason) {
    return counts.outer_keyed[static_cast<std::size_t>(reason)];
}

struct TunnelCase {
    std::string name;
    Frame frame;          // Ethernet, outer IPv4 (192.0.2.1 > 198.51.100.7), the tunnel, inner
    TunnelType type;      // the outermost tunnel
    FlowKey outer;        // the key with --tunnels outer
    FlowKey inner;        // the key with --tunnels inner
    std::size_t needed;   // the shortest capture that keys the inner flow
};

std::vector<TunnelCase> tunnel_cases() {
    const Frame tcp_inner = inner_ipv4(kTcp, tcp(1111, 80, 0x18));
    const Frame tcp_inner_ethernet = ethernet(0x0800) + tcp_inner;
    // TCP keys after its flags (6 more bytes are not needed).
    const std::size_t tcp_rest = 6;
    std::vector<TunnelCase> cases;
    auto add = [&](std::string name, std::uint8_t protocol, const Frame& payload, TunnelType type,
                   FlowKey inner, std::size_t rest, std::uint16_t sport = 0, std::uint16_t dport = 0) {
        const Frame frame = ethernet(0x0800) + Ipv4().protocol(protocol).wrap(payload);
        cases.push_back({std::move(name), frame, type, key4(sport, dport, protocol), inner,
                         frame.size() - rest});
    };
    add("ipv4_in_ipv4", 4, tcp_inner, TunnelType::ip_in_ip, inner_key(1111, 80, kTcp), tcp_rest);
    add("ipv6_in_ipv4", 41, ipv6(kUdp, udp(53, 5353)), TunnelType::ip_in_ip, key6(53, 5353, kUdp), 6);
    add("gre_ipv4", 47, gre(0x0800) + tcp_inner, TunnelType::gre, inner_key(1111, 80, kTcp), tcp_rest);
    add("gre_checksum_key_sequence_ipv6", 47,
        gre(0x86DD, 0xB000) + Frame{}.be32(0xC0FFEE00).be32(42).be32(7) + ipv6(kTcp, tcp(5, 6, 2)),
        TunnelType::gre, key6(5, 6, kTcp), tcp_rest);
    add("gre_transparent_ethernet", 47, gre(0x6558, 0x2000).be32(9) + tcp_inner_ethernet,
        TunnelType::gre, inner_key(1111, 80, kTcp), tcp_rest);
    add("erspan_type_1", 47, gre(0x88BE) + tcp_inner_ethernet, TunnelType::erspan,
        inner_key(1111, 80, kTcp), tcp_rest);
    add("erspan_type_2", 47,
        gre(0x88BE, 0x1000).be32(3) + Frame{}.be16(0x1000).be16(0x0005).be32(0) + tcp_inner_ethernet,
        TunnelType::erspan, inner_key(1111, 80, kTcp), tcp_rest);
    // Type III with the platform-specific subheader (O flag) and frame type 0 (Ethernet).
    add("erspan_type_3_subheader", 47,
        gre(0x22EB) + Frame{}.be16(0x2000).be16(0x0005).be32(0).be16(0).be16(0x0001).fill(8, 0xEE) +
            tcp_inner_ethernet,
        TunnelType::erspan, inner_key(1111, 80, kTcp), tcp_rest);
    // Type III, frame type 2: an IP packet without Ethernet header.
    add("erspan_type_3_ip", 47,
        gre(0x22EB) + Frame{}.be16(0x2000).be16(0x0005).be32(0).be16(0).be16(2u << 10) + tcp_inner,
        TunnelType::erspan, inner_key(1111, 80, kTcp), tcp_rest);
    const Frame vxlan_payload = vxlan(ethernet(0x8100) + vlan_tag(0x0800) + tcp_inner);
    add("vxlan_vlan", kUdp, over_udp(4789, vxlan_payload), TunnelType::vxlan,
        inner_key(1111, 80, kTcp), tcp_rest, 49152, 4789);
    add("geneve_options_ethernet", kUdp,
        over_udp(6081, geneve(0x6558, Frame{}.be16(0x0102).u8(0x80).u8(1).be32(1), tcp_inner_ethernet)),
        TunnelType::geneve, inner_key(1111, 80, kTcp), tcp_rest, 49152, 6081);
    add("geneve_ipv4", kUdp, over_udp(6081, geneve(0x0800, {}, tcp_inner)), TunnelType::geneve,
        inner_key(1111, 80, kTcp), tcp_rest, 49152, 6081);
    add("gtp_u_ipv4", kUdp, over_udp(2152, gtp_u(tcp_inner)), TunnelType::gtp_u,
        inner_key(1111, 80, kTcp), tcp_rest, 49152, 2152);
    // Sequence number and two extension headers (PDU session container, then one of 8 bytes).
    add("gtp_u_extension_headers", kUdp,
        over_udp(2152, gtp_u(inner_ipv4(kUdp, udp(7, 8)), 0x36,
                             Frame{}.be16(1).u8(0).u8(0x85).u8(1).u8(0).u8(9).u8(0x40).u8(2).fill(6, 0).u8(0))),
        TunnelType::gtp_u, inner_key(7, 8, kUdp), 6, 49152, 2152);
    // VXLAN inside Geneve: two tunnels, the innermost flow keyed.
    add("vxlan_in_geneve", kUdp,
        over_udp(6081, geneve(0x0800, {}, inner_ipv4(kUdp, over_udp(4789, vxlan(tcp_inner_ethernet))))),
        TunnelType::geneve, inner_key(1111, 80, kTcp), tcp_rest, 49152, 6081);
    return cases;
}

TEST(DecodeTunnel, KeysTheInnerFlowByDefaultAndTheOuterHeaderWithOuter) {
    DecodeLimits outer_only;
    outer_only.decapsulate_tunnels = false;
    for (const TunnelCase& c : tunnel_cases()) {
        SCOPED_TRACE(c.name);
        const TunnelDecoded inner = decode_tunnel(c.frame);
        ASSERT_EQ(inner.reason, SkipReason::none);
        EXPECT_EQ(inner.packet.key, c.inner);
        EXPECT_EQ(inner_count(inner.counts, c.type), 1u);
        EXPECT_FALSE(inner.packet.is_fragment);
        for (std::size_t i = 0; i < flowsketch::capture::inner_reason_count; ++i) {
            EXPECT_EQ(inner.counts.outer_keyed[i], 0u) << i;
        }
        const TunnelDecoded outer = decode_tunnel(c.frame, outer_only);
        ASSERT_EQ(outer.reason, SkipReason::none);
        EXPECT_EQ(outer.packet.key, c.outer);
        EXPECT_EQ(outer.packet.tcp_flags, 0);
        EXPECT_TRUE(outer.counts.empty());
    }
}

TEST(DecodeTunnel, NestedTunnelsCountEachType) {
    const TunnelCase nested = tunnel_cases().back();
    const TunnelDecoded d = decode_tunnel(nested.frame);
    EXPECT_EQ(inner_count(d.counts, TunnelType::geneve), 1u);
    EXPECT_EQ(inner_count(d.counts, TunnelType::vxlan), 1u);
    EXPECT_EQ(inner_count(d.counts, TunnelType::gre), 0u);
    EXPECT_EQ(d.packet.tcp_flags, 0x18);
}

// Below the outer key: truncated as before. From the outer key to the inner
// one: the outer key, with one inner packet counted as left unkeyed. From
// then on: the inner key.
TEST(DecodeTunnel, EveryPrefixKeysTheOuterHeaderUntilTheInnerPacketIsComplete) {
    for (const TunnelCase& c : tunnel_cases()) {
        SCOPED_TRACE(c.name);
        DecodeLimits outer_only;
        outer_only.decapsulate_tunnels = false;
        std::size_t outer_needed = c.frame.size();
        while (outer_needed > 0 && decode_tunnel(c.frame, outer_needed - 1, outer_only).reason == SkipReason::none) {
            --outer_needed;
        }
        for (std::size_t length = 0; length <= c.frame.size(); ++length) {
            const TunnelDecoded d = decode_tunnel(c.frame, length);
            if (length < outer_needed) {
                EXPECT_TRUE(is_truncation(d.reason)) << "length " << length;
                continue;
            }
            ASSERT_EQ(d.reason, SkipReason::none) << "length " << length;
            if (length < c.needed) {
                // The nested case keys its middle packet once the outer tunnel is whole.
                if (c.name != "vxlan_in_geneve") {
                    EXPECT_EQ(d.packet.key, c.outer) << "length " << length;
                }
                std::uint64_t unkeyed = 0;
                for (const std::uint64_t n : d.counts.outer_keyed) unkeyed += n;
                EXPECT_EQ(unkeyed, 1u) << "length " << length;
                EXPECT_EQ(d.packet.tcp_flags, 0) << "length " << length;
            } else {
                EXPECT_EQ(d.packet.key, c.inner) << "length " << length;
                EXPECT_EQ(inner_count(d.counts, c.type), 1u) << "length " << length;
            }
        }
    }
}

TEST(DecodeTunnel, DeeperThanTheLimitKeysTheLastInnerPacketReached) {
    // Five IPv4-in-IPv4 layers around TCP: the default limit (4) decapsulates four.
    Frame packet = inner_ipv4(kTcp, tcp(1, 2, 0x02));
    for (int level = 0; level < 5; ++level) packet = inner_ipv4(4, packet);
    const Frame frame = ethernet(0x0800) + Ipv4().protocol(4).wrap(packet);
    const TunnelDecoded d = decode_tunnel(frame);
    ASSERT_EQ(d.reason, SkipReason::none);
    // The fourth inner header carries the fifth tunnel: keyed by it, without ports.
    EXPECT_EQ(d.packet.key, inner_key(0, 0, 4));
    EXPECT_EQ(inner_count(d.counts, TunnelType::ip_in_ip), 4u);
    EXPECT_EQ(outer_keyed(d.counts, SkipReason::tunnel_limit), 1u);

    DecodeLimits deep;
    deep.max_tunnel_depth = 6;
    const TunnelDecoded all = decode_tunnel(frame, deep);
    EXPECT_EQ(all.packet.key, inner_key(1, 2, kTcp));
    EXPECT_EQ(inner_count(all.counts, TunnelType::ip_in_ip), 6u);

    DecodeLimits none;
    none.max_tunnel_depth = 0;
    const TunnelDecoded outer = decode_tunnel(frame, none);
    EXPECT_EQ(outer.packet.key, key4(0, 0, 4));
    EXPECT_EQ(outer_keyed(outer.counts, SkipReason::tunnel_limit), 1u);
}

TEST(DecodeTunnel, MalformedTunnelHeadersKeyTheOuterHeaderByReason) {
    const Frame tcp_inner = inner_ipv4(kTcp, tcp(1, 2, 0x02));
    struct Broken {
        const char* name;
        Frame frame;
        FlowKey outer;
        SkipReason reason;
    };
    const Broken cases[] = {
        {"gre_routing", ethernet(0x0800) + Ipv4().protocol(47).wrap(gre(0x0800, 0x4000).be32(0) + tcp_inner),
         key4(0, 0, 47), SkipReason::invalid_tunnel},
        {"erspan_2_version_2",
         ethernet(0x0800) + Ipv4().protocol(47).wrap(gre(0x88BE, 0x1000).be32(0) + Frame{}.be16(0x2000).fill(6) +
                                                     ethernet(0x0800) + tcp_inner),
         key4(0, 0, 47), SkipReason::invalid_tunnel},
        {"erspan_3_frame_type_1",
         ethernet(0x0800) + Ipv4().protocol(47).wrap(gre(0x22EB) + Frame{}.be16(0x2000).fill(8).be16(1u << 10) +
                                                     tcp_inner),
         key4(0, 0, 47), SkipReason::invalid_tunnel},
        {"geneve_version_1",
         ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(over_udp(6081, geneve(0x0800, {}, tcp_inner, 1))),
         key4(49152, 6081, kUdp), SkipReason::invalid_tunnel},
        {"geneve_arp", ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(over_udp(6081, geneve(0x0806, {}, Frame{}.fill(28)))),
         key4(49152, 6081, kUdp), SkipReason::non_ip},
        {"gtp_version_2",
         ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(over_udp(2152, gtp_u(tcp_inner, 0x50))),
         key4(49152, 2152, kUdp), SkipReason::invalid_tunnel},
        {"gtp_extension_length_0",
         ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(over_udp(2152, gtp_u(tcp_inner, 0x34, Frame{}.be16(0).u8(0).u8(0x85).be32(0)))),
         key4(49152, 2152, kUdp), SkipReason::invalid_tunnel},
        {"ipip_inner_version_6", ethernet(0x0800) + Ipv4().protocol(4).wrap(Ipv4().version(6).wrap(tcp(1, 2, 2))),
         key4(0, 0, 4), SkipReason::invalid_ip},
        {"vxlan_inner_arp",
         ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(over_udp(4789, vxlan(ethernet(0x0806) + Frame{}.fill(28)))),
         key4(49152, 4789, kUdp), SkipReason::non_ip},
    };
    for (const Broken& c : cases) {
        SCOPED_TRACE(c.name);
        const TunnelDecoded d = decode_tunnel(c.frame);
        ASSERT_EQ(d.reason, SkipReason::none);
        EXPECT_EQ(d.packet.key, c.outer);
        EXPECT_EQ(outer_keyed(d.counts, c.reason), 1u);
        for (std::size_t i = 0; i < flowsketch::capture::tunnel_type_count; ++i) EXPECT_EQ(d.counts.inner[i], 0u);
    }
}

TEST(DecodeTunnel, NotDecapsulated) {
    const Frame tcp_inner = inner_ipv4(kTcp, tcp(1, 2, 0x02));
    // GRE version 1 (PPTP), GRE carrying PPP, GTP-U echo request, and the first
    // fragment of a tunnel datagram: keyed by the outer header, nothing counted.
    const Frame frames[] = {
        ethernet(0x0800) + Ipv4().protocol(47).wrap(gre(0x880B, 0x3001).be32(0).be32(0) + Frame{}.fill(8)),
        ethernet(0x0800) + Ipv4().protocol(47).wrap(gre(0x880B) + Frame{}.fill(8)),
        ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(over_udp(2152, gtp_u(Frame{}, 0x32, Frame{}.be32(0), 1))),
        ethernet(0x0800) + Ipv4().protocol(4).fragment(0x2000).wrap(tcp_inner),
    };
    const FlowKey keys[] = {key4(0, 0, 47), key4(0, 0, 47), key4(49152, 2152, kUdp), key4(0, 0, 4)};
    for (std::size_t i = 0; i < std::size(frames); ++i) {
        SCOPED_TRACE(i);
        const TunnelDecoded d = decode_tunnel(frames[i]);
        ASSERT_EQ(d.reason, SkipReason::none);
        EXPECT_EQ(d.packet.key, keys[i]);
        EXPECT_TRUE(d.counts.empty());
    }
}

TEST(DecodePppoe, CompressedProtocolFieldIsDecoded) {
    const Frame tcp4 = Ipv4().protocol(kTcp).wrap(tcp(1, 2, 0x10));
    const Frame compressed = ethernet(0x8864) + Frame{0x11, 0x00}.be16(0x1234).be16(0).u8(0x21) + tcp4;
    expect_key(link_type::ethernet, compressed, key4(1, 2, kTcp));
    const Frame compressed6 =
        ethernet(0x8864) + Frame{0x11, 0x00}.be16(0x1234).be16(0).u8(0x57) + ipv6(kUdp, udp(3, 4));
    expect_key(link_type::ethernet, compressed6, key6(3, 4, kUdp));
    // Odd but not IP (0x23, OSI network layer): not keyed.
    EXPECT_EQ(reason_of(link_type::ethernet,
                        ethernet(0x8864) + Frame{0x11, 0x00}.be16(0x1234).be16(0).u8(0x23) + tcp4),
              SkipReason::non_ip);
    // Cut after the PPPoE header, and inside an uncompressed field.
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x8864) + Frame{0x11, 0x00}.be16(0x1234).be16(0)),
              SkipReason::truncated_link);
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x8864) + Frame{0x11, 0x00}.be16(0x1234).be16(0).u8(0)),
              SkipReason::truncated_link);
}

TEST(TunnelTypeName, DistinctAndNonEmpty) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < flowsketch::capture::tunnel_type_count; ++i) {
        const std::string name(flowsketch::capture::tunnel_type_name(static_cast<TunnelType>(i)));
        EXPECT_FALSE(name.empty());
        EXPECT_NE(name, "unknown");
        names.insert(name);
    }
    EXPECT_EQ(names.size(), flowsketch::capture::tunnel_type_count);
    for (std::size_t i = flowsketch::capture::skip_reason_count; i < flowsketch::capture::inner_reason_count; ++i) {
        EXPECT_NE(skip_reason_name(static_cast<SkipReason>(i)), "unknown");
    }
}

// The tunnel tag (for `--key tunnel` and `+vni`): the outermost tunnel's
// type and endpoints, the innermost id, and the same key and counts as
// decoding without it.
TEST(DecodeTunnelTag, OutermostEndpointsAndTypeAndInnermostId) {
    const std::map<std::string, std::uint32_t> ids = {
        {"gre_checksum_key_sequence_ipv6", 42}, {"gre_transparent_ethernet", 9}, {"vxlan_vlan", 5001},
        {"geneve_options_ethernet", 77},        {"geneve_ipv4", 77},             {"vxlan_in_geneve", 5001},
    };
    for (const TunnelCase& c : tunnel_cases()) {
        SCOPED_TRACE(c.name);
        DecodedPacket packet;
        TunnelCounts counts;
        flowsketch::core::TunnelTag tag;
        tag.id = 12345;  // reset by the decoder
        ASSERT_EQ(flowsketch::capture::decode_frame(link_type::ethernet, c.frame.data(), c.frame.size(), packet, {},
                                                    counts, tag),
                  SkipReason::none);
        EXPECT_EQ(packet.key, c.inner);
        EXPECT_EQ(inner_count(counts, c.type), 1u);
        EXPECT_EQ(flowsketch::core::tunnel_code_name(tag.type), flowsketch::capture::tunnel_type_name(c.type));
        EXPECT_EQ(tag.family, flowsketch::core::AddressFamily::ipv4);
        FlowKey outer_endpoints = c.outer;  // the outer key's addresses are the tunnel's endpoints
        EXPECT_TRUE(std::equal(tag.src.begin(), tag.src.end(), outer_endpoints.src.begin()));
        EXPECT_TRUE(std::equal(tag.dst.begin(), tag.dst.end(), outer_endpoints.dst.begin()));
        const auto id = ids.find(c.name);
        EXPECT_EQ(tag.has_id, id != ids.end());
        EXPECT_EQ(tag.id, id != ids.end() ? id->second : 0u);
    }
}

TEST(DecodeTunnelTag, NoTunnelOrAnUnkeyedInnerPacketLeavesTheTagEmpty) {
    for (const TunnelCase& c : tunnel_cases()) {
        SCOPED_TRACE(c.name);
        for (std::size_t length = 0; length < c.needed; ++length) {
            DecodedPacket packet;
            TunnelCounts counts;
            flowsketch::core::TunnelTag tag;
            flowsketch::capture::decode_frame(link_type::ethernet, c.frame.data(), length, packet, {}, counts, tag);
            // Nested, the outer tunnel may key the frame before the inner one can.
            bool keyed_inside = false;
            for (const std::uint64_t n : counts.inner) keyed_inside = keyed_inside || n != 0;
            EXPECT_EQ(tag.type != 0, keyed_inside) << length;
            if (!keyed_inside) {
                EXPECT_FALSE(tag.has_id) << length;
            }
        }
    }
    const Frame plain = ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(udp(53, 4789 + 1));
    DecodedPacket packet;
    TunnelCounts counts;
    flowsketch::core::TunnelTag tag;
    ASSERT_EQ(flowsketch::capture::decode_frame(link_type::ethernet, plain.data(), plain.size(), packet, {}, counts, tag),
              SkipReason::none);
    EXPECT_EQ(tag.type, 0);
}

TEST(TunnelTypeName, CoreAndCaptureNamesAgree) {
    for (std::size_t i = 0; i < flowsketch::capture::tunnel_type_count; ++i) {
        EXPECT_EQ(flowsketch::capture::tunnel_type_name(static_cast<TunnelType>(i)),
                  flowsketch::core::tunnel_code_name(static_cast<std::uint8_t>(i + 1)));
    }
    EXPECT_EQ(flowsketch::core::tunnel_type_names.size(), flowsketch::capture::tunnel_type_count);
}

}  // namespace
