#include "capture/file/pcapng_walker.hpp"

#include <sys/types.h>

#include <utility>

#include "capture/decode/link_type.hpp"
#include "capture/file/byte_order.hpp"
#include "capture/file/libpcap_rules.hpp"
#include "capture/file/record_frame.hpp"

namespace flowsketch::capture::file {

namespace {

// LINKTYPE_RAW as a file stores it is DLT_RAW as libpcap maps the first
// interface's; the other link types flowsketch decodes have one number.
int dlt_of(std::uint16_t link_type) noexcept {
    return link_type == link_type::raw_linktype ? link_type::raw : link_type;
}

// libpcap's snapshot length adjustment, for the link types flowsketch decodes.
std::uint32_t adjusted_snapshot(std::uint32_t snaplen) noexcept {
    return snaplen == 0 || snaplen > max_record_length ? max_record_length : snaplen;
}

}  // namespace

bool PcapngWalker::start(std::FILE* stream, std::int64_t opened_at, int link_type) {
    first_link_type_ = link_type;
    if (opened_at > pcapng_max_prefix_bytes || fseeko(stream, 0, SEEK_SET) != 0) return false;
    std::vector<std::uint8_t> prefix(static_cast<std::size_t>(opened_at));
    if (std::fread(prefix.data(), 1, prefix.size(), stream) != prefix.size()) return false;
    if (prefix.size() < 12) return false;
    const std::uint32_t order = load32(prefix.data() + 8, false);
    if (order != pcapng_byte_order_magic && order != __builtin_bswap32(pcapng_byte_order_magic)) {
        return false;
    }
    swapped_ = order != pcapng_byte_order_magic;
    if (rewritten_by_libpcap(link_type, swapped_)) return false;
    std::size_t at = 0;
    std::size_t interface_at = 0;
    std::uint32_t interface_length = 0;
    while (prefix.size() - at >= pcapng_block_frame_bytes) {
        const std::uint32_t type = load32(prefix.data() + at, swapped_);
        const std::uint32_t length = load32(prefix.data() + at + 4, swapped_);
        if (length < pcapng_block_frame_bytes || length > prefix.size() - at) return false;
        if (type == pcapng_interface) {
            interface_at = at;
            interface_length = length;
        }
        at += length;
    }
    // The last block read is the first interface's.
    if (at != prefix.size() || interface_length < pcapng_block_frame_bytes + 8 ||
        interface_at + interface_length != at) {
        return false;
    }
    interfaces_.clear();
    described_.clear();
    const std::uint8_t* options = prefix.data() + interface_at + pcapng_block_header_bytes + 8;
    // The snapshot length is libpcap's (set_snapshot).
    return add_interface(link_type, 0, options, interface_length - pcapng_block_frame_bytes - 8)
        .empty();
}

void PcapngWalker::set_snapshot(std::uint32_t snapshot) noexcept {
    first_snapshot_ = snapshot;
    if (!interfaces_.empty()) interfaces_.front().rules.snapshot = snapshot;
}

void PcapngWalker::set_filters(FilterSet* filters) {
    filters_ = filters;
    for (PcapngInterface& interface : interfaces_) {
        apply_filter(interface, described_[interface.file_index]);
    }
}

void PcapngWalker::apply_filter(PcapngInterface& interface, InterfaceDescription& description) {
    if (filters_ == nullptr) return;
    interface.rules.filter = filters_->program_for(description.link_type, description.filter_error);
    interface.filter_compiles = interface.rules.filter != nullptr;
    description.filter_compiles = interface.filter_compiles;
}

std::string PcapngWalker::add_interface(int link_type, std::uint32_t snapshot,
                                        const std::uint8_t* options, std::size_t length) {
    PcapngInterface interface;
    InterfaceDescription description;
    std::string error = interface.read_options(options, length, swapped_, description.name);
    if (!error.empty()) return error;
    interface.rules.snapshot = snapshot;
    interface.file_index = static_cast<std::uint32_t>(described_.size());
    description.link_type = link_type;
    description.section = section_;
    description.id = static_cast<std::uint32_t>(interfaces_.size());
    apply_filter(interface, description);
    interfaces_.push_back(interface);
    described_.push_back(std::move(description));
    return {};
}

ReadStatus PcapngWalker::next(BlockPool& pool, Frame& frame) {
    for (;;) {
        if (!pool.fill(pcapng_block_header_bytes)) {
            if (pool.interrupted()) return pool.interruption();
            return pool.header_missing(
                "truncated pcapng dump file; tried to read %llu bytes, only got %llu",
                pcapng_block_header_bytes);
        }
        // A section header's type reads the same in both byte orders; its
        // byte-order magic says in which the section, its length first, is.
        const std::uint32_t type = load32(pool.data() + pool.begin(), swapped_);
        if (type == pcapng_section_header) {
            if (pool.fill(pcapng_block_header_bytes + 4)) {
                const std::uint32_t order = load32(pool.data() + pool.begin() + 8, swapped_);
                if (order == __builtin_bswap32(pcapng_byte_order_magic)) {
                    swapped_ = !swapped_;
                    past_libpcap_ = true;
                }
            } else if (pool.interrupted()) {
                return pool.interruption();
            }  // else cut short: the length's checks below say so, as libpcap does
        }
        const std::uint32_t length = load32(pool.data() + pool.begin() + 4, swapped_);
        if (length < pcapng_block_frame_bytes) {
            return pool.damaged(format_message("block in pcapng dump file has a length of %llu < %llu",
                                               length, pcapng_block_frame_bytes));
        }
        if (length % 4 != 0) {
            return pool.damaged(format_message(
                "block in pcapng dump file has a length of %llu that is not a multiple of 4", length));
        }
        if (length > pcapng_max_block_bytes) {
            return pool.damaged(
                format_message("pcapng block size %llu > maximum %llu", length, pcapng_max_block_bytes));
        }
        if (!pool.fill(length)) {
            if (pool.interrupted()) return pool.interruption();
            if (pool.read_error()) return pool.read_failed();
            return pool.damaged(format_message(
                "truncated pcapng dump file; tried to read %llu bytes, only got %llu",
                length - pcapng_block_header_bytes, pool.available() - pcapng_block_header_bytes));
        }
        const std::uint8_t* block = pool.data() + pool.begin();
        if (load32(block + length - 4, swapped_) != length) {
            return pool.damaged("block total length in header and trailer don't match");
        }
        pool.consume_to(pool.begin() + length);
        const std::uint8_t* body = block + pcapng_block_header_bytes;
        std::size_t body_length = length - pcapng_block_frame_bytes;
        auto too_short = [&] {
            return pool.damaged(
                format_message("block of type %llu in pcapng dump file is too short", type));
        };

        std::uint32_t interface_id = 0;
        bool simple = false;
        std::uint64_t time = 0;
        std::uint32_t caplen = 0;
        std::uint32_t len = 0;
        switch (type) {
            case pcapng_enhanced_packet:
            case pcapng_packet:
                if (body_length < pcapng_packet_fields) return too_short();
                interface_id = type == pcapng_packet ? load16(body, swapped_) : load32(body, swapped_);
                time = std::uint64_t{load32(body + 4, swapped_)} << 32 | load32(body + 8, swapped_);
                caplen = load32(body + 12, swapped_);
                len = load32(body + 16, swapped_);
                body += pcapng_packet_fields;
                body_length -= pcapng_packet_fields;
                break;
            case pcapng_simple_packet:
                // The section's first interface, no timestamp (0), no captured
                // length: the data up to the original length or that interface's
                // snapshot length, whichever is shorter.
                if (body_length < 4) return too_short();
                simple = true;
                len = load32(body, swapped_);
                body += 4;
                body_length -= 4;
                break;
            case pcapng_interface: {
                // Each interface has its own link type and snapshot length
                // (libpcap 1.10 calls a file damaged where they differ).
                if (body_length < 8) return too_short();
                const std::uint16_t link = load16(body, swapped_);
                const std::uint32_t snaplen = load32(body + 4, swapped_);
                // libpcap compares the raw link type with the first interface's
                // mapped one, and this snapshot length, adjusted, with the first's.
                const std::uint32_t libpcap_adjusted =
                    snaplen == 0 || snaplen > 0x7fffffffu ? max_record_length : snaplen;
                if (static_cast<int>(link) != first_link_type_ || libpcap_adjusted != first_snapshot_) {
                    past_libpcap_ = true;
                }
                std::string error =
                    add_interface(dlt_of(link), adjusted_snapshot(snaplen), body + 8, body_length - 8);
                if (!error.empty()) return pool.damaged(std::move(error));
                continue;
            }
            case pcapng_interface_statistics:
                // Interface id, timestamp, options. libpcap skips these blocks;
                // a malformed one is skipped too, never makes the file damaged.
                if (body_length >= 12) read_statistics(body, body_length);
                continue;
            case pcapng_section_header: {
                // Its byte order was taken from it above, before its length.
                if (body_length < 16) return too_short();
                const std::uint32_t order = load32(body, swapped_);
                if (order != pcapng_byte_order_magic) {
                    return pool.damaged("the file has a section with a bad byte order magic field");
                }
                const std::uint16_t major = load16(body + 4, swapped_);
                if (major != 1) {
                    return pool.damaged(
                        format_message("unknown pcapng savefile major version number %llu", major));
                }
                interfaces_.clear();  // the section brings its own
                ++section_;
                continue;
            }
            default:
                continue;  // not a packet, interface or section block: skipped
        }
        // A packet no interface describes cannot be decoded (no link type):
        // counted and skipped, where libpcap calls the file damaged.
        if (interface_id >= interfaces_.size()) {
            ++unknown_interface_frames_;
            past_libpcap_ = true;
            continue;
        }
        const PcapngInterface& interface = interfaces_[interface_id];
        if (simple) caplen = len > interface.rules.snapshot ? interface.rules.snapshot : len;
        if (caplen > interface.rules.snapshot) {
            return pool.damaged(format_message(
                "invalid packet capture length %llu, bigger than snaplen of %llu", caplen,
                interface.rules.snapshot));
        }
        if (body_length < caplen) return too_short();
        if (!interface.filter_compiles) {
            ++described_[interface.file_index].unfiltered;
            continue;
        }
        if (to_frame(interface.rules, interface.record_header(time, caplen, len), body, frame)) {
            batch_interface_ = interface.file_index;
            return ReadStatus::frame;
        }
    }
}

// An Interface Statistics Block's counters for its interface (options
// isb_ifrecv 4, isb_ifdrop 5, isb_osdrop 7, each 8 bytes): the last block's
// values replace earlier ones. Stops at the first option that overruns.
void PcapngWalker::read_statistics(const std::uint8_t* body, std::size_t length) {
    const std::uint32_t interface_id = load32(body, swapped_);
    if (interface_id >= interfaces_.size()) return;
    InterfaceDescription& description = described_[interfaces_[interface_id].file_index];
    std::size_t at = 12;
    while (length - at >= 4) {
        const std::uint16_t code = load16(body + at, swapped_);
        const std::uint16_t size = load16(body + at + 2, swapped_);
        const std::size_t padded = (std::size_t{size} + 3) & ~std::size_t{3};
        if (code == 0 || padded > length - at - 4) return;  // opt_endofopt, or cut short
        if (size == 8 && (code == 4 || code == 5 || code == 7)) {
            const std::uint64_t value = load64(body + at + 4, swapped_);
            (code == 4 ? description.if_received : code == 5 ? description.if_dropped : description.os_dropped) = value;
        }
        at += 4 + padded;
    }
}

// The position lives in a local, as in the classic walk (a frame's stores may
// alias the pool's, which would put it through memory every block).
std::size_t PcapngWalker::next_batch(BlockPool& pool, std::span<Frame> frames) {
    std::size_t n = 0;
    const std::uint8_t* const bytes = pool.data();
    const std::size_t end = pool.end();
    std::size_t begin = pool.begin();
    while (n < frames.size() && end - begin >= pcapng_block_header_bytes) {
        const std::uint8_t* block = bytes + begin;
        const std::uint32_t type = load32(block, swapped_);
        const std::uint32_t length = load32(block + 4, swapped_);
        if (type != pcapng_enhanced_packet || length % 4 != 0 ||
            length < pcapng_block_frame_bytes + pcapng_packet_fields || length > end - begin ||
            length > pcapng_max_block_bytes || load32(block + length - 4, swapped_) != length) {
            break;
        }
        const std::uint8_t* body = block + pcapng_block_header_bytes;
        const std::uint32_t interface_id = load32(body, swapped_);
        const std::uint32_t caplen = load32(body + 12, swapped_);
        if (interface_id >= interfaces_.size()) break;
        const PcapngInterface& interface = interfaces_[interface_id];
        // A batch holds the frames of one interface: one link type.
        if ((n > 0 && interface.file_index != batch_interface_) || !interface.filter_compiles ||
            caplen > interface.rules.snapshot ||
            caplen > length - pcapng_block_frame_bytes - pcapng_packet_fields) {
            break;
        }
        const std::uint64_t time =
            std::uint64_t{load32(body + 4, swapped_)} << 32 | load32(body + 8, swapped_);
        begin += length;
        if (to_frame(interface.rules, interface.record_header(time, caplen, load32(body + 16, swapped_)),
                     body + pcapng_packet_fields, frames[n])) {
            batch_interface_ = interface.file_index;
            ++n;
        }
    }
    pool.consume_to(begin);
    return n;
}

}  // namespace flowsketch::capture::file
