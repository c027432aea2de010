#include "capture/file/block_pool.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "capture/file/pipe_input.hpp"

namespace flowsketch::capture::file {

// A block no caller holds: a spare, or a new one. Not zeroed: fread writes
// every byte the walk reads.
BlockPool::Block BlockPool::next_free_block() {
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

bool BlockPool::fill(std::size_t needed) {
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

void BlockPool::release() noexcept {
    block_.reset();  // a caller's copies keep their blocks until it lets go
    spares_.clear();
    begin_ = end_ = capacity_ = 0;
}

ReadStatus BlockPool::damaged(std::string message) {
    damage_ = std::move(message);
    release();
    return ReadStatus::damaged;
}

ReadStatus BlockPool::interruption() noexcept {
    interrupted_ = false;
    return ReadStatus::interrupted;
}

ReadStatus BlockPool::read_failed() {
    return damaged(std::string("error reading dump file: ") + std::strerror(read_errno_));
}

ReadStatus BlockPool::header_missing(const char* pattern, std::size_t wanted) {
    if (read_error_) return read_failed();
    const std::size_t have = end_ - begin_;
    if (have == 0) {
        release();
        return ReadStatus::end_of_file;
    }
    return damaged(format_message(pattern, wanted, have));
}

}  // namespace flowsketch::capture::file
