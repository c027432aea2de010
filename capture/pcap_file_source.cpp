#include "capture/pcap_file_source.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <utility>

#include "capture/decode/decode.hpp"
#include "capture/pipe_input.hpp"

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

// pcapng (sf-pcapng.c in libpcap 1.10).
constexpr std::uint32_t pcapng_section_header = 0x0a0d0d0a;
constexpr std::uint32_t pcapng_interface = 1;
constexpr std::uint32_t pcapng_packet = 2;  // obsolete packet block
constexpr std::uint32_t pcapng_simple_packet = 3;
constexpr std::uint32_t pcapng_enhanced_packet = 6;
constexpr std::uint32_t pcapng_byte_order_magic = 0x1a2b3c4d;
constexpr std::size_t pcapng_block_header_bytes = 8;  // type, total length
constexpr std::size_t pcapng_block_frame_bytes = 12;  // and the trailing length
constexpr std::size_t pcapng_packet_fields = 20;      // enhanced and obsolete packet blocks
// libpcap refuses longer blocks (INITIAL_MAX_BLOCKSIZE; what these link types'
// snapshot lengths allow is smaller).
constexpr std::uint32_t pcapng_max_block_bytes = 16 * 1024 * 1024;
// The blocks libpcap reads at open, up to the first interface's, are read
// again to learn it; past this much, the file is left to libpcap.
constexpr off_t pcapng_max_prefix_bytes = 64 * 1024 * 1024;

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

std::string format(const char* pattern, unsigned long long a, unsigned long long b = 0) {
    char text[160];
    std::snprintf(text, sizeof text, pattern, a, b);
    return text;
}

std::uint64_t load64(const std::uint8_t* p, bool swapped) noexcept {
    std::uint64_t value;
    std::memcpy(&value, p, sizeof value);
    return swapped ? __builtin_bswap64(value) : value;
}

// Frames libpcap rewrites after reading them (pcap_post_process): in files of
// the other byte order, the CAN ID behind a Linux cooked header. The walk does
// not, so such files stay with libpcap.
bool rewritten_by_libpcap(int link_type, bool swapped) noexcept {
    return swapped && (link_type == link_type::linux_sll || link_type == link_type::linux_sll2);
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
    if (path == "-") {
        path_ = "stdin";  // in messages
        open_pipe(STDIN_FILENO, filter, reader);
        return;
    }
    // A named pipe, or bash's <(zstd -dc trace.pcap.zst) (/dev/fd/N): walked
    // in place like stdin, where libpcap would read it record by record.
    struct stat status {};
    if (::stat(path.c_str(), &status) == 0 && S_ISFIFO(status.st_mode)) {
        owned_descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (owned_descriptor_ < 0) throw CaptureError(path + ": " + std::strerror(errno));
        try {
            open_pipe(owned_descriptor_, filter, reader);
        } catch (...) {
            ::close(owned_descriptor_);
            throw;
        }
        return;
    }
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
    open_stream(stream, filter, reader);
}

PcapFileSource::PcapFileSource(int descriptor, const std::string& name, const std::string& filter,
                               RecordReader reader)
    : path_(name) {
    open_pipe(descriptor, filter, reader);
}

void PcapFileSource::open_stream(std::FILE* stream, const std::string& filter,
                                 RecordReader reader) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ = pcap_fopen_offline_with_tstamp_precision(stream, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (handle_ == nullptr) {
        // libpcap leaves the stream to us when it fails; on success pcap_close closes it.
        std::fclose(stream);
        pipe_ = nullptr;
        throw CaptureError(path_ + ": " + errbuf);
    }
    apply_filter(filter, reader);
}

// libpcap's header checks and the walk's second look at the start both read
// through the PipeInput, which keeps what they read; the walk then reads the
// pipe itself (fill()).
void PcapFileSource::open_pipe(int descriptor, const std::string& filter, RecordReader reader) {
    constexpr std::size_t keep_limit =
        static_cast<std::size_t>(pcapng_max_prefix_bytes) + 2 * PipeInput::read_ahead_bytes;
    std::FILE* stream = PipeInput::open(descriptor, keep_limit, pipe_);
    if (stream == nullptr) throw CaptureError(path_ + ": " + std::strerror(errno));
    open_stream(stream, filter, reader);
}

