#include "capture/file/pipe_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

namespace flowsketch::capture {

std::FILE* PipeInput::open(int fd, std::size_t keep_limit, PipeInput*& input) {
    struct stat status {};
    if (::fstat(fd, &status) != 0) return nullptr;
    // Best effort: a pipe keeps its capacity if the system refuses.
    if (S_ISFIFO(status.st_mode)) (void)::fcntl(fd, F_SETPIPE_SZ, pipe_capacity_bytes);
    auto owned = std::unique_ptr<PipeInput>(new PipeInput(fd, keep_limit));
    const cookie_io_functions_t functions{&PipeInput::stream_read, nullptr, &PipeInput::stream_seek,
                                          &PipeInput::stream_close};
    std::FILE* stream = ::fopencookie(owned.get(), "r", functions);
    if (stream == nullptr) return nullptr;
    input = owned.release();  // the stream's now: stream_close frees it
    // Unbuffered: stdio holds no bytes of its own, so position_ is the
    // stream's position and read_some() can take over from libpcap.
    std::setvbuf(stream, nullptr, _IONBF, 0);
    return stream;
}

void PipeInput::forget() {
    if (!keeping_) return;
    keeping_ = false;
    const std::size_t left = buffered();
    std::vector<std::uint8_t> rest(std::max(left, read_ahead_bytes));
    std::memcpy(rest.data(), buffer_.data() + (filled_ - left), left);
    buffer_ = std::move(rest);  // a kept start of up to keep_limit goes
    filled_ = left;
    buffer_start_ = position_;
}

ssize_t PipeInput::read_descriptor(std::uint8_t* out, std::size_t max,
                                   OnSignal on_signal) const noexcept {
    for (;;) {
        const ssize_t got = ::read(fd_, out, max);
        if (got >= 0 || errno != EINTR || on_signal == OnSignal::give_up) return got;
    }
}

ssize_t PipeInput::read_some(std::uint8_t* out, std::size_t max, OnSignal on_signal) {
    if (buffered() == 0) {
        if (keeping_ && filled_ + read_ahead_bytes > keep_limit_) forget();
        if (keeping_) {
            if (buffer_.size() < filled_ + read_ahead_bytes) {
                buffer_.resize(std::max(filled_ + read_ahead_bytes, 2 * buffer_.size()));
            }
        } else {
            buffer_start_ = position_;
            filled_ = 0;
            if (max >= read_ahead_bytes) {  // the walk's reads go straight to its block
                const ssize_t got = read_descriptor(out, max, on_signal);
                if (got > 0) {
                    position_ += static_cast<std::uint64_t>(got);
                    buffer_start_ = position_;
                }
                return got;
            }
            buffer_.resize(read_ahead_bytes);
        }
        const ssize_t got = read_descriptor(buffer_.data() + filled_, read_ahead_bytes, on_signal);
        if (got <= 0) return got;
        filled_ += static_cast<std::size_t>(got);
    }
    const std::size_t n = std::min(max, buffered());
    std::memcpy(out, buffer_.data() + (filled_ - buffered()), n);
    position_ += n;
    return static_cast<ssize_t>(n);
}

// Called by stdio, which is C: no exception may leave (keeping may allocate).
ssize_t PipeInput::stream_read(void* cookie, char* out, std::size_t size) {
    if (size == 0) return 0;
    try {
        auto* bytes = reinterpret_cast<std::uint8_t*>(out);
        return static_cast<PipeInput*>(cookie)->read_some(bytes, size);
    } catch (const std::bad_alloc&) {
        errno = ENOMEM;
        return -1;
    }
}

// Any kept position, or where the stream already is (ftello asks that).
int PipeInput::stream_seek(void* cookie, off64_t* offset, int whence) {
    auto* input = static_cast<PipeInput*>(cookie);
    off64_t target = *offset;
    if (whence == SEEK_CUR) {
        target += static_cast<off64_t>(input->position_);
    } else if (whence != SEEK_SET) {
        errno = ESPIPE;
        return -1;
    }
    const bool kept = input->keeping_ && target >= 0 &&
                      static_cast<std::uint64_t>(target) <= input->buffer_start_ + input->filled_;
    if (!kept && target != static_cast<off64_t>(input->position_)) {
        errno = ESPIPE;
        return -1;
    }
    input->position_ = static_cast<std::uint64_t>(target);
    *offset = target;
    return 0;
}

int PipeInput::stream_close(void* cookie) {
    delete static_cast<PipeInput*>(cookie);
    return 0;
}

}  // namespace flowsketch::capture
