// Between the network and the transport layer: what the IP header's protocol
// (or last IPv6 next header) leads to. Private to decode.cpp (see reader.hpp).
//
// Usually that is the transport layer. When the protocol (IP in IP, GRE) or
// a UDP port (VXLAN, Geneve, GTP-U: tunnel_port) announces a tunnel, its
// header is read and the inner packet goes back to the network layer (or to
// the Ethernet steps of the link layer) within the rest of the outer
// datagram's window, one tunnel deeper. If the inner packet cannot be keyed,
// the frame keeps the key of the packet that carried it and the reason is
// counted: a tunnel never costs a frame. docs/decoding.md states the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "capture/decode/decode.hpp"
#include "capture/decode/protocol_numbers.hpp"
#include "capture/decode/reader.hpp"
#include "capture/decode/transport_layer.hpp"
#include "capture/decode/walk.hpp"

namespace flowsketch::capture {
namespace {

// The layers an inner packet goes back to (network_layer.hpp, link_layer.hpp).
SkipReason decode_ipv4(Reader r, DecodedPacket& out, const Walk& walk) noexcept;
SkipReason decode_ipv6(Reader r, DecodedPacket& out, const Walk& walk) noexcept;
SkipReason decode_ip_by_version(Reader r, DecodedPacket& out, const Walk& walk,
                                SkipReason otherwise) noexcept;
SkipReason decode_inner_ethernet(Reader r, DecodedPacket& out, const Walk& walk) noexcept;

// What a tunnel header says follows it.
enum class InnerPayload : std::uint8_t { ipv4, ipv6, ip_by_version, ethernet };

// GTP-U extension headers followed before the inner packet is given up on;
// each takes at least 4 bytes, so the window bounds the walk as well.
constexpr unsigned max_gtp_extension_headers = 16;

// The outermost packet's addresses (`length` bytes each, source then
// destination at `addresses`): the endpoints of the tunnel it may carry. Its
// type is set only once the tunnel keyed the frame (enter_tunnel).
void note_carrier(core::TunnelTag& tag, const std::uint8_t* addresses, std::size_t length,
                  core::AddressFamily family) noexcept {
    tag.src = {};
    tag.dst = {};
    std::memcpy(tag.src.data(), addresses, length);
    std::memcpy(tag.dst.data(), addresses + length, length);
    tag.family = family;
}

// No tunnel id: IP in IP, ERSPAN, GTP-U and GRE without the K flag.
constexpr std::int64_t no_tunnel_id = -1;

// The frame stays keyed by the packet that carried the tunnel: count why, and
// take back what the inner walk may have written besides the key (the outer
// packet, not a fragment and not TCP, had neither).
bool keep_outer(SkipReason reason, DecodedPacket& out, const Walk& walk) noexcept {
    ++walk.tunnels.outer_keyed[static_cast<std::size_t>(reason)];
    out.tcp_flags = 0;
    out.is_fragment = false;
    return false;
}

// Decodes the inner packet at `r`, one tunnel deeper. True when it keyed `out`.
// Then the tag (if asked) takes the tunnel's type when it is the outermost,
// and its id (VNI, GRE key) unless a deeper tunnel's came first.
bool enter_tunnel(TunnelType type, InnerPayload payload, Reader r, DecodedPacket& out,
                  const Walk& walk, std::int64_t id = no_tunnel_id) noexcept {
    if (walk.depth >= walk.limits.max_tunnel_depth) {
        return keep_outer(SkipReason::tunnel_limit, out, walk);
    }
    const Walk inner{walk.limits, walk.tunnels, walk.depth + 1, walk.tag};
    SkipReason reason = SkipReason::none;
    switch (payload) {
        case InnerPayload::ipv4:
            reason = decode_ipv4(r, out, inner);
            break;
        case InnerPayload::ipv6:
            reason = decode_ipv6(r, out, inner);
            break;
        case InnerPayload::ip_by_version:
            reason = decode_ip_by_version(r, out, inner, SkipReason::invalid_ip);
            break;
        case InnerPayload::ethernet:
            reason = decode_inner_ethernet(r, out, inner);
            break;
    }
    if (reason != SkipReason::none) return keep_outer(reason, out, walk);
    ++walk.tunnels.inner[static_cast<std::size_t>(type)];
    if (walk.tag != nullptr) {
        if (walk.depth == 0) walk.tag->type = static_cast<std::uint8_t>(static_cast<std::uint8_t>(type) + 1);
        if (id != no_tunnel_id && !walk.tag->has_id) {
            walk.tag->id = static_cast<std::uint32_t>(id);
            walk.tag->has_id = true;
        }
    }
    return true;
}

// GRE (RFC 2784, with RFC 2890's key and sequence number): flags and version,
// protocol type, then checksum, key and sequence number as the flags say.
// Version 1 (PPTP's enhanced GRE) and payloads other than IP, Ethernet and
// ERSPAN are not looked into: the frame is keyed by the outer header, as
// without decapsulation, and nothing is counted.
bool decapsulate_gre(Reader r, DecodedPacket& out, const Walk& walk) noexcept {
    Header<4> gre;
    if (!r.take(gre)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
    const std::uint16_t flags = gre.be16<0>();
    if ((flags & 0x0007u) != 0) return false;
    // Routing present (RFC 1701): deprecated by RFC 2784, and of variable length.
    if ((flags & 0x4000u) != 0) return keep_outer(SkipReason::invalid_tunnel, out, walk);
    const bool has_sequence = (flags & 0x1000u) != 0;
    const bool has_key = (flags & 0x2000u) != 0;
    // A payload that is not looked into is left alone before its options are
    // read, so a cut one is not counted either.
    switch (gre.be16<2>()) {
        case ethertype::ipv4:
        case ethertype::ipv6:
        case ethertype::transparent_ethernet:
        case ethertype::erspan_2:
        case ethertype::erspan_3:
            break;
        default:
            return false;
    }
    // Checksum and reserved, key, sequence number, as the flags say.
    std::int64_t key = no_tunnel_id;
    if ((flags & 0x8000u) != 0 && !r.skip(4)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
    if (has_key) {
        Header<4> key_field;
        if (!r.take(key_field)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
        key = key_field.be32<0>();
    }
    if (has_sequence && !r.skip(4)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
    switch (gre.be16<2>()) {
        case ethertype::ipv4:
            return enter_tunnel(TunnelType::gre, InnerPayload::ipv4, r, out, walk, key);
        case ethertype::ipv6:
            return enter_tunnel(TunnelType::gre, InnerPayload::ipv6, r, out, walk, key);
        case ethertype::transparent_ethernet:
            return enter_tunnel(TunnelType::gre, InnerPayload::ethernet, r, out, walk, key);
        case ethertype::erspan_2: {
            // Type I has no header of its own and no GRE sequence number (as
            // Wireshark tells them apart); type II has both: version 1, VLAN,
            // class of service, encapsulation, truncation, session id, index.
            if (has_sequence) {
                Header<8> erspan;
                if (!r.take(erspan)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
                if ((erspan.u8<0>() >> 4) != 1) {
                    return keep_outer(SkipReason::invalid_tunnel, out, walk);
                }
            }
            return enter_tunnel(TunnelType::erspan, InnerPayload::ethernet, r, out, walk);
        }
        default: {  // ethertype::erspan_3
            // Version 2, VLAN, session, timestamp, security group tag, then
            // the hardware id, frame type (0 Ethernet, 2 IP) and the O flag of
            // an 8-byte platform-specific subheader.
            Header<12> erspan;
            if (!r.take(erspan)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
            if ((erspan.u8<0>() >> 4) != 2) return keep_outer(SkipReason::invalid_tunnel, out, walk);
            const std::uint16_t word = erspan.be16<10>();
            if ((word & 0x0001u) != 0 && !r.skip(8)) {
                return keep_outer(SkipReason::truncated_tunnel, out, walk);
            }
            switch ((word >> 10) & 0x1Fu) {
                case 0:
                    return enter_tunnel(TunnelType::erspan, InnerPayload::ethernet, r, out, walk);
                case 2:
                    return enter_tunnel(TunnelType::erspan, InnerPayload::ip_by_version, r, out,
                                        walk);
                default:
                    return keep_outer(SkipReason::invalid_tunnel, out, walk);
            }
        }
    }
}

// The tunnels an IP protocol number announces. True when the inner packet keyed `out`.
[[gnu::noinline]] bool decapsulate_ip(Reader r, std::uint8_t protocol, DecodedPacket& out,
                                      const Walk& walk) noexcept {
    switch (protocol) {
        case ip_proto::ipv4_in_ip:
            return enter_tunnel(TunnelType::ip_in_ip, InnerPayload::ipv4, r, out, walk);
        case ip_proto::ipv6_in_ip:
            return enter_tunnel(TunnelType::ip_in_ip, InnerPayload::ipv6, r, out, walk);
        default:  // ip_proto::gre
            return decapsulate_gre(r, out, walk);
    }
}

// GTPv1-U (3GPP TS 29.281): flags (version 1, protocol type 1, E, S, PN),
// message type, length of what follows the first 8 bytes, TEID; with any of
// E, S, PN a sequence number, N-PDU number and next extension header type;
// then the extension headers, each a length in 4-byte units, its content and
// the next type. Only a T-PDU (type 255) carries a user packet: echo, error
// indication and end marker are keyed by the outer header, uncounted.
bool decapsulate_gtp_u(Reader r, DecodedPacket& out, const Walk& walk) noexcept {
    Header<8> gtp;
    if (!r.take(gtp)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
    const std::uint8_t flags = gtp.u8<0>();
    if ((flags >> 5) != 1 || (flags & 0x10u) == 0) {
        return keep_outer(SkipReason::invalid_tunnel, out, walk);  // GTPv0, v2 or GTP'
    }
    if (gtp.u8<1>() != 0xFF) return false;
    r.clamp(gtp.be16<2>());
    if ((flags & 0x07u) != 0) {
        Header<4> optional;  // sequence number, N-PDU number, next extension header type
        if (!r.take(optional)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
        std::uint8_t next = (flags & 0x04u) != 0 ? optional.u8<3>() : 0;
        for (unsigned count = 0; next != 0; ++count) {
            if (count == max_gtp_extension_headers) {
                return keep_outer(SkipReason::invalid_tunnel, out, walk);
            }
            Header<1> length;
            if (!r.take(length)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
            if (length.u8<0>() == 0) return keep_outer(SkipReason::invalid_tunnel, out, walk);
            Header<1> next_type;
            if (!r.skip(std::size_t{length.u8<0>()} * 4 - 2) || !r.take(next_type)) {
                return keep_outer(SkipReason::truncated_tunnel, out, walk);
            }
            next = next_type.u8<0>();
        }
    }
    return enter_tunnel(TunnelType::gtp_u, InnerPayload::ip_by_version, r, out, walk);
}

// The tunnels a UDP port announces (tunnel_port), at `r` just past the ports
// and length. True when the inner packet keyed `out`.
[[gnu::noinline]] bool decapsulate_udp(Reader r, std::uint16_t port, DecodedPacket& out,
                                       const Walk& walk) noexcept {
    if (!r.skip(2)) return keep_outer(SkipReason::truncated_tunnel, out, walk);  // checksum
    switch (port) {
        case udp_port::vxlan: {
            // Flags, reserved, VNI, reserved (RFC 7348); an Ethernet frame follows.
            Header<8> vxlan;
            if (!r.take(vxlan)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
            return enter_tunnel(TunnelType::vxlan, InnerPayload::ethernet, r, out, walk, vxlan.be32<4>() >> 8);
        }
        case udp_port::geneve: {
            // Version and options length (4-byte units), flags, protocol type,
            // VNI, reserved (RFC 8926); the options are skipped by their length.
            Header<8> geneve;
            if (!r.take(geneve)) return keep_outer(SkipReason::truncated_tunnel, out, walk);
            if ((geneve.u8<0>() >> 6) != 0) return keep_outer(SkipReason::invalid_tunnel, out, walk);
            if (!r.skip(std::size_t{geneve.u8<0>() & 0x3Fu} * 4)) {
                return keep_outer(SkipReason::truncated_tunnel, out, walk);
            }
            const std::int64_t vni = geneve.be32<4>() >> 8;
            switch (geneve.be16<2>()) {
                case ethertype::transparent_ethernet:
                    return enter_tunnel(TunnelType::geneve, InnerPayload::ethernet, r, out, walk, vni);
                case ethertype::ipv4:
                    return enter_tunnel(TunnelType::geneve, InnerPayload::ipv4, r, out, walk, vni);
                case ethertype::ipv6:
                    return enter_tunnel(TunnelType::geneve, InnerPayload::ipv6, r, out, walk, vni);
                default:
                    return keep_outer(SkipReason::non_ip, out, walk);
            }
        }
        default:  // udp_port::gtp_u
            return decapsulate_gtp_u(r, out, walk);
    }
}

// Decodes what follows an IP header (the first fragment's, or an unfragmented
// datagram's) at `r`, within the datagram's window: fills the ports and TCP
// flags, and `out`'s key is the caller's to assign; or, when a tunnel's inner
// packet keyed `out` (`inner_keyed`), leaves the outer ports unused.
// A fragment's payload is never decapsulated (it is not reassembled).
FLOWSKETCH_HOT SkipReason decode_ip_payload(Reader& r, std::uint8_t protocol,
                                            std::uint16_t& sport, std::uint16_t& dport,
                                            DecodedPacket& out, const Walk& walk,
                                            bool& inner_keyed) noexcept {
    if (protocol == ip_proto::ipv4_in_ip || protocol == ip_proto::ipv6_in_ip ||
        protocol == ip_proto::gre) [[unlikely]] {
        if (walk.limits.decapsulate_tunnels && !out.is_fragment) {
            inner_keyed = decapsulate_ip(r, protocol, out, walk);
        }
        return SkipReason::none;  // no ports: keyed by addresses and protocol
    }
    const SkipReason reason = read_ports(r, protocol, sport, dport, out.tcp_flags);
    if (protocol == ip_proto::udp && reason == SkipReason::none &&
        tunnel_port(sport, dport) != 0 && walk.limits.decapsulate_tunnels && !out.is_fragment)
        [[unlikely]] {
        inner_keyed = decapsulate_udp(r, tunnel_port(sport, dport), out, walk);
    }
    return reason;
}

}  // namespace
}  // namespace flowsketch::capture
