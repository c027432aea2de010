// Replay of capture files: classic pcap (either byte order, micro- or
// nanosecond) and pcapng, recognised by content, not by name.
//
// libpcap opens every file (it validates the header and maps the link type).
// Classic pcap records (PcapWalker) and pcapng blocks (PcapngWalker) are then
// walked in place, in the blocks of a BlockPool: each frame points into a
// block, where pcap_next_ex would copy every record into a buffer of its own;
// BPF filters run with pcap_offline_filter. The in-place walks follow
// libpcap's rules to the byte (same frames, lengths, timestamps, errors and
// messages; a differential test and the capture fuzz target hold them to
// that). A pipe (`-` is stdin, or a path that names one) is walked in place
// too, through a PipeInput that lets the walk look back at the start libpcap
// read. Old pcap versions and the few files libpcap rewrites frames of
// (byte-swapped Linux cooked captures) stay entirely with libpcap.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "capture/bpf_filter.hpp"
#include "capture/file/block_pool.hpp"
#include "capture/file/pcap_walker.hpp"
#include "capture/file/pcapng_walker.hpp"
#include "capture/source.hpp"

struct pcap;

namespace flowsketch::capture {

class PipeInput;

/// Who walks the records of a capture file.
enum class RecordReader {
    automatic,  // in place when the file allows it (classic pcap 2.4 or pcapng, a decoded link type)
    libpcap,    // pcap_next_ex for every record (the reference the in-place walk must match)
};

class PcapFileSource final : public Source {
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
    ~PcapFileSource() override;
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
    std::size_t next_batch(std::span<Frame> frames, ReadStatus& status) override;

    const std::string& path() const noexcept { return path_; }
    /// Bytes of the input read so far (the stream's position), for progress.
    std::uint64_t bytes_read() const noexcept;
    /// The link type of the frames last returned: a pcapng file's interfaces
    /// may each have their own (a batch holds one interface's frames).
    int link_type() const noexcept override {
        return pcapng_ ? pcapng_walker_.interfaces()[pcapng_walker_.batch_interface()].link_type
                       : link_type_;
    }
    /// True when the file's pcapng interfaces are read one by one (interfaces(),
    /// batch_interface()); else the file has one link type, link_type().
    bool reads_interfaces() const noexcept { return pcapng_; }
    /// The pcapng interfaces described so far (reads_interfaces()), in file order.
    const std::vector<file::InterfaceDescription>& interfaces() const noexcept {
        return pcapng_walker_.interfaces();
    }
    /// The index into interfaces() of the frames last returned.
    std::uint32_t batch_interface() const noexcept { return pcapng_walker_.batch_interface(); }
    /// The pcapng walk has read past where libpcap 1.10 stops (PcapngWalker::past_libpcap).
    bool reads_past_libpcap() const noexcept { return pcapng_ && pcapng_walker_.past_libpcap(); }
    /// pcapng packets on an interface id their section did not describe, skipped.
    std::uint64_t unknown_interface_frames() const noexcept {
        return pcapng_walker_.unknown_interface_frames();
    }
    const std::string& damage_message() const noexcept {
        return in_place_ ? pool_.damage_message() : damage_;
    }
    /// True when records are walked in place (see the top of this file).
    bool reads_in_place() const noexcept { return in_place_; }
    /// Files have no capture counters.
    CaptureStats stats() override { return {}; }
    void close() noexcept override;

    /// The storage the frames of the last next() or next_batch() point into,
    /// for a caller that hands frames to another thread: while it holds a
    /// copy, the source reads on into another block and leaves these bytes as
    /// they are. Null when frames are libpcap's (old pcap versions, ...): those the
    /// next read overwrites, whatever the caller holds. The source tells a
    /// held block by its use count, so copies must be let go on the thread that
    /// reads, after whatever read the bytes is ordered before (the pipeline
    /// does it once the worker's progress counter says the batch is done).
    std::shared_ptr<const void> frame_storage() const noexcept {
        return in_place_ ? std::shared_ptr<const void>(pool_.current()) : nullptr;
    }

private:
    void open_stream(std::FILE* stream, const std::string& filter, RecordReader reader);
    void open_pipe(int descriptor, const std::string& filter, RecordReader reader);
    void apply_filter(const std::string& filter, RecordReader reader);
    void choose_reader(RecordReader reader);
    ReadStatus next_in_place(Frame& frame);

    std::string path_;
    pcap* handle_ = nullptr;
    int link_type_ = 0;
    std::string damage_;  // libpcap's, when it walks the records

    // In-place walk of classic pcap records or pcapng blocks.
    bool in_place_ = false;
    bool pcapng_ = false;
    PipeInput* pipe_ = nullptr;    // the stream's reader when it is a pipe (freed with the stream)
    int owned_descriptor_ = -1;    // a named pipe this source opened
    BpfProgram program_;           // null: no filter
    std::unique_ptr<FilterSet> filters_;  // pcapng: the filter per link type
    file::BlockPool pool_;
    file::PcapWalker pcap_walker_;
    file::PcapngWalker pcapng_walker_;
};

}  // namespace flowsketch::capture
