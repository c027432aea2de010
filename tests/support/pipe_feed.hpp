// Bytes written into a pipe by a thread of their own, as `cat file |` would.
#pragma once

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

namespace flowsketch::testing {

/// Writes all of `bytes` to `fd`; stops early when the reader has gone (EPIPE).
inline void write_all(int fd, const std::vector<std::uint8_t>& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
        if (n <= 0) return;
        at += static_cast<std::size_t>(n);
    }
}

/// The reading end is the test's. A reader that stops early (a refused
/// header, damage) lets the destructor close its end, which ends the writer
/// (EPIPE; SIGPIPE is ignored).
class PipeFeed {
public:
    explicit PipeFeed(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {
        std::signal(SIGPIPE, SIG_IGN);
        int fds[2];
        if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
        read_end_ = fds[0];
        writer_ = std::thread([this, write_end = fds[1]] {
            write_all(write_end, bytes_);
            ::close(write_end);
        });
    }
    ~PipeFeed() {
        ::close(read_end_);
        writer_.join();
    }
    PipeFeed(const PipeFeed&) = delete;
    PipeFeed& operator=(const PipeFeed&) = delete;
    int read_end() const noexcept { return read_end_; }

private:
    std::vector<std::uint8_t> bytes_;
    int read_end_ = -1;
    std::thread writer_;
};

}  // namespace flowsketch::testing
