// Why a frame was not keyed: the decoder's result codes, counted per reason
// by the caller and named in every report format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowsketch::capture {

/// Why a frame was not keyed. The names (skip_reason_name) are part of the
/// report formats: add reasons at the end, never rename one.
enum class SkipReason : std::uint8_t {
    none = 0,               // decoded: not a skip
    unsupported_link_type,  // the capture's link type is not one we decode
    non_ip,                 // ARP, LLC, LLDP, MPLS carrying non-IP, ...
    truncated_link,         // cut inside the link header, a VLAN tag, MPLS label or PPPoE header
    link_limit,             // more VLAN tags or MPLS labels than DecodeLimits allows
    truncated_ip,           // cut inside the IPv4/IPv6 header or an IPv6 extension header
    invalid_ip,             // bad version, IHL < 5, total length < header length, ...
    ipv6_extension_limit,   // longer IPv6 extension-header chain than DecodeLimits allows
    truncated_transport,    // cut before the TCP/UDP/SCTP ports (or the TCP flags)
    invalid_transport,      // TCP data offset < 5, UDP length < 8, ...
    // Reasons met only inside a tunnel. A frame whose inner packet fails is
    // keyed by its outer header (TunnelCounts::outer_keyed), so these never
    // reach the skip counts, and the reports' list of skip reasons stays as it was.
    truncated_tunnel,  // cut inside a GRE, ERSPAN, VXLAN, Geneve or GTP-U header
    invalid_tunnel,    // unknown version, GRE routing, Geneve or GTP-U lengths that contradict the packet
    tunnel_limit,      // more nested tunnels than DecodeLimits allows
};
/// The reasons a frame can be skipped for: none and the nine before the tunnel reasons.
inline constexpr std::size_t skip_reason_count = 10;
/// Every reason an inner packet can be left unkeyed for (skip_reason_count and the tunnel ones).
inline constexpr std::size_t inner_reason_count = 13;

/// Stable snake_case name of a reason, e.g. "truncated_ip".
std::string_view skip_reason_name(SkipReason reason) noexcept;

}  // namespace flowsketch::capture