// Runs inside a constructor: on failure it closes the handle itself, because
// the destructor of a half-built object does not run.
void PcapFileSource::apply_filter(const std::string& filter, RecordReader reader) {
    link_type_ = pcap_datalink(handle_);
    choose_reader(reader);
    if (pipe_ != nullptr) pipe_->forget();  // no more looking back
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
// 2.4 file (16-byte record headers, no swapped length fields) or pcapng file
// of a link type the decoder knows. Everything else keeps pcap_next_ex.
void PcapFileSource::choose_reader(RecordReader reader) {
    if (reader == RecordReader::libpcap || !is_supported_link_type(link_type_)) return;
    std::FILE* stream = pcap_file(handle_);
    if (stream == nullptr) return;
    const off_t opened_at = ftello(stream);  // where libpcap stopped reading at open
    if (opened_at < static_cast<off_t>(file_header_bytes)) return;
    if (pipe_ != nullptr && !pipe_->keeps_all()) return;  // libpcap read too much to look back on
    std::uint8_t header[file_header_bytes];
    if (fseeko(stream, 0, SEEK_SET) != 0) return;  // a stream that cannot seek: libpcap reads it
    const std::size_t got = std::fread(header, 1, sizeof header, stream);
    bool pcapng_started = false;
    if (got == sizeof header && load32(header, false) == pcapng_section_header) {
        pcapng_started = start_pcapng_walk(stream, opened_at);
    }
    if (fseeko(stream, opened_at, SEEK_SET) != 0) {
        std::string message = path_ + ": cannot seek back after the file header: " +
                              std::strerror(errno);
        pcap_close(handle_);
        handle_ = nullptr;
        throw CaptureError(message);
    }
    if (pcapng_started) {
        in_place_ = true;
        pcapng_ = true;
        stream_ = stream;
        snapshot_ = static_cast<std::uint32_t>(pcap_snapshot(handle_));
        return;
    }
    if (got != sizeof header || opened_at != static_cast<off_t>(file_header_bytes)) return;
    bool swapped = false;
    bool microseconds = false;
    switch (load32(header, false)) {
        case 0xa1b2c3d4: microseconds = true; break;
        case 0xa1b23c4d: break;
        case 0xd4c3b2a1: microseconds = true; swapped = true; break;
        case 0x4d3cb2a1: swapped = true; break;
        default: return;  // a patched pcap variant
    }
    if (load16(header + 4, swapped) != 2 || load16(header + 6, swapped) != 4) return;
    if (rewritten_by_libpcap(link_type_, swapped)) return;
    in_place_ = true;
    stream_ = stream;
    swapped_ = swapped;
    microseconds_ = microseconds;
    snapshot_ = static_cast<std::uint32_t>(pcap_snapshot(handle_));
}

// libpcap has read the section header and the blocks up to the first
// interface's (it refuses a file without one): read them again, for the byte
// order and that interface's timestamp units, which libpcap keeps private.
// False (the file stays with libpcap) if they are not what libpcap accepted.
bool PcapFileSource::start_pcapng_walk(std::FILE* stream, std::int64_t opened_at) {
    if (opened_at > pcapng_max_prefix_bytes || fseeko(stream, 0, SEEK_SET) != 0) return false;
    std::vector<std::uint8_t> prefix(static_cast<std::size_t>(opened_at));
    if (std::fread(prefix.data(), 1, prefix.size(), stream) != prefix.size()) return false;
    if (prefix.size() < 12) return false;
    const std::uint32_t order = load32(prefix.data() + 8, false);
    if (order != pcapng_byte_order_magic && order != __builtin_bswap32(pcapng_byte_order_magic)) {
        return false;
    }
    swapped_ = order != pcapng_byte_order_magic;
    if (rewritten_by_libpcap(link_type_, swapped_)) return false;
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
    const std::uint8_t* options = prefix.data() + interface_at + pcapng_block_header_bytes + 8;
    return add_pcapng_interface(options, interface_length - pcapng_block_frame_bytes - 8).empty();
}

PcapFileSource::~PcapFileSource() {
    program_.reset();
    if (handle_ != nullptr) pcap_close(handle_);
    if (owned_descriptor_ >= 0) ::close(owned_descriptor_);  // after the stream over it
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
// end of the file (or on a read error) with fewer. A pcapng block longer than
// a block's room gets a block of its own size.
bool PcapFileSource::fill(std::size_t needed) {
    while (end_ - begin_ < needed) {
        if (at_eof_ || read_error_) return false;
        if (!block_) {
            block_ = next_free_block();
            capacity_ = block_capacity;
        }
        const std::size_t wanted = std::max(needed, block_capacity);
        if (block_.use_count() > 1 || wanted > capacity_) {
            // Frames of this block are still held, or it is too small: move
            // the partial record on to another block.
            Block next = wanted > block_capacity ? Block(new std::uint8_t[wanted]) : next_free_block();
            std::memcpy(next.get(), block_.get() + begin_, end_ - begin_);
            Block previous = std::exchange(block_, std::move(next));
            if (capacity_ == block_capacity) spares_.push_back(std::move(previous));
            capacity_ = wanted;
            end_ -= begin_;
            begin_ = 0;
        } else if (begin_ != 0) {  // keep the partial record, at the front
            std::memmove(block_.get(), block_.get() + begin_, end_ - begin_);
            end_ -= begin_;
            begin_ = 0;
        }
        // Appending never touches bytes before end_: no frame lies there.
        if (pipe_ != nullptr) {  // what the pipe holds now, not a whole block: see PipeInput
            const ssize_t got = pipe_->read_some(block_.get() + end_, capacity_ - end_,
                                                 PipeInput::OnSignal::give_up);
            if (got > 0) {
                end_ += static_cast<std::size_t>(got);
            } else if (got == 0) {
                at_eof_ = true;
            } else if (errno == EINTR) {
                interrupted_ = true;  // the bytes from begin_ on stay: the caller retries
                return false;
            } else {
                read_error_ = true;
                read_errno_ = errno;
            }
            continue;
        }
        const std::size_t got = std::fread(block_.get() + end_, 1, capacity_ - end_, stream_);
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
    begin_ = end_ = capacity_ = 0;
}

ReadStatus PcapFileSource::damaged(std::string message) {
    damage_ = std::move(message);
    release_block();
    return ReadStatus::damaged;
}

ReadStatus PcapFileSource::interruption() noexcept {
    interrupted_ = false;
    return ReadStatus::interrupted;
}

ReadStatus PcapFileSource::read_failed() {
    return damaged(std::string("error reading dump file: ") + std::strerror(read_errno_));
}

// fill() could not provide a record's or block's header: the clean end of the
// file if no byte of it was left, else a read error or a cut (libpcap's
// message, `pattern` taking the bytes wanted and the bytes there).
ReadStatus PcapFileSource::header_missing(const char* pattern, std::size_t wanted) {
    if (read_error_) return read_failed();
    const std::size_t have = end_ - begin_;
    if (have == 0) {
        release_block();
        return ReadStatus::end_of_file;
    }
    return damaged(format(pattern, wanted, have));
}

ReadStatus PcapFileSource::next_in_place(Frame& frame) {
    if (pcapng_) return next_pcapng(frame);
    for (;;) {
        if (!fill(record_header_bytes)) {
            if (interrupted_) return interruption();
            return header_missing("truncated dump file; tried to read %llu header bytes, only got %llu",
                                  record_header_bytes);
        }
        // The header stays unread until the record is whole: an interrupted
        // wait for the rest starts again from it.
        const RecordHeader header = read_record_header(block_.get() + begin_);

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
        if (!fill(record_header_bytes + header.caplen)) {
            if (interrupted_) return interruption();
            const std::size_t have = end_ - begin_ - record_header_bytes;
            if (read_error_) return read_failed();
            // libpcap first reads min(caplen, snapshot) bytes, then discards the rest.
            const std::uint32_t first = header.caplen > snapshot_ ? snapshot_ : header.caplen;
            return damaged(format("truncated dump file; tried to read %llu captured bytes, only got %llu",
                                  have < first ? first : header.caplen, have));
        }
        const std::uint8_t* data = block_.get() + begin_ + record_header_bytes;
        begin_ += record_header_bytes + header.caplen;
        if (to_frame(header, data, frame)) return ReadStatus::frame;
    }
}

// An interface description block's options, as libpcap's add_interface and
// process_idb_options read them: the interface joins the section's, or the
// message says why the file is damaged.
std::string PcapFileSource::add_pcapng_interface(const std::uint8_t* options, std::size_t length) {
    PcapngInterface interface;
    bool saw_resolution = false;
    bool saw_offset = false;
    const std::string too_short =
        format("block of type %llu in pcapng dump file is too short", pcapng_interface);
    while (length != 0) {
        if (length < 4) return too_short;
        const std::uint16_t code = load16(options, swapped_);
        const std::uint16_t option_length = load16(options + 2, swapped_);
        const std::size_t padded = (std::size_t{option_length} + 3) / 4 * 4;
        if (length - 4 < padded) return too_short;
        const std::uint8_t* value = options + 4;
        options += 4 + padded;
        length -= 4 + padded;
        if (code == 0) {  // opt_endofopt
            if (option_length != 0) {
                return format("Interface Description Block has opt_endofopt option with length %llu != 0",
                              option_length);
            }
            break;
        }
        if (code == 9) {  // if_tsresol
            if (option_length != 1) {
                return format("Interface Description Block has if_tsresol option with length %llu != 1",
                              option_length);
            }
            if (saw_resolution) return "Interface Description Block has more than one if_tsresol option";
            saw_resolution = true;
            const std::uint8_t resolution = value[0];
            if ((resolution & 0x80) != 0) {
                const unsigned shift = resolution & 0x7fu;
                if (shift > 63) {
                    return format("Interface Description Block if_tsresol option resolution 2^-%llu is too high",
                                  shift);
                }
                interface.binary = true;
                interface.units_per_second = std::uint64_t{1} << shift;
            } else {
                if (resolution > 19) {
                    return format("Interface Description Block if_tsresol option resolution 10^-%llu is too high",
                                  resolution);
                }
                interface.binary = false;
                interface.units_per_second = 1;
                for (unsigned i = 0; i < resolution; ++i) interface.units_per_second *= 10;
            }
        } else if (code == 14) {  // if_tsoffset
            if (option_length != 8) {
                return format("Interface Description Block has if_tsoffset option with length %llu != 8",
                              option_length);
            }
            if (saw_offset) return "Interface Description Block has more than one if_tsoffset option";
            saw_offset = true;
            interface.offset_seconds = load64(value, swapped_);
        }
    }
    interfaces_.push_back(interface);
    return {};
}

// A pcapng timestamp in seconds and nanoseconds, with libpcap's arithmetic
// (unsigned, wrapping; the fraction cut to an int as it stores it in the
// header). Micro- and nanosecond units, nearly every file, divide by constants.
PcapFileSource::RecordHeader PcapFileSource::pcapng_record_header(
    const PcapngInterface& interface, std::uint64_t time, std::uint32_t caplen,
    std::uint32_t len) const noexcept {
    constexpr std::uint64_t ns_per_second = 1'000'000'000;
    const std::uint64_t units = interface.units_per_second;
    std::uint64_t seconds;
    std::uint64_t fraction;
    if (units == 1'000'000) {
        seconds = time / 1'000'000;
        fraction = time % 1'000'000 * 1000;
    } else if (units == ns_per_second) {
        seconds = time / ns_per_second;
        fraction = time % ns_per_second;
    } else {
        seconds = time / units;
        fraction = time % units;
        if (interface.binary) {
            fraction = fraction * ns_per_second / units;
        } else if (units > ns_per_second) {
            fraction /= units / ns_per_second;
        } else {
            fraction *= ns_per_second / units;
        }
    }
    seconds += interface.offset_seconds;
    return RecordHeader{static_cast<std::int64_t>(seconds),
                        static_cast<std::int64_t>(static_cast<std::int32_t>(fraction)), caplen, len};
}

// libpcap's pcap_ng_next_packet over blocks in place: the same frames, and the
// same damage, with the same message, at the same block.
ReadStatus PcapFileSource::next_pcapng(Frame& frame) {
    for (;;) {
        if (!fill(pcapng_block_header_bytes)) {
            if (interrupted_) return interruption();
            return header_missing("truncated pcapng dump file; tried to read %llu bytes, only got %llu",
                                  pcapng_block_header_bytes);
        }
        const std::uint32_t type = load32(block_.get() + begin_, swapped_);
        const std::uint32_t length = load32(block_.get() + begin_ + 4, swapped_);
        if (length < pcapng_block_frame_bytes) {
            return damaged(format("block in pcapng dump file has a length of %llu < %llu", length,
                                  pcapng_block_frame_bytes));
        }
        if (length % 4 != 0) {
            return damaged(format("block in pcapng dump file has a length of %llu that is not a multiple of 4",
                                  length));
        }
        if (length > pcapng_max_block_bytes) {
            return damaged(format("pcapng block size %llu > maximum %llu", length, pcapng_max_block_bytes));
        }
        if (!fill(length)) {
            if (interrupted_) return interruption();
            if (read_error_) return read_failed();
            return damaged(format("truncated pcapng dump file; tried to read %llu bytes, only got %llu",
                                  length - pcapng_block_header_bytes,
                                  end_ - begin_ - pcapng_block_header_bytes));
        }
        const std::uint8_t* block = block_.get() + begin_;
        if (load32(block + length - 4, swapped_) != length) {
            return damaged("block total length in header and trailer don't match");
        }
        begin_ += length;
        const std::uint8_t* body = block + pcapng_block_header_bytes;
        std::size_t body_length = length - pcapng_block_frame_bytes;
        auto too_short = [&] {
            return damaged(format("block of type %llu in pcapng dump file is too short", type));
        };

        std::uint32_t interface_id = 0;
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
                // No interface (the first), no timestamp (0), no captured length.
                if (body_length < 4) return too_short();
                len = load32(body, swapped_);
                caplen = len > snapshot_ ? snapshot_ : len;
                body += 4;
                body_length -= 4;
                break;
            case pcapng_interface: {
                if (body_length < 8) return too_short();
                const std::uint16_t link = load16(body, swapped_);
                const std::uint32_t snaplen = load32(body + 4, swapped_);
                // libpcap compares the raw link type with the first interface's
                // mapped one, and this snapshot length, adjusted, with the first's.
                if (static_cast<int>(link) != link_type_) {
                    return damaged(format("an interface has a type %llu different from the type of the first interface",
                                          link));
                }
                const std::uint32_t adjusted =
                    snaplen == 0 || snaplen > 0x7fffffffu ? max_record_length : snaplen;
                if (adjusted != snapshot_) {
                    return damaged(format("an interface has a snapshot length %llu different from the snapshot length of the first interface",
                                          snaplen));
                }
                std::string error = add_pcapng_interface(body + 8, body_length - 8);
                if (!error.empty()) return damaged(std::move(error));
                continue;
            }
            case pcapng_section_header: {
                if (body_length < 16) return too_short();
                const std::uint32_t order = load32(body, swapped_);
                if (order == __builtin_bswap32(pcapng_byte_order_magic)) {
                    return damaged("the file has sections with different byte orders");
                }
                if (order != pcapng_byte_order_magic) {
                    return damaged("the file has a section with a bad byte order magic field");
                }
                const std::uint16_t major = load16(body + 4, swapped_);
                if (major != 1) {
                    return damaged(format("unknown pcapng savefile major version number %llu", major));
                }
                interfaces_.clear();  // the section brings its own
                continue;
            }
            default:
                continue;  // not a packet, interface or section block: skipped
        }
        if (interface_id >= interfaces_.size()) {
            return damaged(format("a packet arrived on interface %llu, but there's no Interface Description Block for that interface",
                                  interface_id));
        }
        if (caplen > snapshot_) {
            return damaged(format("invalid packet capture length %llu, bigger than snaplen of %llu", caplen,
                                  snapshot_));
        }
        if (body_length < caplen) return too_short();
        if (to_frame(pcapng_record_header(interfaces_[interface_id], time, caplen, len), body, frame)) {
            return ReadStatus::frame;
        }
    }
}

// next_batch's walk over enhanced packet blocks wholly in the block, the
// blocks nearly every pcapng file is made of. Anything else, or anything
// next_pcapng would call damage, ends the batch and is left to it.
//
// The position lives in a local, as in next_batch's classic walk (a frame's
// stores may alias begin_, which would put it through memory every block).
std::size_t PcapFileSource::next_pcapng_batch(std::span<Frame> frames) {
    std::size_t n = 0;
    const std::uint8_t* const bytes = block_.get();
    const std::size_t end = end_;
    std::size_t begin = begin_;
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
        if (interface_id >= interfaces_.size() || caplen > snapshot_ ||
            caplen > length - pcapng_block_frame_bytes - pcapng_packet_fields) {
            break;
        }
        const std::uint64_t time =
            std::uint64_t{load32(body + 4, swapped_)} << 32 | load32(body + 8, swapped_);
        begin += length;
        if (to_frame(pcapng_record_header(interfaces_[interface_id], time, caplen,
                                          load32(body + 16, swapped_)),
                     body + pcapng_packet_fields, frames[n])) {
            ++n;
        }
    }
    begin_ = begin;
    return n;
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
    if (in_place_ && pcapng_) {
        n = next_pcapng_batch(frames);
    } else if (in_place_) {
        // Only records wholly in the block: reading more would move the bytes
        // under the frames already taken. Whatever needs a read, or is damaged,
        // is left to next_in_place once no frame is pending.
        //
        // The walk's position lives in a local: kept in begin_, it went
        // through memory on every record (a frame's stores may alias the
        // members), so each record's header load waited on the last store.
        const std::uint8_t* const block = block_.get();
        const std::size_t end = end_;
        std::size_t begin = begin_;
        while (n < frames.size() && end - begin >= record_header_bytes) {
            const RecordHeader header = read_record_header(block + begin);
            if (header.caplen > max_record_length || end - begin - record_header_bytes < header.caplen) {
                break;
            }
            const std::uint8_t* data = block + begin + record_header_bytes;
            begin += record_header_bytes + header.caplen;
            if (to_frame(header, data, frames[n])) ++n;
        }
        begin_ = begin;
    }
    if (n > 0) {
        status = ReadStatus::frame;
        return n;
    }
    status = next(frames[0]);
    return status == ReadStatus::frame ? 1 : 0;
}

}  // namespace flowsketch::capture
