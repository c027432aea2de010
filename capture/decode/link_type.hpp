// Link-layer type numbers, shared by the sources (which report them) and the
// decoder (which dispatches on them).
#pragma once

namespace flowsketch::capture {

/// Link-layer types, numbered as libpcap's pcap_datalink() returns them (DLT_*)
/// plus the LINKTYPE_* file values where they differ.
namespace link_type {
inline constexpr int null = 0;         // DLT_NULL: 4-byte address family, host byte order
inline constexpr int ethernet = 1;     // DLT_EN10MB
inline constexpr int raw = 12;         // DLT_RAW on Linux
inline constexpr int raw_openbsd = 14; // DLT_RAW on OpenBSD
inline constexpr int raw_linktype = 101;  // LINKTYPE_RAW as stored in files
inline constexpr int loop = 108;       // DLT_LOOP: address family in network byte order
inline constexpr int linux_sll = 113;  // Linux cooked v1
inline constexpr int ipv4 = 228;       // LINKTYPE_IPV4
inline constexpr int ipv6 = 229;       // LINKTYPE_IPV6
inline constexpr int linux_sll2 = 276; // Linux cooked v2
}  // namespace link_type

}  // namespace flowsketch::capture
