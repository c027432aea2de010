// Decoder tests of the network and transport layers: IPv4 (options, padding,
// fragments) and IPv6 (extension headers, fragments), each with its transports.
#include <gtest/gtest.h>

#include "tests/capture/decode_test_frames.hpp"

namespace {

using namespace decode_test;

// ---------------------------------------------------------------------------------------------
// Ethernet, IPv4, transports

TEST(DecodeIpv4, TcpKeyFieldsAndFlags) {
    const Frame frame = ethernet(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(49152, 443, 0x12));
    const Decoded d = decode(link_type::ethernet, frame);
    ASSERT_EQ(d.reason, SkipReason::none);
    const FlowKey& key = d.packet.key;
    EXPECT_EQ(key.family, AddressFamily::ipv4);
    EXPECT_EQ((std::array<std::uint8_t, 4>{key.src[0], key.src[1], key.src[2], key.src[3]}),
              (std::array<std::uint8_t, 4>{192, 0, 2, 1}));
    EXPECT_EQ((std::array<std::uint8_t, 4>{key.dst[0], key.dst[1], key.dst[2], key.dst[3]}),
              (std::array<std::uint8_t, 4>{198, 51, 100, 7}));
    for (std::size_t i = 4; i < 16; ++i) {
        EXPECT_EQ(key.src[i], 0);
        EXPECT_EQ(key.dst[i], 0);
    }
    EXPECT_EQ(key.src_port, 49152);
    EXPECT_EQ(key.dst_port, 443);
    EXPECT_EQ(key.protocol, kTcp);
    EXPECT_EQ(key.vlan, 0);
    EXPECT_EQ(d.packet.tcp_flags, 0x12);
    EXPECT_FALSE(d.packet.is_fragment);
    EXPECT_EQ(key, key4(49152, 443, kTcp));
}

TEST(DecodeIpv4, UdpSctpUdpLiteDccpPorts) {
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(udp(5353, 53)),
               key4(5353, 53, kUdp));
    expect_key(link_type::ethernet,
               ethernet(0x0800) + Ipv4().protocol(132).wrap(ports_then(2905, 2906, 8)),
               key4(2905, 2906, 132));
    expect_key(link_type::ethernet,
               ethernet(0x0800) + Ipv4().protocol(136).wrap(ports_then(7, 9, 4)), key4(7, 9, 136));
    expect_key(link_type::ethernet,
               ethernet(0x0800) + Ipv4().protocol(33).wrap(ports_then(5001, 5002, 12)),
               key4(5001, 5002, 33));
}

TEST(DecodeIpv4, UdpTcpFlagsStayZero) {
    const Decoded d =
        decode(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(udp(1, 2)));
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.tcp_flags, 0);
}

TEST(DecodeIpv4, PortlessProtocolsKeyWithPortsZero) {
    // ICMP, GRE and ESP have no ports. With --tunnels outer, GRE and IP in IP
    // are keyed by the outer header; by default by the inner packet.
    DecodeLimits outer;
    outer.decapsulate_tunnels = false;
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kIcmp).wrap(icmp_echo()),
               key4(0, 0, kIcmp));
    const Frame gre = Frame{0x00, 0x00, 0x08, 0x00} +
                      Ipv4().protocol(kUdp).wrap(udp(1111, 2222));  // GRE carrying IPv4/UDP
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(47).wrap(gre),
               key4(0, 0, 47), outer);
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(47).wrap(gre),
               key4(1111, 2222, kUdp));
    expect_key(link_type::ethernet,
               ethernet(0x0800) + Ipv4().protocol(50).wrap(Frame{}.fill(16, 7)), key4(0, 0, 50));
    // IP-in-IP: keyed by the outer header, protocol 4, or by the inner TCP.
    const Frame ipip =
        ethernet(0x0800) + Ipv4().protocol(4).wrap(Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2)));
    expect_key(link_type::ethernet, ipip, key4(0, 0, 4), outer);
    expect_key(link_type::ethernet, ipip, key4(1, 2, kTcp));
}

TEST(DecodeIpv4, VxlanIsKeyedByOuterUdpWithTunnelsOuter) {
    const Frame inner = ethernet(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2));
    const Frame vxlan = Frame{}
                            .be16(40000)
                            .be16(4789)
                            .be16(static_cast<unsigned>(16 + inner.size()))
                            .be16(0)
                            .be32(0x08000000)
                            .be32(0x00000100)
                            .append(inner);
    DecodeLimits outer;
    outer.decapsulate_tunnels = false;
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(vxlan),
               key4(40000, 4789, kUdp), outer);
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(vxlan),
               key4(1, 2, kTcp));
}

