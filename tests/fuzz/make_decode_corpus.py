#!/usr/bin/env python3
"""Writes the seed corpus of the decode fuzz target into corpus/decode/.

Each file is one selector byte (see decode_fuzz.cpp: low 7 bits pick the link type from
LINK_TYPES below, the high bit selects tight limits) followed by one frame. Valid frames
cover every link type and encapsulation; malformed ones reach each skip reason. Run it
again after changing it: the files are small and their names say what they hold.
Python 3 standard library only.
"""

import pathlib
import struct

# Same order as kLinkTypes in decode_fuzz.cpp.
LINK_TYPES = ["null", "ethernet", "raw", "raw_openbsd", "raw_linktype", "loop",
              "linux_sll", "ipv4", "ipv6", "linux_sll2", "unsupported"]
TIGHT_LIMITS = 0x80

SRC4 = bytes([192, 0, 2, 1])
DST4 = bytes([198, 51, 100, 7])
SRC6 = bytes.fromhex("20010db8000000000000000000000001")
DST6 = bytes.fromhex("20010db80000000000000000beef0002")
TCP, UDP, ICMP, DCCP, ESP, SCTP, UDPLITE, ICMP6 = 6, 17, 1, 33, 50, 132, 136, 58


def be16(v):
    return struct.pack("!H", v)


def be32(v):
    return struct.pack("!I", v)


# Link layers
def ethernet(ethertype):
    return bytes.fromhex("001122334455") + bytes.fromhex("66778899aabb") + be16(ethertype)


def vlan_tag(inner_type, vid=100):
    return be16(vid) + be16(inner_type)


def mpls(label, bottom):
    return be32((label << 12) | (0x100 if bottom else 0) | 64)


def pppoe_session(ppp_protocol, length=0):
    return bytes([0x11, 0x00]) + be16(0x1234) + be16(length) + be16(ppp_protocol)


def sll(protocol):
    return be16(0) + be16(1) + be16(6) + b"\xab" * 8 + be16(protocol)


def sll2(protocol):
    return be16(protocol) + be16(0) + be32(3) + be16(1) + bytes([0, 6]) + b"\xab" * 8


# Network layers
def ipv4(protocol, payload, ihl=5, fragment=0, total_length=None):
    header_length = max(ihl, 5) * 4
    if total_length is None:
        total_length = header_length + len(payload)
    header = bytes([0x40 | ihl, 0]) + be16(total_length) + be16(0x1C46) + be16(fragment)
    header += bytes([64, protocol]) + be16(0) + SRC4 + DST4
    return header + b"\x01" * (header_length - 20) + payload


def ipv6(next_header, payload, payload_length=None):
    if payload_length is None:
        payload_length = len(payload)
    return be32(0x60000000) + be16(payload_length) + bytes([next_header, 64]) + SRC6 + DST6 + payload


def ext_header(next_header, units=0):
    return bytes([next_header, units]) + bytes((units + 1) * 8 - 2)


def auth_header(next_header, units=4):
    return bytes([next_header, units]) + bytes((units + 2) * 4 - 2)


def fragment6(next_header, offset, more):
    return bytes([next_header, 0]) + be16((offset << 3) | int(more)) + be32(0xABCD)


# Transport layers
def tcp(sport, dport, flags, data_offset=5):
    return be16(sport) + be16(dport) + be32(1000) + be32(2000) + bytes([data_offset << 4, flags]) \
        + be16(65535) + be16(0) + be16(0)


def udp(sport, dport, length=None):
    payload = b"\x5a" * 4
    return be16(sport) + be16(dport) + be16(8 + len(payload) if length is None else length) \
        + be16(0) + payload


def ports_then(sport, dport, rest):
    return be16(sport) + be16(dport) + b"\x11" * rest


ICMP_ECHO = bytes.fromhex("0800f7ff00010001")


# Tunnels
def gre(protocol, flags=0, options=b""):
    return be16(flags) + be16(protocol) + options


def udp_tunnel(dport, header, payload):
    return be16(49152) + be16(dport) + be16(8 + len(header) + len(payload)) + be16(0) + header + payload


