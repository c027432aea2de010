// Replay of capture files: classic pcap (either byte order, micro- or
// nanosecond) and pcapng, recognised by content, not by name.
//
// libpcap opens every file (it validates the header and maps the link type).
// Classic pcap records and pcapng blocks are then walked in place: the file is
// read in large blocks and each frame points into the block, where
// pcap_next_ex would copy every record into a buffer of its own; BPF filters
// run with pcap_offline_filter. The in-place walk follows libpcap's rules to
// the byte (same frames, lengths, timestamps, errors and messages; a
// differential test and the capture fuzz target hold it to that). A pipe
// (`-` is stdin, or a path that names one) is walked in place too, through a
// PipeInput that lets the walk look back at the start libpcap read. Old pcap
// versions and the few files libpcap rewrites frames of (byte-swapped Linux
// cooked captures) stay entirely with libpcap.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

struct pcap;
struct bpf_program;

namespace flowsketch::capture {

class PipeInput;

/// One captured frame. `data` is valid only until the next read, unless the
/// source's frame_storage() is held.
struct Frame {
    std::int64_t timestamp_ns = 0;
    std::uint32_t captured_length = 0;
    std::uint32_t wire_length = 0;  // the record's original length
    const std::uint8_t* data = nullptr;
};

/// Latest packet time flowsketch represents (2^62 ns, in the year 2116).
inline constexpr std::int64_t max_timestamp_ns = std::int64_t{1} << 62;

/// Packet time in Unix nanoseconds, clamped to [0, max_timestamp_ns]: a
/// damaged or hostile capture (pcapng timestamps are 64-bit) cannot make the
/// interval arithmetic downstream overflow.
std::int64_t clamp_timestamp_ns(std::int64_t seconds, std::int64_t subsecond_ns) noexcept;

/// A file (or interface) that cannot be opened or read: message names it.
class CaptureError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A BPF expression that does not compile: a usage error.
class FilterError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class ReadStatus {
    frame,        // a frame was read
    end_of_file,  // clean end
    damaged,      // the file is cut short or corrupt: damage_message() says how
    /// A signal arrived while the walk waited for a pipe to deliver more
    /// (SIGINT or SIGTERM, whose handlers do not restart the read): no frame
    /// is lost, and the next call goes on where this one stopped.
    interrupted,
};

/// Who walks the records of a capture file.
enum class RecordReader {
    automatic,  // in place when the file allows it (classic pcap 2.4 or pcapng, a decoded link type)
    libpcap,    // pcap_next_ex for every record (the reference the in-place walk must match)
};

class PcapFileSource {
public:
    /// Opens `path` ("-": standard input, named "stdin" in messages; read as
    /// a pipe, as is a path that names one) and compiles `filter` (empty:
    /// none) against its link type.
    /// Throws CaptureError (file missing, not a capture) or FilterError.
    PcapFileSource(const std::string& path, const std::string& filter,
                   RecordReader reader = RecordReader::automatic);
    /// The same reader over an already open stream (e.g. fmemopen in the fuzz
    /// target), so in-memory captures take exactly the path `-r` takes. `name`
    /// stands in for the path in messages. Takes ownership of `stream`: it is
    /// closed by the destructor, or before the constructor throws.
    PcapFileSource(std::FILE* stream, const std::string& name, const std::string& filter,
                   RecordReader reader = RecordReader::automatic);
    /// A capture read from a pipe (or any descriptor) from its current
    /// position, as `-r -` reads stdin; `descriptor` is not closed. `name`
    /// stands in for a path in messages.
    PcapFileSource(int descriptor, const std::string& name, const std::string& filter,
                   RecordReader reader = RecordReader::automatic);
    ~PcapFileSource();
    PcapFileSource(const PcapFileSource&) = delete;
    PcapFileSource& operator=(const PcapFileSource&) = delete;

    /// Next frame that passes the filter.
    ReadStatus next(Frame& frame);

    /// The next frames that pass the filter, at most frames.size() (which must
    /// not be 0): the same frames, in order, as as many next() calls. Every
    /// frame's data stays valid until the next read (longer: frame_storage()). Returns how many: at
    /// least 1 with status `frame`; 0 with the end (status end_of_file or
    /// damaged) once every frame before it was returned. In place, it walks
    /// the records already in the block in one tight loop; it reads (and so
    /// moves the block) only when not one whole record is left.
    std::size_t next_batch(std::span<Frame> frames, ReadStatus& status);

