// A capture read from a pipe (`-r -`). libpcap reads the start of a capture
// through a stdio stream, and the in-place walk reads that start once more
// (the byte order and timestamp units that libpcap keeps private), which a
// pipe cannot seek back to. PipeInput is a stdio stream over a descriptor that
// keeps every byte it has read until told to forget them, so the stream can
// seek back over them; from then on it only reads ahead. The stream is
// unbuffered (PipeInput buffers for it), so every byte read is accounted here
// and the walk can go on from where libpcap stopped with read_some(), which
// returns what the pipe holds instead of waiting for a whole block: frames
// from a slow writer are counted as they come, as with libpcap's reads.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace flowsketch::capture {

class PipeInput {
public:
    /// Reads ahead this much for small reads (libpcap's), and keeps growing
    /// by it while it keeps everything.
    static constexpr std::size_t read_ahead_bytes = std::size_t{1} << 16;
    /// What open() asks of a pipe's capacity (Linux's default limit for an
    /// unprivileged process): fewer wake-ups of the writer and the reader.
    static constexpr int pipe_capacity_bytes = 1 << 20;

    /// A stream over `fd` from its current position; `fd` is never closed.
    /// fclose() frees the PipeInput, to which `input` points until then. It
    /// keeps what it reads up to `keep_limit` bytes (then it forgets by
    /// itself). Null with errno set on failure.
    static std::FILE* open(int fd, std::size_t keep_limit, PipeInput*& input);

    /// True while every byte read so far is kept: the stream can seek to any of them.
    bool keeps_all() const noexcept { return keeping_; }
    /// Stops keeping; the bytes before the current position are let go.
    void forget();
    /// What a signal handler that does not restart reads (the replay's
    /// SIGINT/SIGTERM) does to a wait for the pipe: nothing (stdio's reads, on
    /// behalf of libpcap, which would call it damage), or end it (the walk's).
    enum class OnSignal { keep_waiting, give_up };
    /// At most `max` (> 0) bytes from the current position into `out`: what
    /// is buffered, else one read of the descriptor (which waits for at least
    /// one byte). Returns 0 at the end, -1 on a read error (errno set; EINTR
    /// when a signal ended the wait under give_up, nothing read).
    ssize_t read_some(std::uint8_t* out, std::size_t max,
                      OnSignal on_signal = OnSignal::keep_waiting);
    /// Bytes read through the stream or read_some() so far.
    std::uint64_t position() const noexcept { return position_; }

private:
    PipeInput(int fd, std::size_t keep_limit) : fd_(fd), keep_limit_(keep_limit) {}
    ssize_t read_descriptor(std::uint8_t* out, std::size_t max, OnSignal on_signal) const noexcept;
    std::size_t buffered() const noexcept {
        return static_cast<std::size_t>(buffer_start_ + filled_ - position_);
    }
    static ssize_t stream_read(void* cookie, char* out, std::size_t size);
    static int stream_seek(void* cookie, off64_t* offset, int whence);
    static int stream_close(void* cookie);

    int fd_;
    std::size_t keep_limit_;
    bool keeping_ = true;
    // buffer_[0, filled_) holds the stream's bytes from buffer_start_ on:
    // while keeping, all of them (buffer_start_ = 0); after, the read-ahead.
    std::vector<std::uint8_t> buffer_;
    std::size_t filled_ = 0;
    std::uint64_t buffer_start_ = 0;
    std::uint64_t position_ = 0;
};

}  // namespace flowsketch::capture
