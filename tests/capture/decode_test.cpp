// Decoder tests: frames are built byte by byte, so every field under test is visible here.
//
// Each decode runs on an exact-size heap copy of the frame, so under AddressSanitizer a
// read of even one byte past the captured length fails the test.
#include "capture/decode.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace flowsketch::capture {
// Readable failure messages: reasons by name.
void PrintTo(SkipReason reason, std::ostream* os) { *os << skip_reason_name(reason); }
}  // namespace flowsketch::capture

namespace flowsketch::core {
void PrintTo(const FlowKey& key, std::ostream* os) {
    *os << format_address(key, true) << ':' << key.src_port << " > " << format_address(key, false)
        << ':' << key.dst_port << " proto " << unsigned{key.protocol} << " family "
        << unsigned{static_cast<std::uint8_t>(key.family)};
}
}  // namespace flowsketch::core

namespace {

using flowsketch::capture::decode_frame;
using flowsketch::capture::DecodedPacket;
using flowsketch::capture::DecodeLimits;
using flowsketch::capture::SkipReason;
using flowsketch::core::AddressFamily;
using flowsketch::core::FlowKey;
namespace link_type = flowsketch::capture::link_type;

// ---------------------------------------------------------------------------------------------
// Frame builder

class Frame {
  public:
    Frame() = default;
    Frame(std::initializer_list<std::uint8_t> bytes) : bytes_(bytes) {}

    Frame& u8(unsigned value) {
        bytes_.push_back(static_cast<std::uint8_t>(value));
        return *this;
    }
    Frame& be16(unsigned value) { return u8(value >> 8).u8(value & 0xFFu); }
    Frame& be32(std::uint32_t value) { return be16(value >> 16).be16(value & 0xFFFFu); }
    Frame& le32(std::uint32_t value) {
        return be16(swap16(value & 0xFFFFu)).be16(swap16(value >> 16));
    }
    Frame& fill(std::size_t count, std::uint8_t value = 0) {
        bytes_.insert(bytes_.end(), count, value);
        return *this;
    }
    Frame& append(const Frame& other) {
        bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
        return *this;
    }
    Frame& append(const std::array<std::uint8_t, 16>& address) {
        bytes_.insert(bytes_.end(), address.begin(), address.end());
        return *this;
    }

    [[nodiscard]] std::size_t size() const { return bytes_.size(); }
    [[nodiscard]] const std::uint8_t* data() const { return bytes_.data(); }

  private:
    static unsigned swap16(unsigned v) { return ((v & 0xFFu) << 8) | (v >> 8); }

    std::vector<std::uint8_t> bytes_;
};

Frame operator+(Frame a, const Frame& b) { return a.append(b); }

constexpr std::uint32_t kSrc4 = 0xC0000201;  // 192.0.2.1
constexpr std::uint32_t kDst4 = 0xC6336407;  // 198.51.100.7
constexpr std::array<std::uint8_t, 16> kSrc6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                                0,    0,    0,    0,    0, 0, 0, 1};
constexpr std::array<std::uint8_t, 16> kDst6 = {0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,    0,
                                                0,    0,    0,    0,    0xbe, 0xef, 0x00, 0x02};

constexpr std::uint8_t kTcp = 6;
constexpr std::uint8_t kUdp = 17;
constexpr std::uint8_t kIcmp = 1;
constexpr std::uint8_t kIcmp6 = 58;

// Link layers ---------------------------------------------------------------------------------

Frame ethernet(unsigned type) {
    return Frame{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb}.be16(type);
}
// The tag after a VLAN/QinQ type: tag control information, then the inner type.
Frame vlan_tag(unsigned inner_type, unsigned vid = 100) {
    return Frame{}.be16(vid).be16(inner_type);
}
Frame mpls_label(std::uint32_t label, bool bottom) {
    return Frame{}.be32((label << 12) | (bottom ? 0x100u : 0u) | 64u);  // TTL 64
}
Frame pppoe_session(unsigned ppp_protocol) {
    return Frame{0x11, 0x00}.be16(0x1234).be16(0x0100).be16(ppp_protocol);
}
Frame sll(unsigned protocol) {
    return Frame{}.be16(0).be16(1).be16(6).fill(8, 0xAB).be16(protocol);  // 16 bytes
}
Frame sll2(unsigned protocol) {
    return Frame{}.be16(protocol).be16(0).be32(3).be16(1).u8(0).u8(6).fill(8, 0xAB);  // 20 bytes
}
Frame null_header(std::uint32_t family, bool little_endian) {
    return little_endian ? Frame{}.le32(family) : Frame{}.be32(family);
}

