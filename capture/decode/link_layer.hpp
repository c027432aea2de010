// Link layer: from the capture's link type to the network header, through
// Ethernet, VLAN/QinQ tags, MPLS labels, PPPoE sessions, Linux cooked
// headers (v1 and v2), raw IP and BSD null/loopback headers; and the
// Ethernet frames tunnels carry (transparent bridging, ERSPAN, VXLAN, Geneve).
// Private to decode.cpp (see reader.hpp).
#pragma once

#include <cstdint>

#include "capture/decode/decode.hpp"
#include "capture/decode/network_layer.hpp"
#include "capture/decode/protocol_numbers.hpp"
#include "capture/decode/reader.hpp"
#include "capture/decode/walk.hpp"

namespace flowsketch::capture {
namespace {

// Dispatches on an Ethernet type after the VLAN tags (see decode_ethertype).
FLOWSKETCH_HOT SkipReason decode_untagged_ethertype(Reader& r, std::uint16_t type, DecodedPacket& out,
                                                    const Walk& walk) noexcept {
    const DecodeLimits& limits = walk.limits;
    switch (type) {
        case ethertype::ipv4:
            return decode_ipv4_inline(r, out, walk);
        case ethertype::ipv6:
            return decode_ipv6(r, out, walk);
        case ethertype::mpls_unicast:
        case ethertype::mpls_multicast:
            for (unsigned labels = 0;; ++labels) {
                if (labels == limits.max_mpls_labels) return SkipReason::link_limit;
                Header<4> entry;
                if (!r.take(entry)) return SkipReason::truncated_link;
                if ((entry.u8<2>() & 0x01u) != 0) break;  // bottom of stack
            }
            // No payload type in MPLS: guess by the version nibble; a pseudowire
            // (Ethernet, control word) is not keyed.
            return decode_ip_by_version(r, out, walk, SkipReason::non_ip);
        case ethertype::pppoe_session: {
            // Version/type, code, session id, length, then the PPP protocol:
            // one byte when compressed (RFC 1661 6.5: an odd first byte ends
            // the field), two otherwise.
            Header<7> pppoe;
            if (!r.take(pppoe)) return SkipReason::truncated_link;
            std::uint16_t ppp_protocol = pppoe.u8<6>();
            if ((ppp_protocol & 0x01u) == 0) {
                Header<1> low;
                if (!r.take(low)) return SkipReason::truncated_link;
                ppp_protocol = static_cast<std::uint16_t>((ppp_protocol << 8) | low.u8<0>());
            }
            if (ppp_protocol == 0x0021) return decode_ipv4(r, out, walk);
            if (ppp_protocol == 0x0057) return decode_ipv6(r, out, walk);
            return SkipReason::non_ip;
        }
        default:
            return SkipReason::non_ip;  // ARP, 802.3 length/LLC, LLDP, PPPoE discovery, ...
    }
}

// Dispatches on an Ethernet type (also the protocol field of Linux cooked
// captures): VLAN tags and MPLS labels are peeled within the limits. The
// outer tag's VLAN id goes into the key when asked for, after the layers
// below have written the rest of it (which leaves the id 0); a tunnel's inner
// frame is decoded within, so the outermost frame's id is the one kept.
FLOWSKETCH_HOT SkipReason decode_ethertype(Reader& r, std::uint16_t type, DecodedPacket& out,
                                           const Walk& walk) noexcept {
    const DecodeLimits& limits = walk.limits;
    std::uint16_t outer_vlan = 0;
    for (unsigned tags = 0;; ++tags) {
        if (type != ethertype::vlan && type != ethertype::qinq && type != ethertype::qinq_old) {
            break;
        }
        if (tags == limits.max_vlan_tags) return SkipReason::link_limit;
        Header<4> tag;  // tag control information, inner type
        if (!r.take(tag)) return SkipReason::truncated_link;
        if (tags == 0) outer_vlan = static_cast<std::uint16_t>(tag.be16<0>() & 0x0fffu);  // no priority, DEI
        type = tag.be16<2>();
    }
    const SkipReason reason = decode_untagged_ethertype(r, type, out, walk);
    if (limits.outer_vlan) out.key.vlan = outer_vlan;
    return reason;
}

// BSD address families seen in DLT_NULL/DLT_LOOP headers: IPv4 is 2 everywhere,
// IPv6 differs by OS (Linux 10, OpenBSD 24, FreeBSD 28, macOS 30).
SkipReason decode_address_family(Reader r, std::uint32_t family, DecodedPacket& out,
                                 const Walk& walk) noexcept {
    switch (family) {
        case 2:
            return decode_ipv4(r, out, walk);
        case 10:
        case 24:
        case 28:
        case 30:
            return decode_ipv6(r, out, walk);
        default:
            return SkipReason::non_ip;
    }
}

// The link header of `link_type` at the reader, then what it carries.
FLOWSKETCH_HOT SkipReason decode_link_layer(int link_type, Reader& r, DecodedPacket& out,
                                            const Walk& walk) noexcept {
    std::uint16_t type = 0;  // the Ethernet type of the link types that carry one
    switch (link_type) {
        case link_type::ethernet: {
            Header<14> ethernet;  // destination, source, type
            if (!r.take(ethernet)) return SkipReason::truncated_link;
            type = ethernet.be16<12>();
            break;
        }
        case link_type::linux_sll: {
            // Packet type, ARPHRD type, address length, 8-byte address, protocol.
            Header<16> sll;
            if (!r.take(sll)) return SkipReason::truncated_link;
            type = sll.be16<14>();
            break;
        }
        case link_type::linux_sll2: {
            // Protocol, reserved, interface index, ARPHRD type, packet type, address
            // length, 8-byte address.
            Header<20> sll2;
            if (!r.take(sll2)) return SkipReason::truncated_link;
            type = sll2.be16<0>();
            break;
        }
        case link_type::raw:
        case link_type::raw_openbsd:
        case link_type::raw_linktype:
        case link_type::ipv4:
        case link_type::ipv6:
            return decode_ip_by_version(r, out, walk, SkipReason::invalid_ip);
        case link_type::null: {
            Header<4> family;
            if (!r.take(family)) return SkipReason::truncated_link;
            // Host byte order of the capturing machine, unknown here: every valid
            // family is < 256, so whichever order gives a small value is the one.
            std::uint32_t value = family.be32<0>();
            if (value > 0xFFu) value = __builtin_bswap32(value);
            return decode_address_family(r, value, out, walk);
        }
        case link_type::loop: {
            Header<4> family;
            if (!r.take(family)) return SkipReason::truncated_link;
            return decode_address_family(r, family.be32<0>(), out, walk);
        }
        default:
            return SkipReason::unsupported_link_type;
    }
    return decode_ethertype(r, type, out, walk);  // the outer frame's call site: inlined
}

// An Ethernet frame inside a tunnel (declared in tunnel.hpp): out of line, so
// the outer walk's inlined copy of the Ethernet steps stays the only hot one.
[[gnu::noinline]] SkipReason decode_inner_ethernet(Reader r, DecodedPacket& out,
                                                   const Walk& walk) noexcept {
    Header<14> ethernet;  // destination, source, type
    if (!r.take(ethernet)) return SkipReason::truncated_link;
    return decode_ethertype(r, ethernet.be16<12>(), out, walk);
}

}  // namespace
}  // namespace flowsketch::capture
