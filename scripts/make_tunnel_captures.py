#!/usr/bin/python3
"""Writes the tunnel captures no public sample covers into pcaps/tunnels/ (generated-*.pcap).

Each is built with scapy, frame by frame, so the layering is visible here; truth comes from
tshark (scripts/tshark_truth.py --innermost), not from this script, except for what tshark
cannot say: for generated-malformed-tunnels.pcap, why each frame's inner packet cannot be keyed
(the reason flowsketch counts under tunnels.outer_keyed), written to
generated-malformed-tunnels.pcap.reasons.tsv.

  generated-4in6.pcap             IPv4 in IPv6 and IPv6 in IPv6 (next header 4 and 41)
  generated-erspan3.pcap          ERSPAN type III, with and without the platform subheader
  generated-gre-options.pcap      GRE with checksum, key and sequence number options
  generated-vxlan-in-geneve.pcap  Geneve (with options) carrying VXLAN carrying TCP
  generated-gtp-extensions.pcap   GTP-U with sequence numbers and extension headers
  generated-pppoe-compressed.pcap PPPoE with the one-byte (compressed) PPP protocol field
  generated-deep-nesting.pcap     IP in IP and GRE nested 6 deep (beyond the depth limit of 4)
  generated-malformed-tunnels.pcap tunnel headers cut short, wrong versions, bad lengths
  generated-tenants.pcap          two tenants with the same inner addresses on two VXLAN VNIs
                                  and two GRE keys, and one untunnelled frame to that address

Usage: scripts/make_tunnel_captures.py   (python3-scapy; deterministic output)
"""

from __future__ import annotations

import pathlib

from scapy.all import (GRE, IP, TCP, UDP, Ether, IPv6, PPPoE, Raw, wrpcap)
from scapy.contrib.erspan import ERSPAN_III, ERSPAN_PlatformSpecific
from scapy.contrib.geneve import GENEVE, GeneveOptions
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.vxlan import VXLAN

OUT = pathlib.Path(__file__).resolve().parent.parent / "pcaps" / "tunnels"
T0 = 1_700_000_000.0
MAC = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
IMAC = dict(src="02:00:00:00:01:01", dst="02:00:00:00:01:02")


def stamp(frames: list) -> list:
    for i, frame in enumerate(frames):
        frame.time = T0 + i * 0.001
    return frames


def tcp(sport: int, dport: int, payload: bytes = b"x" * 12) -> TCP:
    return TCP(sport=sport, dport=dport, flags="PA") / Raw(payload)


def outer4(src="10.0.0.1", dst="10.0.0.2", proto: int | None = None) -> Ether:
    """Ethernet and IPv4; `proto` when the payload is raw bytes scapy cannot name."""
    ip = IP(src=src, dst=dst) if proto is None else IP(src=src, dst=dst, proto=proto)
    return Ether(**MAC) / ip


def four_in_six() -> list:
    frames = []
    for i in range(3):
        frames.append(Ether(**MAC) / IPv6(src="2001:db8::1", dst="2001:db8::2", nh=4) /
                      IP(src="192.168.1.1", dst=f"192.168.2.{i + 1}") / tcp(40000 + i, 443))
    for i in range(2):
        frames.append(Ether(**MAC) / IPv6(src="2001:db8::1", dst="2001:db8::2", nh=41) /
                      IPv6(src="fd00::1", dst=f"fd00::{i + 2}") / UDP(sport=5353, dport=9999) / Raw(b"q" * 20))
    return frames


def erspan3() -> list:
    inner = Ether(**IMAC) / IP(src="172.16.0.1", dst="172.16.0.2") / tcp(1234, 80)
    frames = []
    for i in range(3):
        frames.append(outer4() / GRE(proto=0x22EB, seqnum_present=1, seqence_number=i) /
                      ERSPAN_III(ver=2, session_id=7, ft=0, o=0) / inner)
    for i in range(2):
        frames.append(outer4() / GRE(proto=0x22EB, seqnum_present=1, seqence_number=10 + i) /
                      ERSPAN_III(ver=2, session_id=7, ft=0, o=1) / ERSPAN_PlatformSpecific(platf_id=3) /
                      Ether(**IMAC) / IP(src="172.16.0.3", dst="172.16.0.4") / UDP(sport=9, dport=9) /
                      Raw(b"u" * 8))
    return frames