// Network layers ------------------------------------------------------------------------------

class Ipv4 {
  public:
    Ipv4& protocol(std::uint8_t p) {
        protocol_ = p;
        return *this;
    }
    Ipv4& ihl(unsigned words) {
        ihl_ = words;
        return *this;
    }
    Ipv4& version(unsigned v) {
        version_ = v;
        return *this;
    }
    Ipv4& fragment(unsigned field) {
        fragment_ = field;
        return *this;
    }
    Ipv4& total_length(unsigned length) {
        total_length_ = length;
        return *this;
    }

    [[nodiscard]] Frame wrap(const Frame& payload) const {
        const std::size_t header = ihl_ < 5 ? 20 : ihl_ * 4;
        const unsigned total =
            total_length_.value_or(static_cast<unsigned>(header + payload.size()));
        Frame f;
        f.u8((version_ << 4) | ihl_).u8(0).be16(total).be16(0x1c46).be16(fragment_).u8(64);
        f.u8(protocol_).be16(0).be32(kSrc4).be32(kDst4);
        f.fill(header - 20, 0x01);  // options: NOPs
        return f.append(payload);
    }

  private:
    std::uint8_t protocol_ = kTcp;
    unsigned ihl_ = 5;
    unsigned version_ = 4;
    unsigned fragment_ = 0;
    std::optional<unsigned> total_length_;
};

Frame ipv6(std::uint8_t next_header, const Frame& payload,
           std::optional<unsigned> payload_length = std::nullopt) {
    Frame f;
    f.be32(0x60000000).be16(payload_length.value_or(static_cast<unsigned>(payload.size())));
    f.u8(next_header).u8(64).append(kSrc6).append(kDst6);
    return f.append(payload);
}
// Hop-by-hop, routing or destination options: (length + 1) * 8 bytes.
Frame ext_header(std::uint8_t next_header, unsigned length_units = 0) {
    return Frame{}.u8(next_header).u8(length_units).fill((length_units + 1) * 8 - 2, 0);
}
// AH: (length + 2) * 4 bytes.
Frame auth_header(std::uint8_t next_header, unsigned length_units = 4) {
    return Frame{}.u8(next_header).u8(length_units).fill((length_units + 2) * 4 - 2, 0);
}
Frame fragment_header(std::uint8_t next_header, unsigned offset_units, bool more) {
    return Frame{}.u8(next_header).u8(0).be16((offset_units << 3) | (more ? 1u : 0u)).be32(0xabcd);
}

// Transport layers ----------------------------------------------------------------------------

Frame tcp(unsigned sport, unsigned dport, unsigned flags, unsigned data_offset = 5) {
    Frame f;
    f.be16(sport).be16(dport).be32(1000).be32(2000).u8(data_offset << 4).u8(flags);
    return f.be16(65535).be16(0).be16(0);  // window, checksum, urgent pointer
}
Frame udp(unsigned sport, unsigned dport, std::optional<unsigned> length = std::nullopt) {
    const unsigned payload = 4;
    return Frame{}
        .be16(sport)
        .be16(dport)
        .be16(length.value_or(8 + payload))
        .be16(0)
        .fill(payload, 0x5A);
}
// SCTP common header, DCCP generic header, UDP-Lite: ports first.
Frame ports_then(unsigned sport, unsigned dport, std::size_t rest) {
    return Frame{}.be16(sport).be16(dport).fill(rest, 0x11);
}
Frame icmp_echo() { return Frame{0x08, 0x00, 0xf7, 0xff, 0x00, 0x01, 0x00, 0x01}; }

// Decoding ------------------------------------------------------------------------------------

struct Decoded {
    SkipReason reason;
    DecodedPacket packet;
};

Decoded decode(int link, const Frame& frame, std::size_t length, const DecodeLimits& limits = {}) {
    // Exact-size copy: ASan turns any read past `length` into a failure.
    auto buffer = std::make_unique<std::uint8_t[]>(length);
    if (length != 0) std::memcpy(buffer.get(), frame.data(), length);
    Decoded result{SkipReason::none, {}};
    result.reason = decode_frame(link, buffer.get(), length, result.packet, limits);
    return result;
}
Decoded decode(int link, const Frame& frame, const DecodeLimits& limits = {}) {
    return decode(link, frame, frame.size(), limits);
}

