// Byte-exact builders for frames, classic pcap and pcapng files, used to make
// damaged captures in tests (tests/app/malformed_capture_test.cpp) and fuzz
// seeds (tests/fuzz/make_fuzz_seeds.cpp). Nothing here validates: a builder
// writes whatever lengths and fields it is told, because damaged files are
// the point. Fields the caller does not override are filled in consistently.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flowsketch::testing {

using Bytes = std::vector<std::uint8_t>;

/// Appends integers in a chosen byte order (switchable mid-stream, as a
/// pcapng file may change byte order at a new section).
class ByteSink {
public:
    explicit ByteSink(bool big_endian = false) : big_endian_(big_endian) {}
    void set_big_endian(bool big_endian) { big_endian_ = big_endian; }
    bool big_endian() const { return big_endian_; }

    void u8(std::uint8_t v) { bytes_.push_back(v); }
    void u16(std::uint16_t v) { put(v, 2); }
    void u32(std::uint32_t v) { put(v, 4); }
    void u64(std::uint64_t v) { put(v, 8); }
    void append(const Bytes& more) { bytes_.insert(bytes_.end(), more.begin(), more.end()); }
    void pad_to_4() {
        while (bytes_.size() % 4 != 0) bytes_.push_back(0);
    }
    const Bytes& bytes() const { return bytes_; }
    Bytes& bytes() { return bytes_; }

private:
    void put(std::uint64_t v, int size) {
        for (int i = 0; i < size; ++i) {
            const int shift = big_endian_ ? 8 * (size - 1 - i) : 8 * i;
            bytes_.push_back(static_cast<std::uint8_t>(v >> shift));
        }
    }
    bool big_endian_;
    Bytes bytes_;
};

// ---------------------------------------------------------------- frames (network byte order)

inline void put_be16(Bytes& out, std::uint16_t v) {
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v));
}

inline Bytes concat(Bytes head, const Bytes& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
}

inline Bytes udp(std::uint16_t sport, std::uint16_t dport, std::size_t payload = 4) {
    Bytes out;
    put_be16(out, sport);
    put_be16(out, dport);
    put_be16(out, static_cast<std::uint16_t>(8 + payload));
    put_be16(out, 0);
    out.resize(8 + payload, 0xab);
    return out;
}

/// A TCP header of data_offset·4 bytes (at least the 20 fixed bytes are
/// written even when data_offset < 5 claims fewer).
inline Bytes tcp(std::uint16_t sport, std::uint16_t dport, std::uint8_t data_offset = 5,
                 std::uint8_t flags = 0x02) {
    Bytes out;
    put_be16(out, sport);
    put_be16(out, dport);
    out.insert(out.end(), 8, 0);  // sequence and acknowledgement numbers
    out.push_back(static_cast<std::uint8_t>(data_offset << 4));
    out.push_back(flags);
    put_be16(out, 8192);  // window
    out.insert(out.end(), 4, 0);  // checksum, urgent pointer
    if (data_offset > 5) out.resize(std::size_t{data_offset} * 4, 0x01);  // NOP options
    return out;
}

struct Ipv4Fields {
    std::uint8_t ihl = 5;
    std::optional<std::uint16_t> total_length;  // default: header + payload
    std::uint32_t src = 0xc0000201;              // 192.0.2.1
    std::uint32_t dst = 0xc6336407;              // 198.51.100.7
};

/// An IPv4 header of ihl·4 bytes (at least 20 bytes are written) + payload.
inline Bytes ipv4(std::uint8_t protocol, const Bytes& payload, const Ipv4Fields& f = {}) {
    const std::size_t header = std::max<std::size_t>(20, std::size_t{f.ihl} * 4);
    Bytes out;
    out.push_back(static_cast<std::uint8_t>(0x40 | (f.ihl & 0x0f)));
    out.push_back(0);
    put_be16(out, f.total_length.value_or(static_cast<std::uint16_t>(header + payload.size())));
    put_be16(out, 0x1234);  // identification
    put_be16(out, 0x4000);  // don't fragment
    out.push_back(64);
    out.push_back(protocol);
    put_be16(out, 0);
    for (const std::uint32_t address : {f.src, f.dst}) {
        put_be16(out, static_cast<std::uint16_t>(address >> 16));
        put_be16(out, static_cast<std::uint16_t>(address));
    }
    out.resize(header, 0x01);  // options: NOP
    return concat(out, payload);
}