def gre_options() -> list:
    frames = []
    for i in range(4):
        frames.append(outer4() / GRE(chksum_present=1, key_present=1, seqnum_present=1, key=0x1000 + i,
                                     seqence_number=i, proto=0x0800) /
                      IP(src="10.9.0.1", dst="10.9.0.2") / UDP(sport=1000 + i % 2, dport=2000) / Raw(b"g" * 10))
    for i in range(2):
        frames.append(outer4() / GRE(key_present=1, key=42, proto=0x86DD) /
                      IPv6(src="fd01::1", dst="fd01::2") / tcp(3000, 22))
    frames.append(outer4() / GRE(seqnum_present=1, seqence_number=9, proto=0x6558) /
                  Ether(**IMAC) / IP(src="10.8.0.1", dst="10.8.0.2") / tcp(5, 6))
    return frames


def vxlan_in_geneve() -> list:
    frames = []
    for i in range(4):
        vxlan = (Ether(**IMAC) / IP(src="100.64.0.1", dst="100.64.0.2") / UDP(sport=49152 + i, dport=4789) /
                 VXLAN(vni=5001) / Ether(**IMAC) / IP(src="10.1.1.1", dst="10.1.1.2") / tcp(33000, 8080 + i % 2))
        options = GeneveOptions(classid=0x0102, type=0x80, data=b"\x00\x00\x00\x01")
        frames.append(outer4("198.51.100.1", "198.51.100.2") / UDP(sport=50000, dport=6081) /
                      GENEVE(vni=77, proto=0x6558, options=[options]) / vxlan)
    return frames


def gtp_extensions() -> list:
    frames = []
    for i in range(3):
        # S and E flags: sequence number, then a PDU session container (type 0x85).
        frames.append(outer4("10.20.0.1", "10.20.0.2") / UDP(sport=2152, dport=2152) /
                      GTP_U_Header(teid=0x100 + i, S=1, E=1, seq=i, next_ex=0x85) /
                      GTPPDUSessionContainer(type=0, QFI=9, NextExtHdr=0) /
                      IP(src="10.45.0.7", dst="8.8.8.8") / UDP(sport=40000 + i, dport=9999) / Raw(b"d" * 16))
    frames.append(outer4("10.20.0.1", "10.20.0.2") / UDP(sport=2152, dport=2152) /
                  GTP_U_Header(teid=0x200, S=1, seq=5) /
                  IPv6(src="2001:db8:45::7", dst="2001:db8::53") / tcp(41000, 443))
    return frames


def pppoe_compressed() -> list:
    frames = []
    for i in range(3):
        frames.append(Ether(**MAC, type=0x8864) / PPPoE(sessionid=0x11) / Raw(b"\x21") /
                      IP(src="100.70.0.9", dst="203.0.113.5") / tcp(51000 + i, 443))
    frames.append(Ether(**MAC, type=0x8864) / PPPoE(sessionid=0x11) / Raw(b"\x57") /
                  IPv6(src="2001:db8:70::9", dst="2001:db8:113::5") / tcp(52000, 80))
    # The uncompressed field still decodes the same way.
    frames.append(Ether(**MAC, type=0x8864) / PPPoE(sessionid=0x11) / Raw(b"\x00\x21") /
                  IP(src="100.70.0.9", dst="203.0.113.5") / tcp(51000, 443))
    for frame in frames:
        frame[PPPoE].len = len(frame[PPPoE].payload)
    return frames


def deep_nesting() -> list:
    frames = []
    packet = IP(src="10.99.0.1", dst="10.99.0.2") / tcp(7, 7)
    for level in range(6):
        packet = IP(src=f"10.0.{level}.1", dst=f"10.0.{level}.2") / packet
        frames.append(Ether(**MAC) / packet.copy())
    packet = IPv6(src="fd99::1", dst="fd99::2") / UDP(sport=8, dport=8) / Raw(b"n" * 4)
    for level in range(6):
        packet = IP(src=f"10.1.{level}.1", dst=f"10.1.{level}.2") / GRE(proto=0x0800 if level else 0x86DD) / packet
        frames.append(Ether(**MAC) / packet.copy())
    return frames


