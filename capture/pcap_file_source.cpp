#include "capture/pcap_file_source.hpp"

#include <pcap/pcap.h>
#include <sys/types.h>

#include <cassert>
#include <cerrno>
#include <cstring>
#include <utility>

#include "capture/decode.hpp"

namespace flowsketch::capture {
namespace {

// libpcap's record rules for the link types flowsketch decodes (sf-pcap.c,
// pcap_next_packet in libpcap 1.10).
constexpr std::uint32_t max_record_length = 262144;  // max_snaplen_for_dlt() of these types
constexpr std::size_t record_header_bytes = 16;
constexpr std::size_t file_header_bytes = 24;
// A block holds this much plus room for the longest record, and every read
// fills all its free room (about 512 KiB from an emptied block), so a record
// never has to be assembled from two reads. Small enough that the walk and
// the decoder find the bytes the kernel has just copied still in the L2
// cache: 256 KiB here ran a replay 7% faster than 1 MiB (128 and 512 KiB:
// no different).
constexpr std::size_t block_bytes = std::size_t{1} << 18;

std::uint32_t load32(const std::uint8_t* p, bool swapped) noexcept {
    std::uint32_t value;
    std::memcpy(&value, p, sizeof value);
    return swapped ? __builtin_bswap32(value) : value;
}

std::uint16_t load16(const std::uint8_t* p, bool swapped) noexcept {
    std::uint16_t value;
    std::memcpy(&value, p, sizeof value);
    return swapped ? __builtin_bswap16(value) : value;
}

std::int64_t time_field(const std::uint8_t* p, bool swapped) noexcept {
    const std::uint32_t value = load32(p, swapped);
    return swapped ? std::int64_t{value} : std::int64_t{static_cast<std::int32_t>(value)};
}

std::string format(const char* pattern, unsigned long long a, unsigned long long b) {
    char text[160];
    std::snprintf(text, sizeof text, pattern, a, b);
    return text;
}

}  // namespace

// A record header, as libpcap 1.10 reads it: the time fields signed 32-bit
// in the host's byte order, unsigned when it swaps them.
struct PcapFileSource::RecordHeader {
    std::int64_t seconds;
    std::int64_t subsecond;
    std::uint32_t caplen;
    std::uint32_t len;
};

PcapFileSource::RecordHeader PcapFileSource::read_record_header(
    const std::uint8_t* p) const noexcept {
    return RecordHeader{time_field(p, swapped_), time_field(p + 4, swapped_),
                        load32(p + 8, swapped_), load32(p + 12, swapped_)};
}

std::int64_t clamp_timestamp_ns(std::int64_t seconds, std::int64_t subsecond_ns) noexcept {
    constexpr std::int64_t ns_per_second = 1'000'000'000;
    if (seconds < 0 || subsecond_ns < 0) return 0;
    if (seconds >= max_timestamp_ns / ns_per_second) return max_timestamp_ns;
    // (The fraction is below a second unless the file is damaged: skip the division then.)
    const std::int64_t fraction =
        subsecond_ns < ns_per_second ? subsecond_ns : subsecond_ns % ns_per_second;
    const std::int64_t ns = seconds * ns_per_second + fraction;
    return ns > max_timestamp_ns ? max_timestamp_ns : ns;
}

void PcapFileSource::ProgramDeleter::operator()(bpf_program* program) const noexcept {
    pcap_freecode(program);
    delete program;
}

PcapFileSource::PcapFileSource(const std::string& path, const std::string& filter,
                               RecordReader reader)
    : path_(path) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    // Nanosecond precision: libpcap scales microsecond files up, never loses digits.
    handle_ = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO,
                                                      errbuf);
    if (handle_ == nullptr) throw CaptureError(path + ": " + errbuf);
    apply_filter(filter, reader);
}

PcapFileSource::PcapFileSource(std::FILE* stream, const std::string& name,
                               const std::string& filter, RecordReader reader)
    : path_(name) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ = pcap_fopen_offline_with_tstamp_precision(stream, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (handle_ == nullptr) {
        // libpcap leaves the stream to us when it fails; on success pcap_close closes it.
        std::fclose(stream);
        throw CaptureError(name + ": " + errbuf);
    }
    apply_filter(filter, reader);
}

