#!/usr/bin/env python3
"""Independent per-flow ground truth for the sample captures, computed with tshark.

For each capture, writes <capture>.truth.tsv next to it: '#' comment lines (tshark command and
version, totals), then a header and one line per directional 5-tuple flow.

Convention (the one pcaps/SOURCES.md counts with):
  * key on the OUTERMOST IP header (IPv4 or IPv6, whichever comes first in frame.protocols);
    tunnels (Teredo, LISP data, IP-in-IP) are keyed on the outer header;
  * proto = the outer datagram's upper-layer protocol (IPv6: after its extension headers);
  * ports from a TCP/UDP/SCTP header that directly follows the outer IP layer, else 0
    (ICMP, non-first fragments, anything else);
  * reassembly is off, so every frame counts exactly once; bytes = frame.len (wire length);
  * non-IP frames (ARP, ...) count only towards '# frames'.

With --innermost (flowsketch's default, --tunnels inner; docs/decoding.md), the key is instead
the innermost IP header reached through tunnels: from an IP layer, IP in IP (ip or ipv6 next),
GRE (gre, then erspan, eth, vlan layers up to an IP layer), and UDP carrying vxlan, geneve or gtp
(up to an IP layer) lead one tunnel deeper, at most --max-depth (default 4) tunnels; a tunnel
whose payload reaches no IP layer (ARP, LLDP, GTP signalling) leaves the key on the header that
carried it. Truth files of captures without tunnels are the same either way.

tshark is a development-time tool: tests read the committed .truth.tsv files, not tshark.

With --tunnel-key, writes <capture>.tunnel.truth.tsv instead: the frames keyed through a tunnel
(as --innermost, at most 4 deep) counted by the outermost tunnel's endpoints (the outermost IP
header's addresses) and type, and by the id of the innermost tunnel crossed that has one (VXLAN or
Geneve VNI, GRE key; 0 when none): flowsketch's `--key tunnel+vni` (docs/keys.md).

Usage: scripts/tshark_truth.py [--innermost] [--max-depth N] [--suffix S] [CAPTURE ...]
       scripts/tshark_truth.py --tunnel-key CAPTURE ...
       (default: every pcaps/*.pcap and *.pcapng, outermost, written to <capture>.truth.tsv;
       --suffix .outer.truth.tsv writes <capture>.outer.truth.tsv instead)
"""

from __future__ import annotations

import collections
import ipaddress
import pathlib
import shlex
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
PCAP_DIR = REPO / "pcaps"

# Reassembly off: a reassembled datagram would be attributed to one frame and change counts.
TSHARK_PREFS = [
    "-o", "ip.defragment:FALSE",
    "-o", "ipv6.defragment:FALSE",
    "-o", "tcp.desegment_tcp_streams:FALSE",
    "-o", "udp.try_heuristic_first:FALSE",
]

FIELDS = [
    "frame.len", "frame.protocols",
    "ip.src", "ip.dst", "ip.proto",
    "ipv6.src", "ipv6.dst", "ipv6.nxt",
    "ipv6.hopopts.nxt", "ipv6.routing.nxt", "ipv6.fraghdr.nxt", "ipv6.dstopts.nxt",
    "tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport", "sctp.srcport", "sctp.dstport",
]

# frame.protocols name of an IPv6 extension header -> the field holding its Next Header.
IPV6_EXTENSIONS = {
    "ipv6.hopopts": "ipv6.hopopts.nxt",
    "ipv6.routing": "ipv6.routing.nxt",
    "ipv6.fraghdr": "ipv6.fraghdr.nxt",
    "ipv6.dstopts": "ipv6.dstopts.nxt",
}
TRANSPORTS = ("tcp", "udp", "sctp")
# Layers between a tunnel header and the IP layer it carries.
TUNNEL_LINK_LAYERS = ("erspan", "eth", "ethertype", "vlan")
UDP_TUNNELS = ("vxlan", "geneve", "gtp")

