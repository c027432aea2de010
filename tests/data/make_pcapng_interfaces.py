#!/usr/bin/env python3
"""Writes the pcapng samples no public capture covers, into pcaps/ (deterministic output).

  generated-pcapng-interfaces.pcapng
      one section, three interfaces of different link types and timestamp units:
      0 Ethernet, microseconds (no if_tsresol), snaplen 65535, if_name "eth0"
      1 LINKTYPE_RAW (101), nanoseconds (if_tsresol 9), snaplen 96: frames cut to it
      2 Linux cooked v1 (113), 2^-20 s units (if_tsresol 0x94) and if_tsoffset 1,000,000,000 s,
        snaplen 0 (no limit)
      Enhanced packet blocks on all three, interleaved; a simple packet block (the section's
      first interface) and an obsolete packet block (type 2) on interface 2; an ARP frame
      (non-IP); blocks to skip (name resolution, interface statistics, an unassigned block
      type, a local-use one).
  generated-pcapng-sections.pcapng
      two sections in different byte orders, each numbering its interfaces from 0:
      section 0 little-endian, interface 0 Ethernet; section 1 big-endian, interface 0
      LINKTYPE_RAW and interface 1 Ethernet with nanosecond units.

Each is checked against tshark: scripts/tshark_truth.py writes their .truth.tsv, and this
script prints the packet count tshark reads next to the number it wrote.

Usage: tests/data/make_pcapng_interfaces.py [OUT_DIR]   (default: pcaps/)
"""

from __future__ import annotations

import pathlib
import struct
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def ipv4(src: str, dst: str, proto: int, payload: bytes) -> bytes:
    total = 20 + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 1, 0, 64, proto, 0,
                         bytes(int(x) for x in src.split(".")), bytes(int(x) for x in dst.split(".")))
    checksum = 0
    for i in range(0, 20, 2):
        checksum += (header[i] << 8) | header[i + 1]
    while checksum > 0xFFFF:
        checksum = (checksum & 0xFFFF) + (checksum >> 16)
    header = header[:10] + struct.pack("!H", ~checksum & 0xFFFF) + header[12:]
    return header + payload


def udp(sport: int, dport: int, size: int) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + size, 0) + bytes(size)


def tcp(sport: int, dport: int, size: int) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x18, 65535, 0, 0) + bytes(size)


def ethernet(payload: bytes, ethertype: int = 0x0800) -> bytes:
    return bytes.fromhex("020000000002") + bytes.fromhex("020000000001") + struct.pack("!H", ethertype) + payload


def sll(payload: bytes) -> bytes:
    # packet type 0 (to us), ARPHRD_ETHER, address length 6, address, protocol IPv4
    return struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("0200000000030000"), 0x0800) + payload


ARP = ethernet(bytes.fromhex("0001080006040001") + bytes(20), 0x0806)


class Writer:
    def __init__(self) -> None:
        self.out = bytearray()
        self.order = "<"

    def block(self, kind: int, body: bytes) -> None:
        body += bytes(-len(body) % 4)
        length = 12 + len(body)
        self.out += struct.pack(self.order + "II", kind, length) + body + struct.pack(self.order + "I", length)

    def option(self, code: int, value: bytes) -> bytes:
        return struct.pack(self.order + "HH", code, len(value)) + value + bytes(-len(value) % 4)

    def section(self, order: str) -> None:
        self.order = order
        self.block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))

    def interface(self, link: int, snaplen: int, options: list[tuple[int, bytes]]) -> None:
        body = struct.pack(self.order + "HHI", link, 0, snaplen)
        if options:
            body += b"".join(self.option(c, v) for c, v in options) + self.option(0, b"")
        self.block(1, body)

    def packet(self, interface: int, ticks: int, data: bytes, snaplen: int | None = None) -> None:
        captured = data if snaplen is None else data[:snaplen]
        body = struct.pack(self.order + "IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF,
                           len(captured), len(data)) + captured
        self.block(6, body)

    def simple(self, data: bytes) -> None:
        self.block(3, struct.pack(self.order + "I", len(data)) + data)

    def obsolete(self, interface: int, ticks: int, data: bytes) -> None:
        body = struct.pack(self.order + "HHIIII", interface, 0, ticks >> 32, ticks & 0xFFFFFFFF,
                           len(data), len(data)) + data
        self.block(2, body)


