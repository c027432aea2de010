// The decoder's bounded cursor over (pointer, remaining length).
//
// A read first compares its byte count with the remaining length (never
// `ptr + n > end`, which can overflow), so nothing past the captured length is
// touched. Fixed-size headers are taken whole with one such check into a
// Header<N>, whose fields are read at offsets checked against N at compile
// time: one branch per header, not per field. Header structs are never
// overlaid on packet bytes.
//
// The decoder's layer headers (this one, link_layer.hpp, network_layer.hpp,
// tunnel.hpp, transport_layer.hpp, ethernet_ipv4_fast_path.hpp) are private to
// its one translation unit, decode.cpp, and keep their functions in an
// anonymous namespace: internal linkage leaves gcc free to inline and
// specialise across the layers as when they were one file, LTO or not.
#pragma once

#include <cstddef>
#include <cstdint>

// The hot path (link header, IPv4, ports) is inlined into decode_frame, so the
// Reader stays in registers: passed to a call by reference, it would live in
// memory and every header taken would load and store it.
#define FLOWSKETCH_HOT [[gnu::always_inline]] inline

namespace flowsketch::capture {
namespace {

// N captured bytes, verified by Reader::take; field offsets are checked at compile time.
template <std::size_t N>
class Header {
  public:
    template <std::size_t Offset>
    [[nodiscard]] std::uint8_t u8() const noexcept {
        static_assert(Offset + 1 <= N, "field outside the header");
        return data_[Offset];
    }
    template <std::size_t Offset>
    [[nodiscard]] std::uint16_t be16() const noexcept {
        static_assert(Offset + 2 <= N, "field outside the header");
        return static_cast<std::uint16_t>((data_[Offset] << 8) | data_[Offset + 1]);
    }
    template <std::size_t Offset>
    [[nodiscard]] std::uint32_t be32() const noexcept {
        static_assert(Offset + 4 <= N, "field outside the header");
        return (std::uint32_t{data_[Offset]} << 24) | (std::uint32_t{data_[Offset + 1]} << 16) |
               (std::uint32_t{data_[Offset + 2]} << 8) | std::uint32_t{data_[Offset + 3]};
    }
    // The field's bytes in place (valid as long as the frame).
    template <std::size_t Offset, std::size_t Count>
    [[nodiscard]] const std::uint8_t* bytes() const noexcept {
        static_assert(Offset + Count <= N, "field outside the header");
        return data_ + Offset;
    }

  private:
    friend class Reader;
    const std::uint8_t* data_ = nullptr;
};

class Reader {
  public:
    Reader(const std::uint8_t* data, std::size_t length) noexcept
        : data_(data), remaining_(data == nullptr ? 0 : length) {}

    // Narrows the window to the first `length` bytes (if fewer remain, nothing
    // changes): the IP length bounds everything after the IP header.
    void clamp(std::size_t length) noexcept {
        if (length < remaining_) remaining_ = length;
    }

    // Takes the next N bytes as a header, or fails (and moves nothing) if fewer remain.
    template <std::size_t N>
    [[nodiscard]] bool take(Header<N>& header) noexcept {
        if (remaining_ < N) return false;
        header.data_ = data_;
        data_ += N;
        remaining_ -= N;
        return true;
    }

    [[nodiscard]] bool skip(std::size_t n) noexcept {
        if (remaining_ < n) return false;
        if (n != 0) {  // never offsets a null pointer (empty input)
            data_ += n;
            remaining_ -= n;
        }
        return true;
    }

    [[nodiscard]] bool peek_u8(std::uint8_t& value) const noexcept {
        if (remaining_ < 1) return false;
        value = data_[0];
        return true;
    }

  private:
    const std::uint8_t* data_;
    std::size_t remaining_;
};

}  // namespace
}  // namespace flowsketch::capture
