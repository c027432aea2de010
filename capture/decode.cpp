// Bounds-checked decoding of one frame into a flow key; the contract is in decode.hpp.
//
// Every read goes through Reader, a cursor over (pointer, remaining length). A read
// first compares its byte count with the remaining length (never `ptr + n > end`,
// which can overflow), so nothing past the captured length is touched. Fixed-size
// headers are taken whole with one such check into a Header<N>, whose fields are read
// at offsets checked against N at compile time: one branch per header, not per field.
// Header structs are never overlaid on packet bytes. Truncated (bytes missing) and
// invalid (fields contradict each other) are separate reasons, as in tcpdump.
//
// A header is read as far as the last field the decoder uses or checks; bytes after
// that (e.g. the rest of a TCP header) need not be captured.
#include "capture/decode.hpp"

#include <algorithm>
#include <cstring>

namespace flowsketch::capture {
namespace {

// N captured bytes, verified by Reader::take; field offsets are checked at compile time.
template <std::size_t N>
class Header {
  public:
    template <std::size_t Offset>
    [[nodiscard]] std::uint8_t u8() const noexcept {
        static_assert(Offset + 1 <= N, "field outside the header");
        return data_[Offset];
    }
    template <std::size_t Offset>
    [[nodiscard]] std::uint16_t be16() const noexcept {
        static_assert(Offset + 2 <= N, "field outside the header");
        return static_cast<std::uint16_t>((data_[Offset] << 8) | data_[Offset + 1]);
    }
    template <std::size_t Offset>
    [[nodiscard]] std::uint32_t be32() const noexcept {
        static_assert(Offset + 4 <= N, "field outside the header");
        return (std::uint32_t{data_[Offset]} << 24) | (std::uint32_t{data_[Offset + 1]} << 16) |
               (std::uint32_t{data_[Offset + 2]} << 8) | std::uint32_t{data_[Offset + 3]};
    }
    // The field's bytes in place (valid as long as the frame).
    template <std::size_t Offset, std::size_t Count>
    [[nodiscard]] const std::uint8_t* bytes() const noexcept {
        static_assert(Offset + Count <= N, "field outside the header");
        return data_ + Offset;
    }

  private:
    friend class Reader;
    const std::uint8_t* data_ = nullptr;
};

class Reader {
  public:
    Reader(const std::uint8_t* data, std::size_t length) noexcept
        : data_(data), remaining_(data == nullptr ? 0 : length) {}

    // Narrows the window to the first `length` bytes (if fewer remain, nothing
    // changes): the IP length bounds everything after the IP header.
    void clamp(std::size_t length) noexcept {
        if (length < remaining_) remaining_ = length;
    }

    // Takes the next N bytes as a header, or fails (and moves nothing) if fewer remain.
    template <std::size_t N>
    [[nodiscard]] bool take(Header<N>& header) noexcept {
        if (remaining_ < N) return false;
        header.data_ = data_;
        data_ += N;
        remaining_ -= N;
        return true;
    }

    [[nodiscard]] bool skip(std::size_t n) noexcept {
        if (remaining_ < n) return false;
        if (n != 0) {  // never offsets a null pointer (empty input)
            data_ += n;
            remaining_ -= n;
        }
        return true;
    }

    [[nodiscard]] bool peek_u8(std::uint8_t& value) const noexcept {
        if (remaining_ < 1) return false;
        value = data_[0];
        return true;
    }