T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC


def interfaces_file() -> tuple[bytes, int]:
    w = Writer()
    w.section("<")
    w.block(0x00000777, b"before the interfaces")  # an unassigned block type: skipped by length
    w.interface(1, 65535, [(2, b"eth0")])
    w.interface(101, 96, [(2, b"tun0"), (9, bytes([9]))])
    w.interface(113, 0, [(9, bytes([0x80 | 20])), (14, struct.pack("<q", 1_000_000_000))])
    w.block(4, bytes(4))  # name resolution block, no records
    count = 0
    for i in range(60):
        us = (T0 + i) * 1_000_000 + i
        w.packet(0, us, ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, tcp(40000 + i % 3, 443, 100 + i))))
        ns = (T0 + i) * 1_000_000_000 + 500_000_000 + i
        # longer than the interface's snaplen of 96: captured cut, wire length whole
        w.packet(1, ns, ipv4("192.0.2.1", "198.51.100.7", 17, udp(5353, 53 + i % 2, 200)), snaplen=96)
        ticks = ((T0 - 1_000_000_000 + i) << 20) + (3 << 18)  # + 0.75 s, before the offset
        w.packet(2, ticks, sll(ipv4("172.16.0.9", "172.16.0.10", 17, udp(123, 123, 48))))
        count += 3
    w.packet(0, (T0 + 61) * 1_000_000, ARP)
    w.simple(ethernet(ipv4("10.0.0.3", "10.0.0.4", 1, bytes.fromhex("0800f7ff00000000"))))
    w.obsolete(2, ((T0 - 1_000_000_000 + 62) << 20), sll(ipv4("172.16.0.9", "172.16.0.11", 6, tcp(22, 50000, 10))))
    w.block(5, struct.pack("<IIIH", 0, 0, 0, 0))  # interface statistics (no options)
    w.block(0x80000001, b"local use")  # a local-use block type: skipped
    count += 3
    return bytes(w.out), count


def sections_file() -> tuple[bytes, int]:
    w = Writer()
    count = 0
    w.section("<")
    w.interface(1, 65535, [])
    for i in range(20):
        w.packet(0, (T0 + i) * 1_000_000, ethernet(ipv4("10.1.0.1", "10.1.0.2", 17, udp(1000 + i % 4, 2000, 30))))
        count += 1
    w.section(">")  # the next section is big-endian and starts its interfaces from 0 again
    w.interface(101, 65535, [(2, b"raw")])
    w.interface(1, 65535, [(2, b"eth1"), (9, bytes([9]))])
    for i in range(20):
        w.packet(0, (T0 + 100 + i) * 1_000_000, ipv4("10.2.0.1", "10.2.0.2", 6, tcp(3000, 80, i)))
        w.packet(1, (T0 + 100 + i) * 1_000_000_000 + 1, ethernet(ipv4("10.3.0.1", "10.3.0.2", 17, udp(53, 53, i))))
        count += 2
    return bytes(w.out), count


def tshark_count(path: pathlib.Path) -> int:
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "frame.number"],
                         check=True, capture_output=True, text=True).stdout
    return len(out.split())


def main() -> int:
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "pcaps"
    ok = True
    for name, (data, written) in (("generated-pcapng-interfaces.pcapng", interfaces_file()),
                                  ("generated-pcapng-sections.pcapng", sections_file())):
        path = out_dir / name
        path.write_bytes(data)
        read = tshark_count(path)
        print(f"{path}: wrote {written} packets, tshark reads {read}")
        ok = ok and read == written
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