TEST(DecodeIpv4, OptionsAreSkipped) {
    for (unsigned ihl : {6u, 10u, 15u}) {
        SCOPED_TRACE(ihl);
        expect_key(link_type::ethernet,
                   ethernet(0x0800) + Ipv4().ihl(ihl).protocol(kTcp).wrap(tcp(80, 8080, 0x10)),
                   key4(80, 8080, kTcp));
    }
}

TEST(DecodeIpv4, EthernetPaddingIsNotTransport) {
    // A 60-byte minimum frame pads a small UDP datagram with 14 zero bytes.
    const Frame datagram = Ipv4().protocol(kUdp).wrap(udp(1000, 2000));
    const Frame padded = (ethernet(0x0800) + datagram).fill(60 - 14 - datagram.size(), 0);
    expect_key(link_type::ethernet, padded, key4(1000, 2000, kUdp));

    // Total length says the datagram ends after 4 transport bytes: the UDP length field
    // lies in the padding, so the decoder must call the header truncated, not read it.
    const Frame short_total =
        ethernet(0x0800) + Ipv4().protocol(kUdp).total_length(24).wrap(udp(1, 2));
    EXPECT_EQ(reason_of(link_type::ethernet, short_total), SkipReason::truncated_transport);
    // Same for TCP: the flags byte would lie in padding that looks valid.
    const Frame tcp_cut =
        ethernet(0x0800) + Ipv4().protocol(kTcp).total_length(20 + 13).wrap(tcp(1, 2, 2));
    EXPECT_EQ(reason_of(link_type::ethernet, tcp_cut), SkipReason::truncated_transport);
}

TEST(DecodeIpv4, TotalLengthZeroIsOffloadAndAccepted) {
    const Frame frame =
        ethernet(0x0800) + Ipv4().protocol(kTcp).total_length(0).wrap(tcp(5, 6, 0x18));
    const Decoded d = decode(link_type::ethernet, frame);
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key, key4(5, 6, kTcp));
    EXPECT_EQ(d.packet.tcp_flags, 0x18);
}

TEST(DecodeIpv4, TotalLengthBeyondCaptureIsFine) {
    // A snaplen cut after the TCP header: the rest of the datagram was not captured.
    const Frame frame =
        ethernet(0x0800) + Ipv4().protocol(kTcp).total_length(1500).wrap(tcp(5, 6, 0x10));
    expect_key(link_type::ethernet, frame, key4(5, 6, kTcp));
}

TEST(DecodeIpv4, InvalidHeaders) {
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x0800) + Ipv4().ihl(4).wrap(tcp(1, 2, 2))),
              SkipReason::invalid_ip);
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x0800) + Ipv4().ihl(0).wrap(tcp(1, 2, 2))),
              SkipReason::invalid_ip);
    // Total length below the header length (IHL 5 → 20 bytes; IHL 6 → 24 bytes).
    EXPECT_EQ(reason_of(link_type::ethernet,
                        ethernet(0x0800) + Ipv4().total_length(19).wrap(tcp(1, 2, 2))),
              SkipReason::invalid_ip);
    EXPECT_EQ(reason_of(link_type::ethernet,
                        ethernet(0x0800) + Ipv4().ihl(6).total_length(20).wrap(tcp(1, 2, 2))),
              SkipReason::invalid_ip);
    // Ethertype IPv4 carrying another version.
    EXPECT_EQ(
        reason_of(link_type::ethernet, ethernet(0x0800) + Ipv4().version(6).wrap(tcp(1, 2, 2))),
        SkipReason::invalid_ip);
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x86DD) + Ipv4().wrap(tcp(1, 2, 2))),
              SkipReason::invalid_ip);
    // IHL 15 with only 20 bytes of header captured: cut, not invalid.
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x0800).u8(0x4F).fill(19, 0)),
              SkipReason::truncated_ip);
}

TEST(DecodeIpv4, TcpDataOffsetBelowFiveIsInvalid) {
    for (unsigned offset : {0u, 1u, 4u}) {
        SCOPED_TRACE(offset);
        EXPECT_EQ(reason_of(link_type::ethernet,
                            ethernet(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2, offset))),
                  SkipReason::invalid_transport);
    }
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2, 15)),
               key4(1, 2, kTcp));
}

TEST(DecodeIpv4, TcpNeedsTheFlagsByte) {
    const Frame full = ethernet(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2));
    const std::size_t flags_end = 14 + 20 + 14;
    EXPECT_EQ(decode(link_type::ethernet, full, flags_end - 1).reason,
              SkipReason::truncated_transport);
    EXPECT_EQ(decode(link_type::ethernet, full, flags_end).reason, SkipReason::none);
}