  private:
    const std::uint8_t* data_;
    std::size_t remaining_;
};

namespace ethertype {
constexpr std::uint16_t ipv4 = 0x0800;
constexpr std::uint16_t ipv6 = 0x86DD;
constexpr std::uint16_t vlan = 0x8100;      // 802.1Q
constexpr std::uint16_t qinq = 0x88A8;      // 802.1ad service tag
constexpr std::uint16_t qinq_old = 0x9100;  // pre-standard double tagging
constexpr std::uint16_t mpls_unicast = 0x8847;
constexpr std::uint16_t mpls_multicast = 0x8848;
constexpr std::uint16_t pppoe_session = 0x8864;
}  // namespace ethertype

namespace ip_proto {
constexpr std::uint8_t hop_by_hop = 0;
constexpr std::uint8_t tcp = 6;
constexpr std::uint8_t udp = 17;
constexpr std::uint8_t dccp = 33;
constexpr std::uint8_t routing = 43;
constexpr std::uint8_t fragment = 44;
constexpr std::uint8_t auth = 51;  // AH
constexpr std::uint8_t dest_options = 60;
constexpr std::uint8_t sctp = 132;
constexpr std::uint8_t udp_lite = 136;
}  // namespace ip_proto

// Fills the ports (and TCP flags) of the transport header at the reader, or
// leaves them 0 for protocols without ports (ICMP, GRE, ESP, ...). Tunnels are
// keyed by their outer header: nothing here descends into a payload.
// The hot path (link header, IPv4, ports) is inlined into decode_frame, so the
// Reader stays in registers: through calls it lived in memory, and decoding
// an IPv4 TCP frame took about twice the instructions.
#define FLOWSKETCH_HOT [[gnu::always_inline]] inline

FLOWSKETCH_HOT SkipReason read_ports(Reader& r, std::uint8_t protocol, std::uint16_t& sport,
                                     std::uint16_t& dport, std::uint8_t& tcp_flags) noexcept {
    switch (protocol) {
        case ip_proto::tcp: {
            // Ports, sequence and acknowledgement numbers, data offset, flags.
            Header<14> tcp;
            if (!r.take(tcp)) return SkipReason::truncated_transport;
            if ((tcp.u8<12>() >> 4) < 5) return SkipReason::invalid_transport;
            sport = tcp.be16<0>();
            dport = tcp.be16<2>();
            tcp_flags = tcp.u8<13>();
            return SkipReason::none;
        }
        case ip_proto::udp: {
            // Ports and length (the checksum is not needed).
            Header<6> udp;
            if (!r.take(udp)) return SkipReason::truncated_transport;
            // 0 is legal: IPv6 jumbograms (RFC 2675) and offloaded segments carry it.
            const std::uint16_t udp_length = udp.be16<4>();
            if (udp_length != 0 && udp_length < 8) return SkipReason::invalid_transport;
            sport = udp.be16<0>();
            dport = udp.be16<2>();
            return SkipReason::none;
        }
        case ip_proto::sctp:
        case ip_proto::udp_lite:
        case ip_proto::dccp: {
            Header<4> ports;
            if (!r.take(ports)) return SkipReason::truncated_transport;
            sport = ports.be16<0>();
            dport = ports.be16<2>();
            return SkipReason::none;
        }
        default:
            return SkipReason::none;
    }
}

FLOWSKETCH_HOT SkipReason decode_ipv4_inline(Reader& r, DecodedPacket& out) noexcept {
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
        const SkipReason reason = read_ports(r, protocol, sport, dport, out.tcp_flags);
        if (reason != SkipReason::none) return reason;
    }
    out.key.assign_ipv4(ip.be32<12>(), ip.be32<16>(), sport, dport, protocol);
    return SkipReason::none;
}

// IPv4 behind PPPoE, MPLS, raw IP or a loopback header: one out-of-line copy.
// The out-of-line steps take the Reader by value (they end the walk), so the
// hot path's Reader never has its address taken and stays in registers.
[[gnu::noinline]] SkipReason decode_ipv4(Reader r, DecodedPacket& out) noexcept {
    return decode_ipv4_inline(r, out);
}

SkipReason decode_ipv6(Reader r, DecodedPacket& out, const DecodeLimits& limits) noexcept {
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
        if (extension_headers == limits.max_ipv6_extension_headers) {
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
        const SkipReason reason = read_ports(r, next_header, sport, dport, out.tcp_flags);
        if (reason != SkipReason::none) return reason;
    }
    out.key.assign_ipv6(ip.bytes<8, 16>(), ip.bytes<24, 16>(), sport, dport, next_header);
    return SkipReason::none;
}

// Raw IP and MPLS payloads say nothing about the version but its first nibble.
SkipReason decode_ip_by_version(Reader r, DecodedPacket& out, const DecodeLimits& limits,
                                SkipReason otherwise) noexcept {
    std::uint8_t first = 0;
    if (!r.peek_u8(first)) return SkipReason::truncated_ip;
    switch (first >> 4) {
        case 4:
            return decode_ipv4(r, out);
        case 6:
            return decode_ipv6(r, out, limits);
        default:
            return otherwise;
    }
}

// Dispatches on an Ethernet type (also the protocol field of Linux cooked
// captures): VLAN tags and MPLS labels are peeled within the limits.
FLOWSKETCH_HOT SkipReason decode_ethertype(Reader& r, std::uint16_t type, DecodedPacket& out,
                                           const DecodeLimits& limits) noexcept {
    for (unsigned tags = 0;; ++tags) {
        if (type != ethertype::vlan && type != ethertype::qinq && type != ethertype::qinq_old) {
            break;
        }
        if (tags == limits.max_vlan_tags) return SkipReason::link_limit;
        Header<4> tag;  // tag control information, inner type
        if (!r.take(tag)) return SkipReason::truncated_link;
        type = tag.be16<2>();
    }

    switch (type) {
        case ethertype::ipv4:
            return decode_ipv4_inline(r, out);
        case ethertype::ipv6:
            return decode_ipv6(r, out, limits);
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
            return decode_ip_by_version(r, out, limits, SkipReason::non_ip);
        case ethertype::pppoe_session: {
            // Version/type, code, session id, length, then the PPP protocol.
            Header<8> pppoe;
            if (!r.take(pppoe)) return SkipReason::truncated_link;
            const std::uint16_t ppp_protocol = pppoe.be16<6>();
            if (ppp_protocol == 0x0021) return decode_ipv4(r, out);
            if (ppp_protocol == 0x0057) return decode_ipv6(r, out, limits);
            return SkipReason::non_ip;
        }
        default:
            return SkipReason::non_ip;  // ARP, 802.3 length/LLC, LLDP, PPPoE discovery, ...
    }
}

// BSD address families seen in DLT_NULL/DLT_LOOP headers: IPv4 is 2 everywhere,
// IPv6 differs by OS (Linux 10, OpenBSD 24, FreeBSD 28, macOS 30).
SkipReason decode_address_family(Reader r, std::uint32_t family, DecodedPacket& out,
                                 const DecodeLimits& limits) noexcept {
    switch (family) {
        case 2:
            return decode_ipv4(r, out);
        case 10:
        case 24:
        case 28:
        case 30:
            return decode_ipv6(r, out, limits);
        default:
            return SkipReason::non_ip;
    }
}

// Ethernet, IPv4 without options, TCP or UDP, the first (or only) fragment,
// every header captured: nearly every frame of most links. One take of the 48
// bytes it may read, then fields at fixed offsets, without the general path's
// dispatch on link type, Ethernet type, options and protocol. A frame it does
// not take, including every frame that would be skipped, goes the general way,
// which keys the frames it takes exactly as this does
// (tests/capture/decode_test.cpp compares the two).
FLOWSKETCH_HOT bool decode_ethernet_ipv4(const std::uint8_t* data, std::size_t length,
                                         DecodedPacket& out) noexcept {
    Reader r(data, length);
    Header<48> h;  // Ethernet 14, IPv4 without options 20, TCP as far as its flags 14
    if (!r.take(h)) return false;
    if (h.be16<12>() != ethertype::ipv4 || h.u8<14>() != 0x45) return false;
    const std::uint16_t fragment_field = h.be16<20>();
    if ((fragment_field & 0x1FFFu) != 0) return false;
    // The transport bytes the IP length leaves in the captured window (as Reader::clamp).
    std::size_t window = length - 34;
    const std::uint16_t total_length = h.be16<16>();
    if (total_length != 0) {
        if (total_length < 20) return false;
        window = std::min<std::size_t>(window, total_length - 20u);
    }
    const std::uint8_t protocol = h.u8<23>();
    std::uint8_t tcp_flags = 0;
    if (protocol == ip_proto::tcp) {
        if (window < 14 || (h.u8<46>() >> 4) < 5) return false;
        tcp_flags = h.u8<47>();
    } else if (protocol == ip_proto::udp) {
        const std::uint16_t udp_length = h.be16<38>();
        if (window < 6 || (udp_length != 0 && udp_length < 8)) return false;
    } else {
        return false;
    }
    out.tcp_flags = tcp_flags;
    out.is_fragment = (fragment_field & 0x2000u) != 0;
    out.key.assign_ipv4(h.be32<26>(), h.be32<30>(), h.be16<34>(), h.be16<36>(), protocol);
    return true;
}

constexpr std::array<std::string_view, skip_reason_count> skip_reason_names = {
    "none",
    "unsupported_link_type",
    "non_ip",
    "truncated_link",
    "link_limit",
    "truncated_ip",
    "invalid_ip",
    "ipv6_extension_limit",
    "truncated_transport",
    "invalid_transport",
};

}  // namespace