SkipReason reason_of(int link, const Frame& frame, const DecodeLimits& limits = {}) {
    return decode(link, frame, limits).reason;
}

FlowKey key4(std::uint16_t sport, std::uint16_t dport, std::uint8_t protocol) {
    return FlowKey::ipv4(kSrc4, kDst4, sport, dport, protocol);
}
FlowKey key6(std::uint16_t sport, std::uint16_t dport, std::uint8_t protocol) {
    return FlowKey::ipv6(kSrc6, kDst6, sport, dport, protocol);
}

// Decodes and expects success with this key.
void expect_key(int link, const Frame& frame, const FlowKey& expected,
                const DecodeLimits& limits = {}) {
    const Decoded d = decode(link, frame, limits);
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key, expected);
}

bool is_truncation(SkipReason reason) {
    return reason == SkipReason::truncated_link || reason == SkipReason::truncated_ip ||
           reason == SkipReason::truncated_transport;
}

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
    EXPECT_EQ(key.reserved, (std::array<std::uint8_t, 2>{}));
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
    // ICMP, GRE and ESP have no ports; GRE is keyed by the outer header (no descent).
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kIcmp).wrap(icmp_echo()),
               key4(0, 0, kIcmp));
    const Frame gre = Frame{0x00, 0x00, 0x08, 0x00} +
                      Ipv4().protocol(kUdp).wrap(udp(1111, 2222));  // GRE carrying IPv4/UDP
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(47).wrap(gre),
               key4(0, 0, 47));
    expect_key(link_type::ethernet,
               ethernet(0x0800) + Ipv4().protocol(50).wrap(Frame{}.fill(16, 7)), key4(0, 0, 50));
    // IP-in-IP: keyed by the outer header, protocol 4.
    expect_key(link_type::ethernet,
               ethernet(0x0800) + Ipv4().protocol(4).wrap(Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2))),
               key4(0, 0, 4));
}

TEST(DecodeIpv4, VxlanIsKeyedByOuterUdp) {
    const Frame inner = ethernet(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2));
    const Frame vxlan = Frame{}
                            .be16(40000)
                            .be16(4789)
                            .be16(static_cast<unsigned>(16 + inner.size()))
                            .be16(0)
                            .be32(0x08000000)
                            .be32(0x00000100)
                            .append(inner);
    expect_key(link_type::ethernet, ethernet(0x0800) + Ipv4().protocol(kUdp).wrap(vxlan),
               key4(40000, 4789, kUdp));
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

// ---------------------------------------------------------------------------------------------
// Truncation at every length

struct PrefixCase {
    std::string name;
    int link;
    Frame frame;
    std::size_t needed;  // the shortest capture that keys: every shorter prefix is truncated
};

std::vector<PrefixCase> prefix_cases() {
    const Frame tcp4 = Ipv4().protocol(kTcp).ihl(7).wrap(tcp(1, 2, 0x02));
    const Frame udp6_chain =
        ipv6(0, ext_header(51, 1) + auth_header(44) + fragment_header(kUdp, 0, true) + udp(3, 4));
    std::vector<PrefixCase> cases;
    // TCP: bytes after the flags (6 of them) are not needed.
    cases.push_back({"ethernet_ipv4_options_tcp", link_type::ethernet, ethernet(0x0800) + tcp4, 0});
    cases.back().needed = cases.back().frame.size() - 6;
    // UDP: the checksum and payload are not needed.
    cases.push_back({"qinq_mpls_ipv6_chain_udp", link_type::ethernet,
                     ethernet(0x88A8) + vlan_tag(0x8100) + vlan_tag(0x8847) + mpls_label(1, false) +
                         mpls_label(2, true) + udp6_chain,
                     0});
    cases.back().needed = cases.back().frame.size() - 6;
    cases.push_back(
        {"pppoe_ipv4_sctp", link_type::ethernet,
         ethernet(0x8864) + pppoe_session(0x0021) + Ipv4().protocol(132).wrap(ports_then(9, 10, 8)),
         0});
    cases.back().needed = cases.back().frame.size() - 8;
    cases.push_back(
        {"sll_ipv6_tcp", link_type::linux_sll, sll(0x86DD) + ipv6(kTcp, tcp(5, 6, 1)), 0});
    cases.back().needed = cases.back().frame.size() - 6;
    cases.push_back({"sll2_vlan_ipv4_udp", link_type::linux_sll2,
                     sll2(0x8100) + vlan_tag(0x0800) + Ipv4().protocol(kUdp).wrap(udp(7, 8)), 0});
    cases.back().needed = cases.back().frame.size() - 6;
    cases.push_back(
        {"null_ipv6_icmp6", link_type::null, null_header(28, true) + ipv6(kIcmp6, icmp_echo()), 0});
    cases.back().needed = 4 + 40;  // no transport bytes needed
    cases.push_back({"loop_ipv4_later_fragment", link_type::loop,
                     null_header(2, false) + Ipv4().protocol(kUdp).fragment(100).wrap(udp(1, 2)),
                     0});
    cases.back().needed = 4 + 20;
    cases.push_back(
        {"raw_ipv4_dccp", link_type::raw, Ipv4().protocol(33).wrap(ports_then(11, 12, 12)), 0});
    cases.back().needed = 24;
    cases.push_back(
        {"ipv6_later_fragment", link_type::ipv6,
         ipv6(60, ext_header(44) + fragment_header(kTcp, 8, true) + Frame{}.fill(32, 1)), 0});
    cases.back().needed = 40 + 8 + 8;
    return cases;
}

