// PipeInput: a stdio stream over a pipe that can seek back over what it kept,
// and read_some(), which takes what the pipe holds.
#include "capture/file/pipe_input.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <vector>

#include "tests/support/pipe_feed.hpp"

namespace flowsketch::capture {
namespace {

using testing::PipeFeed;
using Bytes = std::vector<std::uint8_t>;

Bytes pattern(std::size_t n) {
    Bytes bytes(n);
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i * 131 + i / 251);
    return bytes;
}

Bytes slice(const Bytes& bytes, std::size_t from, std::size_t n) {
    return Bytes(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                 bytes.begin() + static_cast<std::ptrdiff_t>(from + n));
}

Bytes read_stream(std::FILE* stream, std::size_t n) {
    Bytes out(n);
    out.resize(std::fread(out.data(), 1, n, stream));
    return out;
}

Bytes read_rest(PipeInput& input) {
    Bytes out;
    std::vector<std::uint8_t> chunk(300'000);  // larger than the read-ahead: straight from the pipe
    for (;;) {
        const ssize_t n = input.read_some(chunk.data(), chunk.size());
        EXPECT_GE(n, 0);
        if (n <= 0) return out;
        out.insert(out.end(), chunk.begin(), chunk.begin() + n);
    }
}

// What libpcap and the walk do at open: read the start, seek back to it,
// read it again, seek to where libpcap stopped; then the walk reads on.
TEST(PipeInput, SeeksBackOverWhatItKeptThenOnlyReadsOn) {
    const Bytes data = pattern(3'000'000);  // more than the pipe holds: the writer waits
    PipeFeed feed(data);
    PipeInput* input = nullptr;
    std::FILE* stream = PipeInput::open(feed.read_end(), 1 << 24, input);
    ASSERT_NE(stream, nullptr);
    EXPECT_EQ(read_stream(stream, 24), slice(data, 0, 24));
    EXPECT_EQ(read_stream(stream, 100'000), slice(data, 24, 100'000));
    EXPECT_EQ(ftello(stream), 100'024);
    ASSERT_EQ(fseeko(stream, 0, SEEK_SET), 0);
    EXPECT_EQ(read_stream(stream, 100'100), slice(data, 0, 100'100));  // past what was read before
    ASSERT_EQ(fseeko(stream, 50, SEEK_SET), 0);
    EXPECT_TRUE(input->keeps_all());
    input->forget();
    EXPECT_FALSE(input->keeps_all());
    EXPECT_NE(fseeko(stream, 0, SEEK_SET), 0) << "nothing kept to seek back to";
    EXPECT_EQ(ftello(stream), 50) << "a refused seek moves nothing";
    std::uint8_t ten[10];
    ASSERT_EQ(input->read_some(ten, sizeof ten), 10);
    EXPECT_EQ(Bytes(ten, ten + 10), slice(data, 50, 10));
    EXPECT_EQ(read_rest(*input), slice(data, 60, data.size() - 60)) << "bytes kept, then the pipe's";
    EXPECT_EQ(input->position(), data.size());
    std::fclose(stream);
}

TEST(PipeInput, StopsKeepingAtItsLimit) {
    const Bytes data = pattern(1'000'000);
    PipeFeed feed(data);
    PipeInput* input = nullptr;
    std::FILE* stream = PipeInput::open(feed.read_end(), 200'000, input);
    ASSERT_NE(stream, nullptr);
    EXPECT_EQ(read_stream(stream, 150'000), slice(data, 0, 150'000));
    EXPECT_TRUE(input->keeps_all());
    EXPECT_EQ(read_stream(stream, 100'000), slice(data, 150'000, 100'000));
    EXPECT_FALSE(input->keeps_all());
    EXPECT_NE(fseeko(stream, 0, SEEK_SET), 0);
    EXPECT_EQ(read_rest(*input), slice(data, 250'000, 750'000));
    std::fclose(stream);
}

// A reader that waited for a whole block would read again, and a non-blocking
// pipe with nothing more in it answers that with EAGAIN.
TEST(PipeInput, ReadSomeTakesWhatThePipeHolds) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    PipeInput* input = nullptr;
    std::FILE* stream = PipeInput::open(fds[0], 1 << 20, input);
    ASSERT_NE(stream, nullptr);
    const Bytes data = pattern(170);
    std::vector<std::uint8_t> out(1 << 20);
    ASSERT_EQ(::write(fds[1], data.data(), 100), 100);
    ASSERT_EQ(input->read_some(out.data(), out.size()), 100) << "while keeping";
    input->forget();
    ASSERT_EQ(::write(fds[1], data.data() + 100, 70), 70);
    ASSERT_EQ(input->read_some(out.data(), out.size()), 70) << "straight from the pipe";
    EXPECT_EQ(Bytes(out.begin(), out.begin() + 70), slice(data, 100, 70));
    ::close(fds[1]);
    EXPECT_EQ(input->read_some(out.data(), out.size()), 0) << "the end";
    std::fclose(stream);  // the descriptor stays open: it is not the stream's
    EXPECT_EQ(::fcntl(fds[0], F_GETFD), 0);
    ::close(fds[0]);
}

TEST(PipeInput, AsksForALargerPipe) {
    std::ifstream limit("/proc/sys/fs/pipe-max-size");
    int max_size = 0;
    if (!(limit >> max_size) || max_size < PipeInput::pipe_capacity_bytes) {
        GTEST_SKIP() << "this system caps pipes below " << PipeInput::pipe_capacity_bytes;
    }
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    PipeInput* input = nullptr;
    std::FILE* stream = PipeInput::open(fds[0], 1 << 20, input);
    ASSERT_NE(stream, nullptr);
    EXPECT_EQ(::fcntl(fds[0], F_GETPIPE_SZ), PipeInput::pipe_capacity_bytes);
    std::fclose(stream);
    ::close(fds[0]);
    ::close(fds[1]);
}

TEST(PipeInput, ErrorsCarryErrno) {
    PipeInput* input = nullptr;
    errno = 0;
    EXPECT_EQ(PipeInput::open(-1, 1 << 20, input), nullptr);
    EXPECT_EQ(errno, EBADF);

    const int directory = ::open("/", O_RDONLY | O_DIRECTORY);
    ASSERT_GE(directory, 0);
    std::FILE* stream = PipeInput::open(directory, 1 << 20, input);
    ASSERT_NE(stream, nullptr);
    std::uint8_t byte;
    errno = 0;
    EXPECT_EQ(input->read_some(&byte, 1), -1);
    EXPECT_EQ(errno, EISDIR);
    std::fclose(stream);
    ::close(directory);
}

}  // namespace
}  // namespace flowsketch::capture
