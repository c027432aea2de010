#include "reports/report.hpp"

#include <string>

namespace flowsketch::reports {

SketchDescription describe_sketch(const core::CountMinParams& params, std::uint64_t memory_bytes) {
    SketchDescription sketch;
    sketch.variant = std::string(core::variant_name(params.variant));
    sketch.epsilon = params.epsilon();
    sketch.delta = params.delta();
    sketch.width = params.width;
    sketch.depth = params.depth;
    sketch.conservative_update = params.conservative_update;
    sketch.memory_bytes = memory_bytes;
    return sketch;
}

const char* kind_name(ReportKind kind) noexcept {
    return kind == ReportKind::interval ? "interval" : "final";
}

}  // namespace flowsketch::reports