    const std::string& path() const noexcept { return path_; }
    int link_type() const noexcept { return link_type_; }
    const std::string& damage_message() const noexcept { return damage_; }
    /// True when records are walked in place (see the top of this file).
    bool reads_in_place() const noexcept { return in_place_; }

    /// The storage the frames of the last next() or next_batch() point into,
    /// for a caller that hands frames to another thread: while it holds a
    /// copy, the source reads on into another block and leaves these bytes as
    /// they are. Null when frames are libpcap's (old pcap versions, ...): those the
    /// next read overwrites, whatever the caller holds. The source tells a
    /// held block by its use count, so copies must be let go on the thread that
    /// reads, after whatever read the bytes is ordered before (the pipeline
    /// does it once the worker's progress counter says the batch is done).
    std::shared_ptr<const void> frame_storage() const noexcept {
        return in_place_ ? std::shared_ptr<const void>(block_) : nullptr;
    }

private:
    void open_stream(std::FILE* stream, const std::string& filter, RecordReader reader);
    void open_pipe(int descriptor, const std::string& filter, RecordReader reader);
    void apply_filter(const std::string& filter, RecordReader reader);
    void choose_reader(RecordReader reader);
    bool start_pcapng_walk(std::FILE* stream, std::int64_t opened_at);
    ReadStatus next_in_place(Frame& frame);
    ReadStatus next_pcapng(Frame& frame);
    std::size_t next_pcapng_batch(std::span<Frame> frames);
    struct RecordHeader;
    RecordHeader read_record_header(const std::uint8_t* p) const noexcept;
    // How libpcap turns an interface's timestamps into seconds and nanoseconds.
    struct PcapngInterface {
        std::uint64_t units_per_second = 1'000'000;  // if_tsresol
        std::uint64_t offset_seconds = 0;            // if_tsoffset
        bool binary = false;                         // if_tsresol a power of 2
    };
    RecordHeader pcapng_record_header(const PcapngInterface& interface, std::uint64_t time,
                                      std::uint32_t caplen, std::uint32_t len) const noexcept;
    std::string add_pcapng_interface(const std::uint8_t* options, std::size_t length);
    bool to_frame(const RecordHeader& header, const std::uint8_t* data, Frame& frame) const;
    bool fill(std::size_t needed);
    ReadStatus damaged(std::string message);
    ReadStatus interruption() noexcept;
    ReadStatus read_failed();
    ReadStatus header_missing(const char* pattern, std::size_t wanted);
    void release_block() noexcept;

    std::string path_;
    pcap* handle_ = nullptr;
    int link_type_ = 0;
    std::string damage_;

    // In-place walk of classic pcap records or pcapng blocks.
    bool in_place_ = false;
    bool pcapng_ = false;
    std::FILE* stream_ = nullptr;  // libpcap's stream, positioned after what it read at open
    PipeInput* pipe_ = nullptr;    // the stream's reader when it is a pipe (freed with the stream)
    int owned_descriptor_ = -1;    // a named pipe this source opened
    bool swapped_ = false;         // file written in the other byte order (pcapng: every section)
    bool microseconds_ = false;    // classic µs timestamps (scaled to ns, as libpcap does)
    std::uint32_t snapshot_ = 0;   // libpcap's adjusted snapshot length
    // pcapng: the interfaces of the current section, as libpcap keeps them
    // (the first one's read at open, again, since libpcap keeps its own private).
    std::vector<PcapngInterface> interfaces_;
    struct ProgramDeleter {
        void operator()(bpf_program* program) const noexcept;
    };
    std::unique_ptr<bpf_program, ProgramDeleter> program_;  // null: no filter
    // The block being walked. Blocks a caller still holds (frame_storage())
    // wait among the spares until it lets go; the walk never writes to them.
    using Block = std::shared_ptr<std::uint8_t[]>;
    Block next_free_block();
    Block block_;
    std::size_t capacity_ = 0;  // of block_: the usual size, or more for a larger pcapng block
    std::vector<Block> spares_;  // all of the usual size
    std::size_t begin_ = 0;  // first unread byte in block_
    std::size_t end_ = 0;    // one past the last byte read into block_
    bool at_eof_ = false;
    bool read_error_ = false;
    bool interrupted_ = false;  // fill() gave up its wait for a pipe on a signal
    int read_errno_ = 0;
};

}  // namespace flowsketch::capture
