// The buffered output file: open, append, flush, close.
#include "src/gen/buffered_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace flowsketch::gen {

BufferedFile::BufferedFile(std::string path) : path_(std::move(path)), buffer_(buffer_size) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw std::runtime_error(
            fmt::format("cannot create '{}': {}", path_, std::strerror(errno)));
    }
}

BufferedFile::~BufferedFile() {
    if (fd_ >= 0) ::close(fd_);  // only on an error path: close() reports errors
}

std::uint8_t* BufferedFile::append(std::size_t n) {
    if (buffer_.size() - used_ < n) flush();
    std::uint8_t* p = buffer_.data() + used_;
    used_ += n;
    return p;
}

void BufferedFile::append(std::string_view bytes) {
    while (!bytes.empty()) {
        const std::size_t n = std::min(bytes.size(), buffer_size);
        std::memcpy(append(n), bytes.data(), n);
        bytes.remove_prefix(n);
    }
}

void BufferedFile::flush() {
    std::size_t done = 0;
    while (done < used_) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, used_ - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            throw std::runtime_error(
                fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
        }
        done += static_cast<std::size_t>(n);
    }
    used_ = 0;
}

void BufferedFile::close() {
    if (fd_ < 0) return;
    flush();
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
        throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
    }
}

}  // namespace flowsketch::gen