std::string_view skip_reason_name(SkipReason reason) noexcept {
    const auto index = static_cast<std::size_t>(reason);
    return index < skip_reason_names.size() ? skip_reason_names[index] : "unknown";
}

bool is_supported_link_type(int link_type) noexcept {
    switch (link_type) {
        case link_type::null:
        case link_type::ethernet:
        case link_type::raw:
        case link_type::raw_openbsd:
        case link_type::raw_linktype:
        case link_type::loop:
        case link_type::linux_sll:
        case link_type::ipv4:
        case link_type::ipv6:
        case link_type::linux_sll2:
            return true;
        default:
            return false;
    }
}

SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits) noexcept {
    if (link_type == link_type::ethernet && decode_ethernet_ipv4(data, captured_length, out)) {
        return SkipReason::none;
    }
    out.tcp_flags = 0;
    out.is_fragment = false;
    Reader r(data, captured_length);
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
            return decode_ip_by_version(r, out, limits, SkipReason::invalid_ip);
        case link_type::null: {
            Header<4> family;
            if (!r.take(family)) return SkipReason::truncated_link;
            // Host byte order of the capturing machine, unknown here: every valid
            // family is < 256, so whichever order gives a small value is the one.
            std::uint32_t value = family.be32<0>();
            if (value > 0xFFu) value = __builtin_bswap32(value);
            return decode_address_family(r, value, out, limits);
        }
        case link_type::loop: {
            Header<4> family;
            if (!r.take(family)) return SkipReason::truncated_link;
            return decode_address_family(r, family.be32<0>(), out, limits);
        }
        default:
            return SkipReason::unsupported_link_type;
    }
    return decode_ethertype(r, type, out, limits);  // the one call site: inlined
}

}  // namespace flowsketch::capture