// Runs inside a constructor: on failure it closes the handle itself, because
// the destructor of a half-built object does not run.
void PcapFileSource::apply_filter(const std::string& filter, RecordReader reader) {
    link_type_ = pcap_datalink(handle_);
    choose_reader(reader);
    if (filter.empty()) return;

    auto program = std::unique_ptr<bpf_program, ProgramDeleter>(new bpf_program{});
    if (pcap_compile(handle_, program.get(), filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        std::string message = "invalid filter expression '" + filter + "': " + pcap_geterr(handle_);
        pcap_close(handle_);
        handle_ = nullptr;
        throw FilterError(message);
    }
    if (in_place_) {
        program_ = std::move(program);  // runs per record with pcap_offline_filter
        return;
    }
    if (pcap_setfilter(handle_, program.get()) != 0) {
        std::string message = "cannot apply filter '" + filter + "' to " + path_ + ": " +
                              pcap_geterr(handle_);
        program.reset();
        pcap_close(handle_);
        handle_ = nullptr;
        throw FilterError(message);
    }
}

// In place only for what the walk reproduces exactly: a seekable classic pcap
// 2.4 file (16-byte record headers, no swapped length fields) of a link type
// the decoder knows. Everything else keeps pcap_next_ex.
void PcapFileSource::choose_reader(RecordReader reader) {
    if (reader == RecordReader::libpcap || !is_supported_link_type(link_type_)) return;
    std::FILE* stream = pcap_file(handle_);
    if (stream == nullptr || ftello(stream) != static_cast<off_t>(file_header_bytes)) return;
    std::uint8_t header[file_header_bytes];
    if (fseeko(stream, 0, SEEK_SET) != 0) return;  // stdin: not seekable, libpcap reads it
    const std::size_t got = std::fread(header, 1, sizeof header, stream);
    if (fseeko(stream, file_header_bytes, SEEK_SET) != 0) {
        std::string message = path_ + ": cannot seek back after the file header: " +
                              std::strerror(errno);
        pcap_close(handle_);
        handle_ = nullptr;
        throw CaptureError(message);
    }
    if (got != sizeof header) return;
    bool swapped = false;
    bool microseconds = false;
    switch (load32(header, false)) {
        case 0xa1b2c3d4: microseconds = true; break;
        case 0xa1b23c4d: break;
        case 0xd4c3b2a1: microseconds = true; swapped = true; break;
        case 0x4d3cb2a1: swapped = true; break;
        default: return;  // pcapng or a patched pcap variant
    }
    if (load16(header + 4, swapped) != 2 || load16(header + 6, swapped) != 4) return;
    in_place_ = true;
    stream_ = stream;
    swapped_ = swapped;
    microseconds_ = microseconds;
    snapshot_ = static_cast<std::uint32_t>(pcap_snapshot(handle_));
}

PcapFileSource::~PcapFileSource() {
    program_.reset();
    if (handle_ != nullptr) pcap_close(handle_);
}

ReadStatus PcapFileSource::next(Frame& frame) {
    if (in_place_) return next_in_place(frame);
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    const int status = pcap_next_ex(handle_, &header, &data);
    if (status == 1) {
        frame.timestamp_ns = clamp_timestamp_ns(static_cast<std::int64_t>(header->ts.tv_sec),
                                                static_cast<std::int64_t>(header->ts.tv_usec));
        frame.captured_length = header->caplen;
        frame.wire_length = header->len;
        frame.data = data;
        return ReadStatus::frame;
    }
    if (status == PCAP_ERROR_BREAK) return ReadStatus::end_of_file;
    damage_ = pcap_geterr(handle_);
    return ReadStatus::damaged;
}

constexpr std::size_t block_capacity = block_bytes + max_record_length + record_header_bytes;

// A block no caller holds: a spare, or a new one. Not zeroed: fread writes
// every byte the walk reads.
PcapFileSource::Block PcapFileSource::next_free_block() {
    for (Block& spare : spares_) {
        if (spare.use_count() == 1) {  // only the spares list owns it
            Block free = std::move(spare);
            spare = std::move(spares_.back());
            spares_.pop_back();
            return free;
        }
    }
    return Block(new std::uint8_t[block_capacity]);
}

// Makes at least `needed` unread bytes available in the block; false at the
// end of the file (or on a read error) with fewer.
bool PcapFileSource::fill(std::size_t needed) {
    while (end_ - begin_ < needed) {
        if (at_eof_ || read_error_) return false;
        if (!block_) block_ = next_free_block();
        if (begin_ != 0) {  // keep the partial record, at the front
            if (block_.use_count() > 1) {
                // Frames of this block are still held: move on to a free block.
                Block next = next_free_block();
                std::memcpy(next.get(), block_.get() + begin_, end_ - begin_);
                spares_.push_back(std::exchange(block_, std::move(next)));
            } else {
                std::memmove(block_.get(), block_.get() + begin_, end_ - begin_);
            }
            end_ -= begin_;
            begin_ = 0;
        }
        // Appending never touches bytes before end_: no frame lies there.
        const std::size_t got = std::fread(block_.get() + end_, 1, block_capacity - end_, stream_);
        end_ += got;
        if (got == 0) {
            if (std::ferror(stream_) != 0) {
                read_error_ = true;
                read_errno_ = errno;
            } else {
                at_eof_ = true;
            }
        }
    }
    return true;
}

// The file is done: give the block back (many -r files stay open together).
void PcapFileSource::release_block() noexcept {
    block_.reset();  // a caller's copies keep their blocks until it lets go
    spares_.clear();
    begin_ = end_ = 0;
}

ReadStatus PcapFileSource::damaged(std::string message) {
    damage_ = std::move(message);
    release_block();
    return ReadStatus::damaged;
}

ReadStatus PcapFileSource::next_in_place(Frame& frame) {
    for (;;) {
        if (!fill(record_header_bytes)) {
            const std::size_t have = end_ - begin_;
            if (read_error_) {
                return damaged(std::string("error reading dump file: ") + std::strerror(read_errno_));
            }
            if (have == 0) {
                release_block();
                return ReadStatus::end_of_file;
            }
            return damaged(format("truncated dump file; tried to read %llu header bytes, only got %llu",
                                  record_header_bytes, have));
        }
        const RecordHeader header = read_record_header(block_.get() + begin_);
        begin_ += record_header_bytes;

        if (header.caplen > max_record_length) {
            char text[160];
            if (header.caplen > snapshot_) {
                std::snprintf(text, sizeof text,
                              "invalid packet capture length %u, bigger than snaplen of %d",
                              header.caplen, static_cast<int>(snapshot_));
            } else {
                std::snprintf(text, sizeof text,
                              "invalid packet capture length %u, bigger than maximum of %u",
                              header.caplen, max_record_length);
            }
            return damaged(text);
        }
        if (!fill(header.caplen)) {
            const std::size_t have = end_ - begin_;
            if (read_error_) {
                return damaged(std::string("error reading dump file: ") + std::strerror(read_errno_));
            }
            // libpcap first reads min(caplen, snapshot) bytes, then discards the rest.
            const std::uint32_t first = header.caplen > snapshot_ ? snapshot_ : header.caplen;
            return damaged(format("truncated dump file; tried to read %llu captured bytes, only got %llu",
                                  have < first ? first : header.caplen, have));
        }
        const std::uint8_t* data = block_.get() + begin_;
        begin_ += header.caplen;
        if (to_frame(header, data, frame)) return ReadStatus::frame;
    }
}

// The frame of a record wholly in the block; false if the filter rejects it.
// Inlined: it is most of the batch loop's work per record.
[[gnu::always_inline]] inline bool PcapFileSource::to_frame(const RecordHeader& header,
                                                           const std::uint8_t* data,
                                                           Frame& frame) const {
    // A record longer than the snapshot is cut to it (the rest is skipped).
    const std::uint32_t captured = header.caplen > snapshot_ ? snapshot_ : header.caplen;
    const std::int64_t subsecond_ns = microseconds_ ? header.subsecond * 1000 : header.subsecond;
    if (program_ != nullptr) {
        pcap_pkthdr h{};
        h.ts.tv_sec = static_cast<time_t>(header.seconds);
        h.ts.tv_usec = static_cast<suseconds_t>(subsecond_ns);
        h.caplen = captured;
        h.len = header.len;
        if (pcap_offline_filter(program_.get(), &h, data) == 0) return false;
    }
    frame.timestamp_ns = clamp_timestamp_ns(header.seconds, subsecond_ns);
    frame.captured_length = captured;
    frame.wire_length = header.len;
    frame.data = data;
    return true;
}

std::size_t PcapFileSource::next_batch(std::span<Frame> frames, ReadStatus& status) {
    assert(!frames.empty());
    std::size_t n = 0;
    if (in_place_) {
        // Only records wholly in the block: reading more would move the bytes
        // under the frames already taken. Whatever needs a read, or is damaged,
        // is left to next_in_place once no frame is pending.
        while (n < frames.size() && end_ - begin_ >= record_header_bytes) {
            const RecordHeader header = read_record_header(block_.get() + begin_);
            if (header.caplen > max_record_length ||
                end_ - begin_ - record_header_bytes < header.caplen) {
                break;
            }
            const std::uint8_t* data = block_.get() + begin_ + record_header_bytes;
            begin_ += record_header_bytes + header.caplen;
            if (to_frame(header, data, frames[n])) ++n;
        }
        if (n > 0) {
            status = ReadStatus::frame;
            return n;
        }
    }
    status = next(frames[0]);
    return status == ReadStatus::frame ? 1 : 0;
}

}  // namespace flowsketch::capture