def malformed() -> tuple[list, list[tuple[int, str]]]:
    """Frames whose tunnel header or inner packet is broken, with the reason for each."""
    inner = IP(src="10.5.0.1", dst="10.5.0.2") / tcp(1, 2)
    cases = []

    def add(frame, reason: str) -> None:
        cases.append((frame, reason))

    # GRE cut inside its base header and inside its key option.
    add(outer4(proto=47) / Raw(b"\x00\x00"), "truncated_tunnel")
    add(outer4(proto=47) / Raw(bytes(GRE(key_present=1, key=5, proto=0x0800))[:6]), "truncated_tunnel")
    # GRE with the routing bit (RFC 1701), not decapsulated.
    add(outer4(proto=47) / Raw(b"\x40\x00\x08\x00\x00\x00\x00\x00") / inner, "invalid_tunnel")
    # IPv4 in IP cut inside the inner header.
    add(outer4(proto=4) / Raw(bytes(inner)[:12]), "truncated_ip")
    # Inner IPv4 with a wrong version nibble.
    add(outer4(proto=4) / Raw(b"\x65" + bytes(inner)[1:]), "invalid_ip")
    # VXLAN cut inside its header, and inside the inner Ethernet header.
    add(outer4() / UDP(sport=1, dport=4789) / Raw(b"\x08\x00\x00"), "truncated_tunnel")
    add(outer4() / UDP(sport=1, dport=4789) / VXLAN(vni=1) / Raw(b"\x02\x00\x00\x00"), "truncated_link")
    # Geneve with version 1, and with options running past the datagram.
    add(outer4() / UDP(sport=1, dport=6081) / Raw(b"\x40\x00\x65\x58\x00\x00\x01\x00") / Ether(**IMAC) / inner,
        "invalid_tunnel")
    add(outer4() / UDP(sport=1, dport=6081) / Raw(b"\x3f\x00\x65\x58\x00\x00\x01\x00") / Raw(b"\x00" * 8),
        "truncated_tunnel")
    # Geneve carrying an Ethernet frame with ARP inside: not IP.
    add(outer4() / UDP(sport=1, dport=6081) / GENEVE(proto=0x6558) / Ether(**IMAC, type=0x0806) / Raw(b"\x00" * 28),
        "non_ip")
    # GTP with version 2, and with an extension header of length 0.
    add(outer4() / UDP(sport=2152, dport=2152) / Raw(b"\x50\xff\x00\x00\x00\x00\x00\x01") / inner, "invalid_tunnel")
    add(outer4() / UDP(sport=2152, dport=2152) /
        Raw(b"\x34\xff\x00\x08\x00\x00\x00\x01" + b"\x00\x01\x00\x85" + b"\x00\x00\x00\x00"), "invalid_tunnel")
    # ERSPAN III with version 1.
    add(outer4() / GRE(proto=0x22EB) / Raw(b"\x10" + b"\x00" * 11) / Ether(**IMAC) / inner, "invalid_tunnel")
    # VXLAN whose inner TCP header is cut before its ports end.
    add(outer4() / UDP(sport=1, dport=4789) / VXLAN(vni=1) / Ether(**IMAC, type=0x0800) / Raw(bytes(inner)[:22]),
        "truncated_transport")
    frames = [frame for frame, _ in cases]
    return frames, [(i + 1, reason) for i, (_, reason) in enumerate(cases)]


def tenants() -> list:
    """The same inner flow (192.168.0.1 -> 192.168.0.10, TCP 40000 -> 80) in four tenants:
    VXLAN VNI 100 (3 frames, from 10.0.0.1) and 200 (5 frames, from 10.0.0.3) to 10.0.0.2,
    GRE key 7 (2 frames) and key 9 (4 frames) between 10.0.1.1 and 10.0.1.2; then the same
    flow untunnelled (1 frame)."""
    inner = IP(src="192.168.0.1", dst="192.168.0.10") / tcp(40000, 80)
    frames = []
    for vni, src, count in [(100, "10.0.0.1", 3), (200, "10.0.0.3", 5)]:
        for _ in range(count):
            frames.append(outer4(src=src, dst="10.0.0.2") / UDP(sport=50000, dport=4789) / VXLAN(vni=vni) /
                          Ether(**IMAC) / inner)
    for key, count in [(7, 2), (9, 4)]:
        for _ in range(count):
            frames.append(outer4(src="10.0.1.1", dst="10.0.1.2") / GRE(key_present=1, key=key, proto=0x0800) / inner)
    frames.append(Ether(**MAC) / inner)
    return frames


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, frames in [
        ("generated-4in6.pcap", four_in_six()),
        ("generated-erspan3.pcap", erspan3()),
        ("generated-gre-options.pcap", gre_options()),
        ("generated-vxlan-in-geneve.pcap", vxlan_in_geneve()),
        ("generated-gtp-extensions.pcap", gtp_extensions()),
        ("generated-pppoe-compressed.pcap", pppoe_compressed()),
        ("generated-deep-nesting.pcap", deep_nesting()),
        ("generated-tenants.pcap", tenants()),
    ]:
        wrpcap(str(OUT / name), stamp(frames))
    frames, reasons = malformed()
    wrpcap(str(OUT / "generated-malformed-tunnels.pcap"), stamp(frames))
    lines = ["# frame\treason its inner packet is left unkeyed (flowsketch tunnels.outer_keyed)"]
    lines += [f"{number}\t{reason}" for number, reason in reasons]
    (OUT / "generated-malformed-tunnels.pcap.reasons.tsv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
