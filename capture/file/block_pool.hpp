// The bytes of a capture file, read in large blocks that frames point into
// (pcap_next_ex would copy every record into a buffer of its own), and how a
// walk over them ends: the clean end, damage with libpcap's message, a read
// error, or a signal during a wait for a pipe.
//
// Blocks a caller still holds (frame_storage()) wait among the spares until
// it lets go; the walk never writes to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "capture/file/libpcap_rules.hpp"
#include "capture/source.hpp"

namespace flowsketch::capture {
class PipeInput;
}

namespace flowsketch::capture::file {

// A block holds this much plus room for the longest record, and every read
// fills all its free room, so a record never has to be assembled from two
// reads. Small enough that the walk and the decoder find the bytes the kernel
// has just copied still in the L2 cache (docs/benchmarks.md).
inline constexpr std::size_t block_bytes = std::size_t{1} << 18;
inline constexpr std::size_t block_capacity = block_bytes + max_record_length + record_header_bytes;

class BlockPool {
public:
    using Block = std::shared_ptr<std::uint8_t[]>;

    /// Reads from `stream` (libpcap's, positioned after what it read at open),
    /// or from `pipe` when the stream is a pipe's.
    void attach(std::FILE* stream, PipeInput* pipe) noexcept {
        stream_ = stream;
        pipe_ = pipe;
    }

    /// Makes at least `needed` unread bytes available; false at the end of the
    /// file, on a read error or on an interrupted wait, with fewer. A pcapng
    /// block longer than a block's room gets a block of its own size.
    bool fill(std::size_t needed);

    // The unread bytes are data()[begin(), end()).
    const std::uint8_t* data() const noexcept { return block_.get(); }
    std::size_t begin() const noexcept { return begin_; }
    std::size_t end() const noexcept { return end_; }
    std::size_t available() const noexcept { return end_ - begin_; }
    void consume_to(std::size_t begin) noexcept { begin_ = begin; }

    bool read_error() const noexcept { return read_error_; }
    bool interrupted() const noexcept { return interrupted_; }

    /// The block the last frames point into, for frame_storage().
    const Block& current() const noexcept { return block_; }

    // How a walk ends. Each returns the status the walk returns.
    ReadStatus damaged(std::string message);
    ReadStatus interruption() noexcept;
    ReadStatus read_failed();
    /// fill() could not provide a record's or block's header: the clean end of
    /// the file if no byte of it was left, else a read error or a cut
    /// (libpcap's message, `pattern` taking the bytes wanted and the bytes there).
    ReadStatus header_missing(const char* pattern, std::size_t wanted);
    const std::string& damage_message() const noexcept { return damage_; }

    /// The file is done: give the blocks back (many -r files stay open together).
    void release() noexcept;

private:
    Block next_free_block();

    std::FILE* stream_ = nullptr;
    PipeInput* pipe_ = nullptr;  // the stream's reader when it is a pipe
    Block block_;
    std::size_t capacity_ = 0;  // of block_: the usual size, or more for a larger pcapng block
    std::vector<Block> spares_;  // all of the usual size
    std::size_t begin_ = 0;  // first unread byte in block_
    std::size_t end_ = 0;    // one past the last byte read into block_
    bool at_eof_ = false;
    bool read_error_ = false;
    bool interrupted_ = false;  // fill() gave up its wait for a pipe on a signal
    int read_errno_ = 0;
    std::string damage_;
};

}  // namespace flowsketch::capture::file