HEADER = "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes"


# The tunnel ids, read by --tunnel-key only.
TUNNEL_ID_FIELDS = {"vxlan": "vxlan.vni", "geneve": "geneve.vni", "gre": "gre.key"}
TUNNEL_HEADER = "type\tsrc\tdst\tvni\tpackets\tbytes"


def tshark_command(capture: pathlib.Path, fields: list[str] = FIELDS) -> list[str]:
    cmd = ["tshark", "-n", "-r", str(capture), *TSHARK_PREFS, "-T", "fields",
           "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for field in fields:
        cmd += ["-e", field]
    return cmd


def tshark_version() -> str:
    out = subprocess.run(["tshark", "--version"], check=True, capture_output=True, text=True)
    return out.stdout.splitlines()[0].strip()


def occurrence(values: dict[str, list[str]], field: str, index: int) -> str:
    """The index-th occurrence of a field in the frame (layers of one kind, in order)."""
    items = values[field]
    if index >= len(items) or items[index] == "":
        raise ValueError(f"field {field} has no occurrence {index}: {items}")
    return items[index]


def tunnelled_ip(layers: list[str], after: int) -> int | None:
    """Position of the IP layer a tunnel starting at layers[after] carries, or None."""
    if after >= len(layers):
        return None
    if layers[after] in ("ip", "ipv6"):
        return after
    if layers[after] == "gre":
        start = after + 1
    elif layers[after] == "udp" and after + 1 < len(layers) and layers[after + 1] in UDP_TUNNELS:
        start = after + 2
    else:
        return None
    pos = start
    while pos < len(layers) and layers[pos] in TUNNEL_LINK_LAYERS:
        pos += 1
    return pos if pos < len(layers) and layers[pos] in ("ip", "ipv6") else None


def flow_of(line: str, max_depth: int = 0) -> tuple[int, tuple | None]:
    """(frame length, flow key or None for a non-IP frame) from one tshark output line;
    max_depth > 0 keys on the innermost IP header within that many tunnels."""
    parts = line.rstrip("\n").split("\t")
    if len(parts) != len(FIELDS):
        raise ValueError(f"unexpected tshark line: {line!r}")
    values = {f: (p.split(",") if p else []) for f, p in zip(FIELDS, parts)}
    frame_len = int(values["frame.len"][0])
    layers = values["frame.protocols"][0].split(":")

    outer = next((i for i, name in enumerate(layers) if name in ("ip", "ipv6")), None)
    if outer is None:
        return frame_len, None

    def count_before(name: str, pos: int) -> int:
        return layers[:pos].count(name)

    def upper_layer(ip: int) -> int:
        pos = ip + 1
        while pos < len(layers) and layers[pos] in IPV6_EXTENSIONS:
            pos += 1
        return pos

    for _ in range(max_depth):
        inner = tunnelled_ip(layers, upper_layer(outer))
        if inner is None:
            break
        outer = inner

    if layers[outer] == "ip":
        n = count_before("ip", outer)
        src = occurrence(values, "ip.src", n)
        dst = occurrence(values, "ip.dst", n)
        proto = int(occurrence(values, "ip.proto", n), 0)
        after = outer + 1
    else:
        n = count_before("ipv6", outer)
        src = occurrence(values, "ipv6.src", n)
        dst = occurrence(values, "ipv6.dst", n)
        proto = int(occurrence(values, "ipv6.nxt", n), 0)
        after = outer + 1
        # Walk the outer datagram's extension headers: the last one names the upper layer.
        while after < len(layers) and layers[after] in IPV6_EXTENSIONS:
            ext = layers[after]
            proto = int(occurrence(values, IPV6_EXTENSIONS[ext], count_before(ext, after)), 0)
            after += 1

    sport = dport = 0
    if after < len(layers) and layers[after] in TRANSPORTS:
        t = layers[after]
        n = count_before(t, after)
        sport = int(occurrence(values, f"{t}.srcport", n))
        dport = int(occurrence(values, f"{t}.dstport", n))

    return frame_len, (proto, ipaddress.ip_address(src), ipaddress.ip_address(dst), sport, dport)


def tunnel_of(line: str, max_depth: int = 4) -> tuple[int, tuple | None]:
    """(frame length, (type, outer src, outer dst, id) or None when the frame is not keyed
    through a tunnel) from one line of tshark_command(capture, FIELDS + tunnel id fields)."""
    fields = FIELDS + list(TUNNEL_ID_FIELDS.values())
    parts = line.rstrip("\n").split("\t")
    if len(parts) != len(fields):
        raise ValueError(f"unexpected tshark line: {line!r}")
    values = {f: (p.split(",") if p else []) for f, p in zip(fields, parts)}
    frame_len = int(values["frame.len"][0])
    layers = values["frame.protocols"][0].split(":")
    outer = next((i for i, name in enumerate(layers) if name in ("ip", "ipv6")), None)
    if outer is None:
        return frame_len, None

    def upper_layer(ip: int) -> int:
        pos = ip + 1
        while pos < len(layers) and layers[pos] in IPV6_EXTENSIONS:
            pos += 1
        return pos

    def tunnel_type(pos: int) -> str:
        name = layers[pos]
        if name in ("ip", "ipv6"):
            return "ip_in_ip"
        if name == "gre":
            return "erspan" if pos + 1 < len(layers) and layers[pos + 1] == "erspan" else "gre"
        return {"vxlan": "vxlan", "geneve": "geneve", "gtp": "gtp_u"}[layers[pos + 1]]

    def tunnel_id(pos: int) -> int | None:
        name = layers[pos] if layers[pos] != "udp" else layers[pos + 1]
        if name not in TUNNEL_ID_FIELDS or tunnel_type(pos) == "erspan":
            return None
        found = values[TUNNEL_ID_FIELDS[name]]
        if name == "gre" and len(found) != layers.count("gre"):
            if layers.count("gre") == 1:
                return int(found[0], 0) if found else None
            raise ValueError(f"GRE keys of nested GRE tunnels cannot be matched to them: {line!r}")
        return int(found[layers[:pos + (1 if name != "gre" else 0)].count(name)], 0)

    n = layers[:outer].count(layers[outer])
    family = "ip" if layers[outer] == "ip" else "ipv6"
    src = ipaddress.ip_address(occurrence(values, f"{family}.src", n))
    dst = ipaddress.ip_address(occurrence(values, f"{family}.dst", n))
    first_type = None
    vni = 0
    ip = outer
    for _ in range(max_depth):
        start = upper_layer(ip)
        inner = tunnelled_ip(layers, start)
        if inner is None:
            break
        if first_type is None:
            first_type = tunnel_type(start)
        tunnel_vni = tunnel_id(start)
        if tunnel_vni is not None:
            vni = tunnel_vni  # deeper tunnels come later: the innermost with an id wins
        ip = inner
    if first_type is None:
        return frame_len, None
    return frame_len, (first_type, src, dst, vni)


def tunnel_truth_for(capture: pathlib.Path, version: str) -> tuple[str, int]:
    cmd = tshark_command(capture, FIELDS + list(TUNNEL_ID_FIELDS.values()))
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    tunnels: dict[tuple, list[int]] = collections.defaultdict(lambda: [0, 0])
    frames = tunnelled = 0
    for line in run.stdout.splitlines():
        if not line:
            continue
        frame_len, key = tunnel_of(line)
        frames += 1
        if key is None:
            continue
        tunnelled += 1
        tunnels[key][0] += 1
        tunnels[key][1] += frame_len
    shown = [c if c != str(capture) else f"pcaps/{capture.name}" for c in cmd]
    lines = [
        f"# tunnel-key truth for {capture.name}, generated by scripts/tshark_truth.py --tunnel-key",
        "# frames keyed through a tunnel (at most 4 deep), by the outermost tunnel's type and endpoints",
        "# and the innermost tunnel id (VXLAN/Geneve VNI, GRE key; 0: none)",
        f"# tshark: {version}",
        f"# command: {shlex.join(shown)}",
        f"# frames {frames}",
        f"# tunnelled {tunnelled}",
        f"# keys {len(tunnels)}",
        TUNNEL_HEADER,
    ]
    for (kind, src, dst, vni), (packets, nbytes) in sorted(
            tunnels.items(), key=lambda item: (-item[1][0], item[0][0], int(item[0][1]), int(item[0][2]), item[0][3])):
        lines.append(f"{kind}\t{src}\t{dst}\t{vni}\t{packets}\t{nbytes}")
    return "\n".join(lines) + "\n", len(tunnels)


def sort_key(item: tuple[tuple, list[int]]) -> tuple:
    """Packets descending, then the key: proto, src, dst (IPv4 before IPv6, numeric), ports."""
    (proto, src, dst, sport, dport), (packets, _) = item
    return (-packets, proto, src.version, int(src), dst.version, int(dst), sport, dport)


def truth_for(capture: pathlib.Path, version: str, max_depth: int = 0) -> tuple[str, int]:
    cmd = tshark_command(capture)
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    flows: dict[tuple, list[int]] = collections.defaultdict(lambda: [0, 0])
    frames = ip_packets = ip_bytes = 0
    for line in run.stdout.splitlines():
        if not line:
            continue
        frame_len, key = flow_of(line, max_depth)
        frames += 1
        if key is None:
            continue
        ip_packets += 1
        ip_bytes += frame_len
        flows[key][0] += 1
        flows[key][1] += frame_len

    shown = [c if c != str(capture) else f"pcaps/{capture.name}" for c in cmd]
    convention = [f"# keyed on the innermost IP header, at most {max_depth} tunnels deep"] if max_depth else []
    lines = [
        f"# ground truth for {capture.name}, generated by scripts/tshark_truth.py"
        + (f" --innermost --max-depth {max_depth}" if max_depth else ""),
        *convention,
        f"# tshark: {version}",
        f"# command: {shlex.join(shown)}",
        f"# frames {frames}",
        f"# ip_packets {ip_packets}",
        f"# ip_bytes {ip_bytes}",
        f"# flows {len(flows)}",
        HEADER,
    ]
    for (proto, src, dst, sport, dport), (packets, nbytes) in sorted(flows.items(), key=sort_key):
        lines.append(f"{proto}\t{src}\t{dst}\t{sport}\t{dport}\t{packets}\t{nbytes}")
    return "\n".join(lines) + "\n", len(flows)


def main(argv: list[str]) -> int:
    max_depth = 0
    args = list(argv)
    if "--tunnel-key" in args:
        args.remove("--tunnel-key")
        version = tshark_version()
        for capture in (pathlib.Path(a) for a in args):
            text, nkeys = tunnel_truth_for(capture, version)
            out = capture.with_name(capture.name + ".tunnel.truth.tsv")
            out.write_text(text)
            print(f"{out.name}: {nkeys} tunnel keys", file=sys.stderr)
        return 0
    if "--innermost" in args:
        args.remove("--innermost")
        max_depth = 4
    suffix = ".truth.tsv"
    if "--suffix" in args:
        i = args.index("--suffix")
        suffix = args[i + 1]
        del args[i:i + 2]
    if "--max-depth" in args:
        i = args.index("--max-depth")
        max_depth = int(args[i + 1])
        del args[i:i + 2]
    captures = [pathlib.Path(a) for a in args] or sorted(
        p for p in PCAP_DIR.iterdir() if p.suffix in (".pcap", ".pcapng"))
    version = tshark_version()
    for capture in captures:
        text, nflows = truth_for(capture, version, max_depth)
        out = capture.with_name(capture.name + suffix)
        out.write_text(text)
        print(f"{out.name}: {nflows} flows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