TEST(DecodeIpv4, UdpLengthField) {
    for (unsigned length : {1u, 3u, 7u}) {
        SCOPED_TRACE(length);
        EXPECT_EQ(reason_of(link_type::ethernet,
                            ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(udp(1, 2, length))),
                  SkipReason::invalid_transport);
    }
    // 0 (jumbogram/offload) and 8 (empty payload) are valid.
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(udp(1, 2, 0u)),
               key4(1, 2, kUdp));
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(udp(1, 2, 8u)),
               key4(1, 2, kUdp));
}

TEST(DecodeIpv4, FirstFragmentKeepsPorts) {
    const Frame frame =
        ethernet(0x0800) + Ipv4().protocol(kUdp).fragment(0x2000).wrap(udp(4000, 53));
    const Decoded d = decode(link_type::ethernet, frame);
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key, key4(4000, 53, kUdp));
    EXPECT_TRUE(d.packet.is_fragment);
}

TEST(DecodeIpv4, LaterFragmentsKeyWithPortsZero) {
    // Offset 185 (1480 bytes) with MF set, and the last fragment (MF clear). The payload is
    // datagram bytes, not a header: even 3 bytes of it must key.
    for (unsigned field : {0x2000u | 185u, 185u, 1u}) {
        SCOPED_TRACE(field);
        const Frame frame =
            ethernet(0x0800) + Ipv4().protocol(kUdp).fragment(field).wrap(Frame{0xde, 0xad, 0x00});
        const Decoded d = decode(link_type::ethernet, frame);
        ASSERT_EQ(d.reason, SkipReason::none);
        EXPECT_EQ(d.packet.key, key4(0, 0, kUdp));
        EXPECT_TRUE(d.packet.is_fragment);
        EXPECT_EQ(d.packet.tcp_flags, 0);
    }
}

TEST(DecodeIpv4, DontFragmentIsNotAFragment) {
    const Decoded d =
        decode(link_type::ethernet, ethernet(0x0800) + Ipv4().fragment(0x4000).wrap(tcp(1, 2, 2)));
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_FALSE(d.packet.is_fragment);
    EXPECT_EQ(d.packet.key, key4(1, 2, kTcp));
}

// ---------------------------------------------------------------------------------------------
// IPv6

TEST(DecodeIpv6, TcpAndUdpKeys) {
    const Decoded d =
        decode(link_type::ethernet, ethernet(0x86DD) + ipv6(kTcp, tcp(33000, 22, 0x02)));
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key.family, AddressFamily::ipv6);
    EXPECT_EQ(d.packet.key.src, kSrc6);
    EXPECT_EQ(d.packet.key.dst, kDst6);
    EXPECT_EQ(d.packet.key.src_port, 33000);
    EXPECT_EQ(d.packet.key.dst_port, 22);
    EXPECT_EQ(d.packet.key.protocol, kTcp);
    EXPECT_EQ(d.packet.tcp_flags, 0x02);
    EXPECT_FALSE(d.packet.is_fragment);
    expect_key(link_type::ethernet, ethernet(0x86DD) + ipv6(kUdp, udp(546, 547)),
               key6(546, 547, kUdp));
    expect_key(link_type::ethernet, ethernet(0x86DD) + ipv6(kIcmp6, icmp_echo()),
               key6(0, 0, kIcmp6));
}

TEST(DecodeIpv6, ExtensionChainEndsAtUpperLayer) {
    // Hop-by-hop → routing (24 bytes) → destination options → AH → TCP.
    const Frame chain = ext_header(43) + ext_header(60, 2) + ext_header(51) + auth_header(kTcp) +
                        tcp(1234, 5678, 0x11);
    const Decoded d = decode(link_type::ethernet, ethernet(0x86DD) + ipv6(0, chain));
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key, key6(1234, 5678, kTcp));
    EXPECT_EQ(d.packet.tcp_flags, 0x11);
    EXPECT_FALSE(d.packet.is_fragment);
}

TEST(DecodeIpv6, ChainEndsWithoutPorts) {
    // ESP (50), no next header (59) and an unknown header end the walk with ports 0.
    for (std::uint8_t last : {std::uint8_t{50}, std::uint8_t{59}, std::uint8_t{253}}) {
        SCOPED_TRACE(unsigned{last});
        expect_key(link_type::ethernet,
                   ethernet(0x86DD) + ipv6(0, ext_header(last) + Frame{}.fill(8, 0xEE)),
                   key6(0, 0, last));
    }
    expect_key(link_type::ethernet, ethernet(0x86DD) + ipv6(59, Frame{}), key6(0, 0, 59));
}

TEST(DecodeIpv6, FirstFragmentKeepsWalking) {
    const Frame payload = fragment_header(kUdp, 0, true) + udp(5000, 6000);
    const Decoded d = decode(link_type::ethernet, ethernet(0x86DD) + ipv6(44, payload));
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key, key6(5000, 6000, kUdp));
    EXPECT_TRUE(d.packet.is_fragment);
}