def geneve(protocol, options=b"", version=0):
    return bytes([(version << 6) | (len(options) // 4), 0]) + be16(protocol) + be32(77 << 8) + options


def gtp_u(payload, flags=0x30, extra=b""):
    return bytes([flags, 0xFF]) + be16(len(extra) + len(payload)) + be32(1) + extra + payload


def seed(link, frame, tight=False):
    return bytes([LINK_TYPES.index(link) | (TIGHT_LIMITS if tight else 0)]) + frame


def corpus():
    ip4_tcp = ipv4(TCP, tcp(49152, 443, 0x12))
    ip6_udp = ipv6(UDP, udp(546, 547))
    return {
        # Valid frames, one per link type and encapsulation.
        "ethernet_ipv4_tcp": seed("ethernet", ethernet(0x0800) + ip4_tcp),
        "ethernet_ipv4_options_udp_padded":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp(1000, 2000), ihl=7) + bytes(6)),
        "ethernet_qinq_ipv6_udp":
            seed("ethernet", ethernet(0x88A8) + vlan_tag(0x8100, 7) + vlan_tag(0x86DD) + ip6_udp),
        "ethernet_9100_vlan_ipv4_tcp":
            seed("ethernet", ethernet(0x9100) + vlan_tag(0x0800) + ip4_tcp),
        "ethernet_mpls2_ipv4_tcp":
            seed("ethernet", ethernet(0x8847) + mpls(16, False) + mpls(17, True) + ip4_tcp),
        "ethernet_pppoe_ipv6_udp":
            seed("ethernet", ethernet(0x8864) + pppoe_session(0x0057, len(ip6_udp) + 2) + ip6_udp),
        "ethernet_ipv4_first_fragment_udp":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp(4000, 53), fragment=0x2000)),
        "ethernet_ipv4_later_fragment":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, b"\xde\xad\xbe\xef", fragment=185)),
        "ethernet_ipv6_ext_chain_tcp":
            seed("ethernet", ethernet(0x86DD) + ipv6(0, ext_header(43) + ext_header(60, 2)
                                                     + ext_header(51) + auth_header(44)
                                                     + fragment6(TCP, 0, True)
                                                     + tcp(1234, 5678, 0x11))),
        "ethernet_ipv6_later_fragment":
            seed("ethernet", ethernet(0x86DD) + ipv6(44, fragment6(UDP, 181, False) + bytes(8))),
        "ethernet_ipv6_esp": seed("ethernet", ethernet(0x86DD) + ipv6(ESP, bytes(16))),
        "sll_ipv4_icmp": seed("linux_sll", sll(0x0800) + ipv4(ICMP, ICMP_ECHO)),
        "sll2_vlan_ipv6_sctp":
            seed("linux_sll2", sll2(0x8100) + vlan_tag(0x86DD) + ipv6(SCTP, ports_then(9, 10, 8))),
        "raw_ipv4_dccp": seed("raw", ipv4(DCCP, ports_then(5001, 5002, 12))),
        "raw_openbsd_ipv6_icmp6": seed("raw_openbsd", ipv6(ICMP6, ICMP_ECHO)),
        "linktype_raw_ipv4_udplite": seed("raw_linktype", ipv4(UDPLITE, ports_then(7, 9, 4))),
        "linktype_ipv4_tcp_total_length_zero":
            seed("ipv4", ipv4(TCP, tcp(5, 6, 0x18), total_length=0)),
        "linktype_ipv6_udp_jumbo_length_zero": seed("ipv6", ipv6(UDP, udp(1, 2, 0), 0)),
        "null_little_endian_ipv6_tcp":
            seed("null", struct.pack("<I", 30) + ipv6(TCP, tcp(33000, 22, 0x02))),
        "null_big_endian_ipv4_udp": seed("null", be32(2) + ipv4(UDP, udp(1, 2))),
        "loop_ipv6_udp": seed("loop", be32(24) + ip6_udp),
        # Tunnels: each type, nested, and broken (keyed by the outer header).
        "ethernet_ipip_4in4_tcp": seed("ethernet", ethernet(0x0800) + ipv4(4, ip4_tcp)),
        "raw_ipv6_4in6_tcp": seed("raw", ipv6(4, ip4_tcp)),
        "ethernet_gre_key_seq_ipv6_udp":
            seed("ethernet", ethernet(0x0800) + ipv4(47, gre(0x86DD, 0xB000, bytes(12)) + ip6_udp)),
        "ethernet_gre_teb_ipv4_tcp":
            seed("ethernet", ethernet(0x0800) + ipv4(47, gre(0x6558) + ethernet(0x0800) + ip4_tcp)),
        "ethernet_erspan2_ipv4_tcp":
            seed("ethernet", ethernet(0x0800) + ipv4(47, gre(0x88BE, 0x1000, bytes(4)) + bytes([0x10]) + bytes(7)
                                                     + ethernet(0x0800) + ip4_tcp)),
        "ethernet_erspan3_platform_ipv4_tcp":
            seed("ethernet", ethernet(0x0800) + ipv4(47, gre(0x22EB) + bytes([0x20]) + bytes(10) + b"\x01"
                                                     + bytes(8) + ethernet(0x0800) + ip4_tcp)),
        "ethernet_vxlan_ipv6_udp":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp_tunnel(4789, b"\x08" + bytes(7),
                                                                     ethernet(0x86DD) + ip6_udp))),
        "ethernet_geneve_options_vxlan_ipv4_tcp":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp_tunnel(
                6081, geneve(0x6558, bytes(8)),
                ethernet(0x0800) + ipv4(UDP, udp_tunnel(4789, b"\x08" + bytes(7), ethernet(0x0800) + ip4_tcp))))),
        "ethernet_gtp_u_extension_ipv4_tcp":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp_tunnel(
                2152, b"", gtp_u(ip4_tcp, 0x34, be16(1) + b"\x00\x85" + b"\x01\x00\x09\x00")))),
        "ethernet_pppoe_compressed_ipv4_tcp":
            seed("ethernet", ethernet(0x8864) + pppoe_session(0, len(ip4_tcp) + 1)[:6] + b"\x21" + ip4_tcp),
        "ethernet_ipip_nested_beyond_tight_limit":
            seed("ethernet", ethernet(0x0800) + ipv4(4, ipv4(4, ip4_tcp)), True),
        "ethernet_ipip_looping_deep": seed("ethernet", ethernet(0x0800) + ipv4(4, ipv4(4, ipv4(4, ipv4(4, ipv4(4, ipv4(4, ip4_tcp))))))),
        "ethernet_gre_truncated_options":
            seed("ethernet", ethernet(0x0800) + ipv4(47, gre(0x0800, 0xB000, bytes(5)))),
        "ethernet_gre_routing": seed("ethernet", ethernet(0x0800) + ipv4(47, gre(0x0800, 0x4000) + bytes(4) + ip4_tcp)),
        "ethernet_vxlan_truncated": seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp_tunnel(4789, b"\x08\x00", b""))),
        "ethernet_geneve_options_past_end":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp_tunnel(6081, bytes([0x3F, 0]) + be16(0x6558) + bytes(4), bytes(8)))),
        "ethernet_gtp_u_extension_length_zero":
            seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp_tunnel(2152, b"", gtp_u(bytes(4), 0x34, bytes(3) + b"\x85" + b"\x00\x00\x00\x00")))),
        # Malformed frames, one per skip reason (and a few ways to reach some).
        "unsupported_link_type": seed("unsupported", ip4_tcp),
        "ethernet_arp": seed("ethernet", ethernet(0x0806) + bytes(28)),
        "ethernet_truncated_vlan": seed("ethernet", ethernet(0x8100) + b"\x00"),
        "ethernet_vlan_beyond_tight_limit":
            seed("ethernet", ethernet(0x8100) + vlan_tag(0x8100) + vlan_tag(0x0800) + ip4_tcp, True),
        "ethernet_mpls_no_bottom_of_stack":
            seed("ethernet", ethernet(0x8847) + mpls(1, False) + mpls(2, False) + ip4_tcp, True),
        "ethernet_mpls_pseudowire_non_ip":
            seed("ethernet", ethernet(0x8847) + mpls(1, True) + ethernet(0x0800) + ip4_tcp),
        "ethernet_pppoe_lcp_non_ip": seed("ethernet", ethernet(0x8864) + pppoe_session(0xC021) + bytes(8)),
        "ethernet_ipv4_ihl4": seed("ethernet", ethernet(0x0800) + ipv4(TCP, tcp(1, 2, 2), ihl=4)),
        "ethernet_ipv4_total_length_19":
            seed("ethernet", ethernet(0x0800) + ipv4(TCP, tcp(1, 2, 2), total_length=19)),
        "ethernet_ipv4_truncated_options": seed("ethernet", ethernet(0x0800) + ipv4(TCP, b"", ihl=15)[:30]),
        "ethernet_ipv6_extension_past_end":
            seed("ethernet", ethernet(0x86DD) + ipv6(0, bytes([UDP, 10]) + bytes(14))),
        "ethernet_ipv6_chain_beyond_tight_limit":
            seed("ethernet", ethernet(0x86DD) + ipv6(0, ext_header(60) + ext_header(UDP) + udp(1, 2)),
                 True),
        "ethernet_tcp_data_offset_3":
            seed("ethernet", ethernet(0x0800) + ipv4(TCP, tcp(1, 2, 2, data_offset=3))),
        "ethernet_udp_length_3": seed("ethernet", ethernet(0x0800) + ipv4(UDP, udp(1, 2, 3))),
        "ethernet_tcp_cut_before_flags": seed("ethernet", ethernet(0x0800) + ip4_tcp[:20 + 13]),
        "raw_version_5": seed("raw", bytes([0x50]) + bytes(39)),
        "null_unknown_family": seed("null", be32(7) + ip4_tcp),
    }


def main():
    directory = pathlib.Path(__file__).resolve().parent / "corpus" / "decode"
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in sorted(corpus().items()):
        (directory / name).write_bytes(data)
    print(f"wrote {len(corpus())} inputs to {directory}")


if __name__ == "__main__":
    main()
