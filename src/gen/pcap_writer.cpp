// The capture writer: file headers and per-packet record headers.
#include "src/gen/pcap_writer.hpp"

#include <cstring>
#include <utility>

#include "src/gen/wire.hpp"

namespace flowsketch::gen {

PcapWriter::PcapWriter(std::string path, std::uint32_t snaplen, std::uint32_t linktype, bool pcapng)
    : file_(std::move(path)), pcapng_(pcapng) {
    if (pcapng_) {
        std::uint8_t* h = file_.append(28 + 20);
        put32_le(h, 0x0a0d0d0a);  // section header block
        put32_le(h + 4, 28);
        put32_le(h + 8, 0x1a2b3c4d);  // byte-order magic
        put16_le(h + 12, 1);          // version 1.0
        put16_le(h + 14, 0);
        put32_le(h + 16, 0xffffffff);  // section length: not given
        put32_le(h + 20, 0xffffffff);
        put32_le(h + 24, 28);
        std::uint8_t* i = h + 28;  // interface description block, no options: microseconds
        put32_le(i, 1);
        put32_le(i + 4, 20);
        put16_le(i + 8, static_cast<std::uint16_t>(linktype));
        put16_le(i + 10, 0);
        put32_le(i + 12, snaplen);
        put32_le(i + 16, 20);
        return;
    }
    std::uint8_t* h = file_.append(24);
    put32_le(h, 0xa1b2c3d4);  // microsecond timestamps
    put16_le(h + 4, 2);       // version 2.4
    put16_le(h + 6, 4);
    put32_le(h + 8, 0);   // thiszone
    put32_le(h + 12, 0);  // sigfigs
    put32_le(h + 16, snaplen);
    put32_le(h + 20, linktype);
}

std::uint8_t* PcapWriter::begin_record(std::uint32_t ts_sec, std::uint32_t ts_usec,
                                       std::uint32_t captured, std::uint32_t wire) {
    if (pcapng_) {  // enhanced packet block: header, data padded to 4 bytes, trailing length
        const std::uint32_t padded = (captured + 3) & ~std::uint32_t{3};
        const std::uint32_t length = 32 + padded;
        std::uint8_t* b = file_.append(length);
        const std::uint64_t time = std::uint64_t{ts_sec} * 1'000'000 + ts_usec;  // µs
        put32_le(b, 6);
        put32_le(b + 4, length);
        put32_le(b + 8, 0);  // interface 0
        put32_le(b + 12, static_cast<std::uint32_t>(time >> 32));
        put32_le(b + 16, static_cast<std::uint32_t>(time));
        put32_le(b + 20, captured);
        put32_le(b + 24, wire);
        std::memset(b + 28 + captured, 0, padded - captured);
        put32_le(b + 28 + padded, length);
        return b + 28;
    }
    std::uint8_t* r = file_.append(16 + std::size_t{captured});
    put32_le(r, ts_sec);
    put32_le(r + 4, ts_usec);
    put32_le(r + 8, captured);
    put32_le(r + 12, wire);
    return r + 16;
}

}  // namespace flowsketch::gen
