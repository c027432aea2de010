#include "capture/file/pcap_walker.hpp"

#include <cstdio>

#include "capture/file/record_frame.hpp"

namespace flowsketch::capture::file {

ReadStatus PcapWalker::next(BlockPool& pool, Frame& frame) {
    for (;;) {
        if (!pool.fill(record_header_bytes)) {
            if (pool.interrupted()) return pool.interruption();
            return pool.header_missing(
                "truncated dump file; tried to read %llu header bytes, only got %llu",
                record_header_bytes);
        }
        // The header stays unread until the record is whole: an interrupted
        // wait for the rest starts again from it.
        const RecordHeader header = read_record_header(pool.data() + pool.begin());

        if (header.caplen > max_record_length) {
            char text[160];
            if (header.caplen > rules_.snapshot) {
                std::snprintf(text, sizeof text,
                              "invalid packet capture length %u, bigger than snaplen of %d",
                              header.caplen, static_cast<int>(rules_.snapshot));
            } else {
                std::snprintf(text, sizeof text,
                              "invalid packet capture length %u, bigger than maximum of %u",
                              header.caplen, max_record_length);
            }
            return pool.damaged(text);
        }
        if (!pool.fill(record_header_bytes + header.caplen)) {
            if (pool.interrupted()) return pool.interruption();
            const std::size_t have = pool.available() - record_header_bytes;
            if (pool.read_error()) return pool.read_failed();
            // libpcap first reads min(caplen, snapshot) bytes, then discards the rest.
            const std::uint32_t first =
                header.caplen > rules_.snapshot ? rules_.snapshot : header.caplen;
            return pool.damaged(format_message(
                "truncated dump file; tried to read %llu captured bytes, only got %llu",
                have < first ? first : header.caplen, have));
        }
        const std::uint8_t* data = pool.data() + pool.begin() + record_header_bytes;
        pool.consume_to(pool.begin() + record_header_bytes + header.caplen);
        if (to_frame(rules_, header, data, frame)) return ReadStatus::frame;
    }
}

// The walk's position lives in a local: kept in the pool, it would go through
// memory on every record (a frame's stores may alias it), so each record's
// header load would wait on the last store.
std::size_t PcapWalker::next_batch(BlockPool& pool, std::span<Frame> frames) {
    std::size_t n = 0;
    const std::uint8_t* const block = pool.data();
    const std::size_t end = pool.end();
    std::size_t begin = pool.begin();
    while (n < frames.size() && end - begin >= record_header_bytes) {
        const RecordHeader header = read_record_header(block + begin);
        if (header.caplen > max_record_length || end - begin - record_header_bytes < header.caplen) {
            break;
        }
        const std::uint8_t* data = block + begin + record_header_bytes;
        begin += record_header_bytes + header.caplen;
        if (to_frame(rules_, header, data, frames[n])) ++n;
    }
    pool.consume_to(begin);
    return n;
}

}  // namespace flowsketch::capture::file
