// Network layer: IPv4 (options, fragments) and IPv6 (extension headers,
// fragments). The IP length narrows the window for everything after the IP
// header, so link-layer padding is never read as transport bytes.
// Private to decode.cpp (see reader.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "capture/decode/decode.hpp"
#include "capture/decode/protocol_numbers.hpp"
#include "capture/decode/reader.hpp"
#include "capture/decode/tunnel.hpp"
#include "capture/decode/walk.hpp"

namespace flowsketch::capture {
namespace {

FLOWSKETCH_HOT SkipReason decode_ipv4_inline(Reader& r, DecodedPacket& out, const Walk& walk) noexcept {
    Header<20> ip;
    if (!r.take(ip)) return SkipReason::truncated_ip;
    const std::uint8_t version_ihl = ip.u8<0>();
    if ((version_ihl >> 4) != 4) return SkipReason::invalid_ip;
    const std::size_t header_length = std::size_t{version_ihl & 0x0Fu} * 4;
    if (header_length < 20) return SkipReason::invalid_ip;
    if (!r.skip(header_length - 20)) return SkipReason::truncated_ip;  // options

    // Total length 0 is what TSO/LRO offload leaves in captured packets: keep the
    // captured window. Otherwise the window ends with the datagram, so link-layer
    // padding is never read as transport bytes.
    const std::uint16_t total_length = ip.be16<2>();
    if (total_length != 0) {
        if (total_length < header_length) return SkipReason::invalid_ip;
        r.clamp(total_length - header_length);
    }

    const std::uint16_t fragment_field = ip.be16<6>();
    const std::uint16_t fragment_offset = fragment_field & 0x1FFFu;
    const bool more_fragments = (fragment_field & 0x2000u) != 0;
    out.is_fragment = fragment_offset != 0 || more_fragments;

    const std::uint8_t protocol = ip.u8<9>();
    std::uint16_t sport = 0;
    std::uint16_t dport = 0;
    // Only the first fragment carries the transport header.
    if (fragment_offset == 0) {
        if (walk.tag != nullptr && walk.depth == 0) [[unlikely]] {
            note_carrier(*walk.tag, ip.bytes<12, 8>(), 4, core::AddressFamily::ipv4);
        }
        bool inner_keyed = false;
        const SkipReason reason = decode_ip_payload(r, protocol, sport, dport, out, walk, inner_keyed);
        if (reason != SkipReason::none || inner_keyed) return reason;
    }
    out.key.assign_ipv4(ip.be32<12>(), ip.be32<16>(), sport, dport, protocol);
    return SkipReason::none;
}

// IPv4 behind PPPoE, MPLS, raw IP or a loopback header: one out-of-line copy.
// The out-of-line steps take the Reader by value (they end the walk), so the
// hot path's Reader never has its address taken and stays in registers.
[[gnu::noinline]] SkipReason decode_ipv4(Reader r, DecodedPacket& out, const Walk& walk) noexcept {
    return decode_ipv4_inline(r, out, walk);
}

SkipReason decode_ipv6(Reader r, DecodedPacket& out, const Walk& walk) noexcept {
    Header<40> ip;
    if (!r.take(ip)) return SkipReason::truncated_ip;
    if ((ip.u8<0>() >> 4) != 6) return SkipReason::invalid_ip;
    // 0 means a jumbogram (length in a hop-by-hop option) or offload: keep the
    // captured window, as for IPv4.
    const std::uint16_t payload_length = ip.be16<4>();
    if (payload_length != 0) r.clamp(payload_length);

    std::uint8_t next_header = ip.u8<6>();
    bool later_fragment = false;
    for (unsigned extension_headers = 0;; ++extension_headers) {
        const std::uint8_t header = next_header;
        if (header != ip_proto::hop_by_hop && header != ip_proto::routing &&
            header != ip_proto::dest_options && header != ip_proto::auth &&
            header != ip_proto::fragment) {
            break;  // upper layer, ESP (50), no-next-header (59) or unknown: the walk ends
        }
        if (extension_headers == walk.limits.max_ipv6_extension_headers) {
            return SkipReason::ipv6_extension_limit;
        }
        if (header == ip_proto::fragment) {
            // Next header, reserved, offset and flags, identification.
            Header<8> fragment;
            if (!r.take(fragment)) return SkipReason::truncated_ip;
            next_header = fragment.u8<0>();
            out.is_fragment = true;
            if ((fragment.be16<2>() >> 3) != 0) {
                later_fragment = true;  // no transport header here: key by protocol only
                break;
            }
            continue;
        }
        Header<2> ext;  // next header, length
        if (!r.take(ext)) return SkipReason::truncated_ip;
        next_header = ext.u8<0>();
        const std::size_t length = ext.u8<1>();
        // AH counts 4-byte units minus 2 (RFC 4302); the others 8-byte units minus 1.
        const std::size_t header_bytes =
            header == ip_proto::auth ? (length + 2) * 4 : (length + 1) * 8;
        if (!r.skip(header_bytes - 2)) return SkipReason::truncated_ip;
    }

    std::uint16_t sport = 0;
    std::uint16_t dport = 0;
    if (!later_fragment) {
        if (walk.tag != nullptr && walk.depth == 0) {
            note_carrier(*walk.tag, ip.bytes<8, 32>(), 16, core::AddressFamily::ipv6);
        }
        bool inner_keyed = false;
        const SkipReason reason =
            decode_ip_payload(r, next_header, sport, dport, out, walk, inner_keyed);
        if (reason != SkipReason::none || inner_keyed) return reason;
    }
    out.key.assign_ipv6(ip.bytes<8, 16>(), ip.bytes<24, 16>(), sport, dport, next_header);
    return SkipReason::none;
}

// Raw IP and MPLS payloads say nothing about the version but its first nibble.
SkipReason decode_ip_by_version(Reader r, DecodedPacket& out, const Walk& walk,
                                SkipReason otherwise) noexcept {
    std::uint8_t first = 0;
    if (!r.peek_u8(first)) return SkipReason::truncated_ip;
    switch (first >> 4) {
        case 4:
            return decode_ipv4(r, out, walk);
        case 6:
            return decode_ipv6(r, out, walk);
        default:
            return otherwise;
    }
}

}  // namespace
}  // namespace flowsketch::capture