TEST(DecodeTruncation, EveryPrefixIsTruncatedUntilTheKeyIsComplete) {
    for (const PrefixCase& c : prefix_cases()) {
        SCOPED_TRACE(c.name);
        const Decoded full = decode(c.link, c.frame);
        ASSERT_EQ(full.reason, SkipReason::none);
        for (std::size_t length = 0; length < c.needed; ++length) {
            const SkipReason reason = decode(c.link, c.frame, length).reason;
            EXPECT_TRUE(is_truncation(reason))
                << "length " << length << ": " << skip_reason_name(reason);
        }
        for (std::size_t length = c.needed; length <= c.frame.size(); ++length) {
            const Decoded d = decode(c.link, c.frame, length);
            ASSERT_EQ(d.reason, SkipReason::none) << "length " << length;
            EXPECT_EQ(d.packet.key, full.packet.key) << "length " << length;
            EXPECT_EQ(d.packet.tcp_flags, full.packet.tcp_flags);
            EXPECT_EQ(d.packet.is_fragment, full.packet.is_fragment);
        }
    }
}

TEST(DecodeTruncation, ReasonNamesTheLayer) {
    const Frame frame =
        ethernet(0x8100) + vlan_tag(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2));
    EXPECT_EQ(decode(link_type::ethernet, frame, 13).reason, SkipReason::truncated_link);
    EXPECT_EQ(decode(link_type::ethernet, frame, 17).reason, SkipReason::truncated_link);
    EXPECT_EQ(decode(link_type::ethernet, frame, 18).reason, SkipReason::truncated_ip);
    EXPECT_EQ(decode(link_type::ethernet, frame, 37).reason, SkipReason::truncated_ip);
    EXPECT_EQ(decode(link_type::ethernet, frame, 38).reason, SkipReason::truncated_transport);
    const Frame mpls = ethernet(0x8847) + mpls_label(1, true) + ipv6(kUdp, udp(1, 2));
    EXPECT_EQ(decode(link_type::ethernet, mpls, 17).reason, SkipReason::truncated_link);
    EXPECT_EQ(decode(link_type::ethernet, mpls, 18).reason, SkipReason::truncated_ip);
}

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

// ---------------------------------------------------------------------------------------------
// Reason names

TEST(SkipReasonName, DistinctAndNonEmptyForEveryReason) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < flowsketch::capture::skip_reason_count; ++i) {
        const auto name = flowsketch::capture::skip_reason_name(static_cast<SkipReason>(i));
        EXPECT_FALSE(name.empty()) << i;
        EXPECT_NE(name, "unknown") << i;
        names.emplace(name);
    }
    EXPECT_EQ(names.size(), flowsketch::capture::skip_reason_count);
    EXPECT_EQ(flowsketch::capture::skip_reason_name(SkipReason::truncated_ip), "truncated_ip");
    EXPECT_EQ(flowsketch::capture::skip_reason_name(SkipReason::none), "none");
    EXPECT_EQ(flowsketch::capture::skip_reason_name(static_cast<SkipReason>(200)), "unknown");
}

}  // namespace
