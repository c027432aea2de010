// What the layers of one frame's walk share besides the reader: the limits,
// the tunnel counts, how many tunnels the walk is inside and, when a key spec
// asks, the frame's tunnel tag to fill.
// Private to decode.cpp (see reader.hpp).
#pragma once

#include "capture/decode/decode.hpp"

namespace flowsketch::capture {
namespace {

struct Walk {
    const DecodeLimits& limits;
    TunnelCounts& tunnels;
    unsigned depth;  // tunnels entered so far (0: the outermost packet)
    core::TunnelTag* tag = nullptr;  // written only when not null
};

}  // namespace
}  // namespace flowsketch::capture
