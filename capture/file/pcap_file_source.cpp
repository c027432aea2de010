#include "capture/file/pcap_file_source.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstring>
#include <utility>

#include "capture/decode/decode.hpp"
#include "capture/file/byte_order.hpp"
#include "capture/file/libpcap_rules.hpp"
#include "capture/file/pipe_input.hpp"

namespace flowsketch::capture {

using file::file_header_bytes;
using file::load16;
using file::load32;

namespace {

// libpcap's open errors often start with the file's name already.
std::string naming_once(const std::string& path, const char* error) {
    const std::string text = error;
    if (text.rfind(path + ": ", 0) == 0) return text;
    return path + ": " + text;
}

}  // namespace

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
    if (handle_ == nullptr) throw CaptureError(naming_once(path, errbuf));
    apply_filter(filter, reader);
}

std::uint64_t PcapFileSource::bytes_read() const noexcept {
    std::FILE* stream = handle_ != nullptr ? pcap_file(handle_) : nullptr;
    const off_t position = stream != nullptr ? ftello(stream) : -1;
    return position < 0 ? 0 : static_cast<std::uint64_t>(position);
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
        throw CaptureError(naming_once(path_, errbuf));
    }
    apply_filter(filter, reader);
}

// libpcap's header checks and the walk's second look at the start both read
// through the PipeInput, which keeps what they read; the walk then reads the
// pipe itself (BlockPool::fill).
void PcapFileSource::open_pipe(int descriptor, const std::string& filter, RecordReader reader) {
    constexpr std::size_t keep_limit =
        static_cast<std::size_t>(file::pcapng_max_prefix_bytes) + 2 * PipeInput::read_ahead_bytes;
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

    std::string message;
    BpfProgram program = compile_filter(handle_, filter, message);
    if (program == nullptr) {
        pcap_close(handle_);
        handle_ = nullptr;
        throw FilterError(message);
    }
    if (in_place_ && pcapng_) {
        // Each interface's link type gets its own program; the first one's is this.
        filters_ = std::make_unique<FilterSet>(filter);
        filters_->adopt(link_type_, std::move(program));
        pcapng_walker_.set_filters(filters_.get());
        return;
    }
    if (in_place_) {
        program_ = std::move(program);  // runs per record with pcap_offline_filter
        pcap_walker_.set_filter(program_.get());
        return;
    }
    if (pcap_setfilter(handle_, program.get()) != 0) {
        message = "cannot apply filter '" + filter + "' to " + path_ + ": " + pcap_geterr(handle_);
        program.reset();
        pcap_close(handle_);
        handle_ = nullptr;
        throw FilterError(message);
    }
}

// In place only for what the walks reproduce exactly: a seekable classic pcap
// 2.4 file (16-byte record headers, no swapped length fields) of a link type
// the decoder knows, or a pcapng file (whose later interfaces may have other
// link types, which libpcap would not read). Everything else keeps pcap_next_ex.
void PcapFileSource::choose_reader(RecordReader reader) {
    if (reader == RecordReader::libpcap) return;
    std::FILE* stream = pcap_file(handle_);
    if (stream == nullptr) return;
    const off_t opened_at = ftello(stream);  // where libpcap stopped reading at open
    if (opened_at < static_cast<off_t>(file_header_bytes)) return;
    if (pipe_ != nullptr && !pipe_->keeps_all()) return;  // libpcap read too much to look back on
    std::uint8_t header[file_header_bytes];
    if (fseeko(stream, 0, SEEK_SET) != 0) return;  // a stream that cannot seek: libpcap reads it
    const std::size_t got = std::fread(header, 1, sizeof header, stream);
    bool pcapng_started = false;
    if (got == sizeof header && load32(header, false) == file::pcapng_section_header) {
        pcapng_started = pcapng_walker_.start(stream, opened_at, link_type_);
    }
    if (fseeko(stream, opened_at, SEEK_SET) != 0) {
        std::string message = path_ + ": cannot seek back after the file header: " +
                              std::strerror(errno);
        pcap_close(handle_);
        handle_ = nullptr;
        throw CaptureError(message);
    }
    const auto snapshot = static_cast<std::uint32_t>(pcap_snapshot(handle_));
    if (pcapng_started) {
        in_place_ = true;
        pcapng_ = true;
        pool_.attach(stream, pipe_);
        pcapng_walker_.set_snapshot(snapshot);
        return;
    }
    if (got != sizeof header || opened_at != static_cast<off_t>(file_header_bytes)) return;
    if (!is_supported_link_type(link_type_)) return;
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
    if (file::rewritten_by_libpcap(link_type_, swapped)) return;
    in_place_ = true;
    pool_.attach(stream, pipe_);
    pcap_walker_.start(swapped, microseconds, snapshot);
}

PcapFileSource::~PcapFileSource() { close(); }

void PcapFileSource::close() noexcept {
    program_.reset();
    filters_.reset();
    if (handle_ != nullptr) pcap_close(handle_);  // and its stream, and a PipeInput over it
    handle_ = nullptr;
    pipe_ = nullptr;
    if (owned_descriptor_ >= 0) ::close(owned_descriptor_);  // after the stream over it
    owned_descriptor_ = -1;
    pool_.release();
    pool_.attach(nullptr, nullptr);
}

ReadStatus PcapFileSource::next(Frame& frame) {
    if (handle_ == nullptr) return ReadStatus::end_of_file;  // closed
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

ReadStatus PcapFileSource::next_in_place(Frame& frame) {
    return pcapng_ ? pcapng_walker_.next(pool_, frame) : pcap_walker_.next(pool_, frame);
}

std::size_t PcapFileSource::next_batch(std::span<Frame> frames, ReadStatus& status) {
    assert(!frames.empty());
    std::size_t n = 0;
    if (in_place_ && pcapng_) {
        n = pcapng_walker_.next_batch(pool_, frames);
    } else if (in_place_) {
        n = pcap_walker_.next_batch(pool_, frames);
    }
    if (n > 0) {
        status = ReadStatus::frame;
        return n;
    }
    status = next(frames[0]);
    return status == ReadStatus::frame ? 1 : 0;
}

}  // namespace flowsketch::capture