TEST(DecodeIpv6, LaterFragmentUsesFragmentHeaderProtocol) {
    // Offsets in 8-byte units: the smallest, a typical one, the largest. Two payload bytes
    // would be a truncated TCP header if the decoder looked for ports.
    for (unsigned offset : {1u, 181u, 8191u}) {
        SCOPED_TRACE(offset);
        const Frame payload = ext_header(44) + fragment_header(kTcp, offset, false) + Frame{1, 2};
        const Decoded d = decode(link_type::ethernet, ethernet(0x86DD) + ipv6(0, payload));
        ASSERT_EQ(d.reason, SkipReason::none);
        EXPECT_EQ(d.packet.key, key6(0, 0, kTcp));
        EXPECT_TRUE(d.packet.is_fragment);
    }
}

TEST(DecodeIpv6, ExtensionLimit) {
    // A chain of n destination-options headers, then UDP.
    auto chain_of = [](unsigned n) {
        Frame chain;
        for (unsigned i = 0; i < n; ++i) chain.append(ext_header(i + 1 == n ? kUdp : 60));
        return ethernet(0x86DD) + ipv6(n == 0 ? kUdp : 60, chain + udp(7, 8));
    };
    const DecodeLimits defaults;
    expect_key(link_type::ethernet, chain_of(defaults.max_ipv6_extension_headers),
               key6(7, 8, kUdp));
    EXPECT_EQ(reason_of(link_type::ethernet, chain_of(defaults.max_ipv6_extension_headers + 1)),
              SkipReason::ipv6_extension_limit);
    EXPECT_EQ(reason_of(link_type::ethernet, chain_of(40)), SkipReason::ipv6_extension_limit);

    DecodeLimits tight;
    tight.max_ipv6_extension_headers = 2;
    expect_key(link_type::ethernet, chain_of(2), key6(7, 8, kUdp), tight);
    EXPECT_EQ(reason_of(link_type::ethernet, chain_of(3), tight), SkipReason::ipv6_extension_limit);
    // The fragment header counts too.
    tight.max_ipv6_extension_headers = 0;
    EXPECT_EQ(
        reason_of(link_type::ethernet,
                  ethernet(0x86DD) + ipv6(44, fragment_header(kUdp, 0, true) + udp(1, 2)), tight),
        SkipReason::ipv6_extension_limit);
}

TEST(DecodeIpv6, ExtensionHeaderRunningPastThePacket) {
    // Hop-by-hop claims (10 + 1) * 8 = 88 bytes; 16 are there.
    const Frame hbh = Frame{kUdp, 10}.fill(14, 0);
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x86DD) + ipv6(0, hbh)),
              SkipReason::truncated_ip);
    // Same with the payload length clamping it although more bytes were captured.
    const Frame clamped = ethernet(0x86DD) + ipv6(0, ext_header(kUdp, 3) + udp(1, 2), 16);
    EXPECT_EQ(reason_of(link_type::ethernet, clamped), SkipReason::truncated_ip);
    // AH claiming 255 units.
    EXPECT_EQ(
        reason_of(link_type::ethernet, ethernet(0x86DD) + ipv6(51, Frame{kTcp, 255}.fill(30, 0))),
        SkipReason::truncated_ip);
    // Fragment header cut after 5 of its 8 bytes.
    EXPECT_EQ(reason_of(link_type::ethernet, ethernet(0x86DD) + ipv6(44, Frame{kUdp, 0, 0, 1, 0})),
              SkipReason::truncated_ip);
}

TEST(DecodeIpv6, PayloadLengthClampsAndZeroIsAccepted) {
    // Payload length 4: the UDP length field is outside the datagram.
    const Frame cut = (ethernet(0x86DD) + ipv6(kUdp, udp(1, 2), 4)).fill(10, 0);
    EXPECT_EQ(reason_of(link_type::ethernet, cut), SkipReason::truncated_transport);
    // Payload length 0 (jumbogram/offload): the captured bytes are used.
    expect_key(link_type::ethernet, ethernet(0x86DD) + ipv6(kUdp, udp(1, 2, 0u), 0),
               key6(1, 2, kUdp));
    // Padding after the datagram is ignored.
    expect_key(link_type::ethernet, (ethernet(0x86DD) + ipv6(kUdp, udp(9, 10))).fill(12, 0xFF),
               key6(9, 10, kUdp));
}

TEST(DecodeIpv6, BadVersionIsInvalid) {
    Frame frame = ethernet(0x86DD);
    frame.u8(0x50).fill(39, 0);
    EXPECT_EQ(reason_of(link_type::ethernet, frame), SkipReason::invalid_ip);
}

}  // namespace