/// An IPv6 header (2001:db8::1 -> 2001:db8::2) + payload.
inline Bytes ipv6(std::uint8_t next_header, const Bytes& payload) {
    Bytes out{0x60, 0, 0, 0};
    put_be16(out, static_cast<std::uint16_t>(payload.size()));
    out.push_back(next_header);
    out.push_back(64);
    for (const std::uint8_t last : {std::uint8_t{1}, std::uint8_t{2}}) {
        const Bytes address{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
        out.insert(out.end(), address.begin(), address.end());
    }
    return concat(out, payload);
}

/// `count` chained 8-byte hop-by-hop/destination-options headers (next header 60,
/// the last one naming `final_next`) in front of `payload`.
inline Bytes ipv6_extension_chain(unsigned count, std::uint8_t final_next, const Bytes& payload) {
    Bytes out;
    for (unsigned i = 0; i < count; ++i) {
        out.push_back(i + 1 == count ? final_next : 60);
        out.push_back(0);  // length: 8 bytes
        out.insert(out.end(), 6, 0x01);
    }
    return concat(out, payload);
}

inline constexpr std::uint16_t ethertype_ipv4 = 0x0800;
inline constexpr std::uint16_t ethertype_ipv6 = 0x86dd;
inline constexpr std::uint16_t ethertype_arp = 0x0806;
inline constexpr std::uint16_t ethertype_vlan = 0x8100;

/// Ethernet II with `vlan_tags` 802.1Q tags in front of `ethertype`.
inline Bytes ethernet(std::uint16_t ethertype, const Bytes& payload, unsigned vlan_tags = 0) {
    Bytes out{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
    for (unsigned i = 0; i < vlan_tags; ++i) {
        put_be16(out, ethertype_vlan);
        put_be16(out, static_cast<std::uint16_t>(100 + i));
    }
    put_be16(out, ethertype);
    return concat(out, payload);
}

inline Bytes truncated(Bytes bytes, std::size_t length) {
    if (length < bytes.size()) bytes.resize(length);
    return bytes;
}

// ---------------------------------------------------------------- classic pcap

struct PcapHeader {
    std::uint32_t link_type = 1;  // Ethernet
    std::uint32_t snaplen = 65535;
    bool nanosecond = false;
    bool big_endian = false;
    std::optional<std::uint32_t> magic;  // override (bad magic)
};

/// A classic pcap file. record() writes caplen = data size and len = caplen
/// unless told otherwise, so a record can lie about its length.
class PcapWriter {
public:
    explicit PcapWriter(const PcapHeader& header = {}) : out_(header.big_endian) {
        out_.u32(header.magic.value_or(header.nanosecond ? 0xa1b23c4d : 0xa1b2c3d4));
        out_.u16(2);
        out_.u16(4);
        out_.u32(0);  // thiszone
        out_.u32(0);  // sigfigs
        out_.u32(header.snaplen);
        out_.u32(header.link_type);
    }
    PcapWriter& record(std::uint32_t seconds, std::uint32_t fraction, const Bytes& data,
                       std::optional<std::uint32_t> caplen = {},
                       std::optional<std::uint32_t> wire_length = {}) {
        const auto size = static_cast<std::uint32_t>(data.size());
        out_.u32(seconds);
        out_.u32(fraction);
        out_.u32(caplen.value_or(size));
        out_.u32(wire_length.value_or(std::max(size, caplen.value_or(size))));
        out_.append(data);
        return *this;
    }
    const Bytes& bytes() const { return out_.bytes(); }

private:
    ByteSink out_;
};

// ---------------------------------------------------------------- pcapng

/// A pcapng file: blocks are written in the current section's byte order.
class PcapngWriter {
public:
    explicit PcapngWriter(bool big_endian = false) : out_(big_endian) { section(big_endian); }

    /// A section header block; a new section may switch the byte order.
    PcapngWriter& section(bool big_endian) {
        out_.set_big_endian(big_endian);
        return section_header(0x1a2b3c4d, 1);
    }

    /// An interface description block; tsresol (option 9) if given.
    PcapngWriter& interface(std::uint16_t link_type, std::uint32_t snaplen = 65535,
                            std::optional<std::uint8_t> tsresol = {}) {
        return interface_with(link_type, snaplen, tsresol ? Options{{9, Bytes{*tsresol}}} : Options{});
    }

    /// Options as (code, value) pairs, written in order.
    using Options = std::vector<std::pair<std::uint16_t, Bytes>>;
    /// An interface description block with these options, then opt_endofopt
    /// (none when there are no options).
    PcapngWriter& interface_with(std::uint16_t link_type, std::uint32_t snaplen, const Options& options) {
        ByteSink body = sink();
        body.u16(link_type);
        body.u16(0);
        body.u32(snaplen);
        for (const auto& [code, value] : options) add_option(body, code, value);
        if (!options.empty()) end_options(body);
        return block(1, body.bytes());
    }

    /// An enhanced packet block; timestamp in the interface's units (µs by
    /// default); a comment option of `comment` bytes after the data if not 0.
    PcapngWriter& packet(std::uint32_t interface_id, std::uint64_t timestamp, const Bytes& data,
                         std::optional<std::uint32_t> caplen = {},
                         std::optional<std::uint32_t> wire_length = {}, std::size_t comment = 0) {
        const auto size = static_cast<std::uint32_t>(data.size());
        ByteSink body = sink();
        body.u32(interface_id);
        body.u32(static_cast<std::uint32_t>(timestamp >> 32));
        body.u32(static_cast<std::uint32_t>(timestamp));
        body.u32(caplen.value_or(size));
        body.u32(wire_length.value_or(size));
        body.append(data);
        body.pad_to_4();
        if (comment != 0) {
            add_option(body, 1, Bytes(comment, 'c'));
            end_options(body);
        }
        return block(6, body.bytes());
    }

    /// A simple packet block: original length, and the data as captured.
    PcapngWriter& simple_packet(std::uint32_t wire_length, const Bytes& data) {
        ByteSink body = sink();
        body.u32(wire_length);
        body.append(data);
        return block(3, body.bytes());
    }

    /// The obsolete packet block (16-bit interface id, a drop count).
    PcapngWriter& obsolete_packet(std::uint16_t interface_id, std::uint64_t timestamp, const Bytes& data) {
        const auto size = static_cast<std::uint32_t>(data.size());
        ByteSink body = sink();
        body.u16(interface_id);
        body.u16(3);
        body.u32(static_cast<std::uint32_t>(timestamp >> 32));
        body.u32(static_cast<std::uint32_t>(timestamp));
        body.u32(size);
        body.u32(size);
        body.append(data);
        return block(2, body.bytes());
    }

    /// A section header block with this byte-order field and major version,
    /// written in the current byte order (a damaged one, unless they are
    /// 0x1a2b3c4d and 1).
    PcapngWriter& section_header(std::uint32_t byte_order_magic, std::uint16_t major) {
        ByteSink body = sink();
        body.u32(byte_order_magic);
        body.u16(major);
        body.u16(0);
        body.u64(~std::uint64_t{0});  // section length: unknown
        return block(0x0a0d0d0a, body.bytes());
    }

    /// Any block: type, body (padded to 4 bytes), both total-length fields
    /// computed unless overridden (a lying block).
    PcapngWriter& block(std::uint32_t type, Bytes body,
                        std::optional<std::uint32_t> leading_length = {},
                        std::optional<std::uint32_t> trailing_length = {}) {
        while (body.size() % 4 != 0) body.push_back(0);
        const auto length = static_cast<std::uint32_t>(12 + body.size());
        out_.u32(type);
        out_.u32(leading_length.value_or(length));
        out_.append(body);
        out_.u32(trailing_length.value_or(length));
        return *this;
    }

    const Bytes& bytes() const { return out_.bytes(); }
    bool big_endian() const { return out_.big_endian(); }
    /// A sink in the current byte order, for a block body built by hand.
    ByteSink sink() const { return ByteSink(out_.big_endian()); }
    /// A 64-bit option value (if_tsoffset) in the current byte order.
    Bytes encode_u64(std::uint64_t value) const {
        ByteSink out = sink();
        out.u64(value);
        return out.bytes();
    }
    static void add_option(ByteSink& body, std::uint16_t code, const Bytes& value) {
        body.u16(code);
        body.u16(static_cast<std::uint16_t>(value.size()));
        body.append(value);
        body.pad_to_4();
    }
    static void end_options(ByteSink& body) {
        body.u16(0);  // opt_endofopt
        body.u16(0);
    }

private:
    ByteSink out_;
};

inline void write_bytes(const std::string& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace flowsketch::testing
