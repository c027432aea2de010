// Frame builders and decode helpers shared by the decoder tests: frames are
// built byte by byte, so every field under test is visible in the test.
//
// Each decode runs on an exact-size heap copy of the frame, so under AddressSanitizer a
// read of even one byte past the captured length fails the test.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "capture/decode/decode.hpp"

namespace flowsketch::capture {
// Readable failure messages: reasons by name.
inline void PrintTo(SkipReason reason, std::ostream* os) { *os << skip_reason_name(reason); }
}  // namespace flowsketch::capture

namespace flowsketch::core {
inline void PrintTo(const FlowKey& key, std::ostream* os) {
    *os << format_address(key, true) << ':' << key.src_port << " > " << format_address(key, false)
        << ':' << key.dst_port << " proto " << unsigned{key.protocol} << " family "
        << unsigned{static_cast<std::uint8_t>(key.family)};
}
}  // namespace flowsketch::core

namespace decode_test {

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

inline Frame operator+(Frame a, const Frame& b) { return a.append(b); }

inline constexpr std::uint32_t kSrc4 = 0xC0000201;  // 192.0.2.1
inline constexpr std::uint32_t kDst4 = 0xC6336407;  // 198.51.100.7
inline constexpr std::array<std::uint8_t, 16> kSrc6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                                0,    0,    0,    0,    0, 0, 0, 1};
inline constexpr std::array<std::uint8_t, 16> kDst6 = {0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,    0,
                                                0,    0,    0,    0,    0xbe, 0xef, 0x00, 0x02};

inline constexpr std::uint8_t kTcp = 6;
inline constexpr std::uint8_t kUdp = 17;
inline constexpr std::uint8_t kIcmp = 1;
inline constexpr std::uint8_t kIcmp6 = 58;

// Link layers ---------------------------------------------------------------------------------

inline Frame ethernet(unsigned type) {
    return Frame{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb}.be16(type);
}
// The tag after a VLAN/QinQ type: tag control information, then the inner type.
inline Frame vlan_tag(unsigned inner_type, unsigned vid = 100) {
    return Frame{}.be16(vid).be16(inner_type);
}
inline Frame mpls_label(std::uint32_t label, bool bottom) {
    return Frame{}.be32((label << 12) | (bottom ? 0x100u : 0u) | 64u);  // TTL 64
}
inline Frame pppoe_session(unsigned ppp_protocol) {
    return Frame{0x11, 0x00}.be16(0x1234).be16(0x0100).be16(ppp_protocol);
}
inline Frame sll(unsigned protocol) {
    return Frame{}.be16(0).be16(1).be16(6).fill(8, 0xAB).be16(protocol);  // 16 bytes
}
inline Frame sll2(unsigned protocol) {
    return Frame{}.be16(protocol).be16(0).be32(3).be16(1).u8(0).u8(6).fill(8, 0xAB);  // 20 bytes
}
inline Frame null_header(std::uint32_t family, bool little_endian) {
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

inline Frame ipv6(std::uint8_t next_header, const Frame& payload,
           std::optional<unsigned> payload_length = std::nullopt) {
    Frame f;
    f.be32(0x60000000).be16(payload_length.value_or(static_cast<unsigned>(payload.size())));
    f.u8(next_header).u8(64).append(kSrc6).append(kDst6);
    return f.append(payload);
}
// Hop-by-hop, routing or destination options: (length + 1) * 8 bytes.
inline Frame ext_header(std::uint8_t next_header, unsigned length_units = 0) {
    return Frame{}.u8(next_header).u8(length_units).fill((length_units + 1) * 8 - 2, 0);
}
// AH: (length + 2) * 4 bytes.
inline Frame auth_header(std::uint8_t next_header, unsigned length_units = 4) {
    return Frame{}.u8(next_header).u8(length_units).fill((length_units + 2) * 4 - 2, 0);
}
inline Frame fragment_header(std::uint8_t next_header, unsigned offset_units, bool more) {
    return Frame{}.u8(next_header).u8(0).be16((offset_units << 3) | (more ? 1u : 0u)).be32(0xabcd);
}

// Transport layers ----------------------------------------------------------------------------

inline Frame tcp(unsigned sport, unsigned dport, unsigned flags, unsigned data_offset = 5) {
    Frame f;
    f.be16(sport).be16(dport).be32(1000).be32(2000).u8(data_offset << 4).u8(flags);
    return f.be16(65535).be16(0).be16(0);  // window, checksum, urgent pointer
}
inline Frame udp(unsigned sport, unsigned dport, std::optional<unsigned> length = std::nullopt) {
    const unsigned payload = 4;
    return Frame{}
        .be16(sport)
        .be16(dport)
        .be16(length.value_or(8 + payload))
        .be16(0)
        .fill(payload, 0x5A);
}
// SCTP common header, DCCP generic header, UDP-Lite: ports first.
inline Frame ports_then(unsigned sport, unsigned dport, std::size_t rest) {
    return Frame{}.be16(sport).be16(dport).fill(rest, 0x11);
}
inline Frame icmp_echo() { return Frame{0x08, 0x00, 0xf7, 0xff, 0x00, 0x01, 0x00, 0x01}; }

// Decoding ------------------------------------------------------------------------------------

struct Decoded {
    SkipReason reason;
    DecodedPacket packet;
};

inline Decoded decode(int link, const Frame& frame, std::size_t length, const DecodeLimits& limits = {}) {
    // Exact-size copy: ASan turns any read past `length` into a failure.
    auto buffer = std::make_unique<std::uint8_t[]>(length);
    if (length != 0) std::memcpy(buffer.get(), frame.data(), length);
    Decoded result{SkipReason::none, {}};
    result.reason = decode_frame(link, buffer.get(), length, result.packet, limits);
    return result;
}
inline Decoded decode(int link, const Frame& frame, const DecodeLimits& limits = {}) {
    return decode(link, frame, frame.size(), limits);
}

inline SkipReason reason_of(int link, const Frame& frame, const DecodeLimits& limits = {}) {
    return decode(link, frame, limits).reason;
}

inline FlowKey key4(std::uint16_t sport, std::uint16_t dport, std::uint8_t protocol) {
    return FlowKey::ipv4(kSrc4, kDst4, sport, dport, protocol);
}
inline FlowKey key6(std::uint16_t sport, std::uint16_t dport, std::uint8_t protocol) {
    return FlowKey::ipv6(kSrc6, kDst6, sport, dport, protocol);
}

// Decodes and expects success with this key.
inline void expect_key(int link, const Frame& frame, const FlowKey& expected,
                const DecodeLimits& limits = {}) {
    const Decoded d = decode(link, frame, limits);
    ASSERT_EQ(d.reason, SkipReason::none);
    EXPECT_EQ(d.packet.key, expected);
}

inline bool is_truncation(SkipReason reason) {
    return reason == SkipReason::truncated_link || reason == SkipReason::truncated_ip ||
           reason == SkipReason::truncated_transport;
}

}  // namespace decode_test
