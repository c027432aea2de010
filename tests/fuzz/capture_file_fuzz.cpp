// Fuzz target: a whole capture file (classic pcap or pcapng, any byte order) read from memory
// through the same code as `flowsketch -r`: PcapFileSource over an fmemopen stream, frames read
// in batches into app::Pipeline, damage noted, then finish() — the loop of run_measure without
// the CLI.
//
// The input is the file itself, so any capture is a seed (make_fuzz_seeds writes small ones).
// Reports are checked and discarded (the final one rendered as text and JSON first); the
// harness traps on a broken accounting invariant:
//   every report: packets + skipped = frames, top lists no longer than top_k, lower ≤ estimate;
//   interval reports: end − start is the interval;
//   final report: frames = frames read, and equal to the sum over interval reports.
// When the file is walked in place (classic pcap, pcapng), a second reader over the same bytes uses
// libpcap's pcap_next_ex, and every frame, the end and the damage message must be identical, up
// to where libpcap refuses a pcapng file the walk reads on (interfaces of another link type or
// snapshot length, a section of the other byte order, a packet on an undescribed interface:
// PcapFileSource::reads_past_libpcap).
// Each batch is decoded with its own interface's link type, which must be that interface's.
// Half the inputs (bit 4 of the last byte) that fit a pipe's buffer are read through a pipe
// instead, as `-r -` reads stdin.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "capture/file/pcap_file_source.hpp"
#include "reports/formats/json.hpp"
#include "reports/formats/text.hpp"
#include "reports/report_writer.hpp"
#include "src/pipeline.hpp"

namespace {

using flowsketch::capture::CaptureError;
using flowsketch::capture::Frame;
using flowsketch::capture::PcapFileSource;
using flowsketch::capture::ReadStatus;
using flowsketch::capture::RecordReader;
using flowsketch::reports::Report;
using flowsketch::reports::ReportKind;

constexpr std::uint32_t kTopK = 4;
// Frames past this are not read: a record costs ~16 bytes of input, so this only stops
// pathological slow inputs (libFuzzer's default -max_len keeps inputs far smaller anyway).
constexpr std::uint64_t kMaxFrames = 1'000'000;
// What a pipe holds before its capacity is raised: the input is written whole before reading.
constexpr std::size_t kPipeBytes = 65536;

void check(bool condition) {
    if (!condition) __builtin_trap();
}

class CheckingWriter final : public flowsketch::reports::ReportWriter {
public:
    explicit CheckingWriter(double interval_seconds) : interval_seconds_(interval_seconds) {}

    void write(const Report& report) override {
        std::uint64_t skipped = 0;
        for (const auto& reason : report.skipped) skipped += reason.count;
        check(report.packets + skipped == report.frames);
        check(report.top_packets.size() <= kTopK && report.top_bytes.size() <= kTopK);
        for (const auto& hitter : report.top_packets) check(hitter.lower <= hitter.estimate);
        for (const auto& hitter : report.top_bytes) check(hitter.lower <= hitter.estimate);
        if (report.kind == ReportKind::interval) {
            // Boundaries are multiples of the interval in packet time; the width is exact
            // up to the rounding of two doubles of similar size.
            const double width = report.end - report.start;
            check(width > 0 && width <= interval_seconds_ * 2);
            interval_frames_ += report.frames;
            interval_packets_ += report.packets;
            ++intervals_;
        } else {
            check(!final_seen_);
            final_seen_ = true;
            final_frames_ = report.frames;
            if (intervals_ > 0) {
                check(report.frames == interval_frames_);
                check(report.packets == interval_packets_);
            }
            check(report.frames == 0 || report.start <= report.end);
            render_final(report);
        }
    }

    // The final report is rendered (its start/end are the raw first and last timestamps, the
    // most hostile values a report carries). Rendering every interval report too made most of
    // each execution formatting work and flooded libFuzzer with fmt's coverage.
    void render_final(const Report& report) {
        rendered_bytes_ += flowsketch::reports::to_json(report).size();
        rendered_bytes_ += flowsketch::reports::to_text(report).size();
    }

    bool final_seen() const { return final_seen_; }
    std::uint64_t final_frames() const { return final_frames_; }

private:
    double interval_seconds_;
    bool final_seen_ = false;
    std::uint64_t final_frames_ = 0;
    std::uint64_t interval_frames_ = 0;
    std::uint64_t interval_packets_ = 0;
    std::uint64_t intervals_ = 0;
    std::size_t rendered_bytes_ = 0;
};

// The reading end of a pipe that holds the whole input; closed after the source is gone.
struct PipeHoldingInput {
    int read_end = -1;
    PipeHoldingInput(const std::uint8_t* data, std::size_t size) {
        int fds[2];
        check(::pipe(fds) == 0);
        check(::write(fds[1], data, size) == static_cast<ssize_t>(size));
        ::close(fds[1]);
        read_end = fds[0];
    }
    ~PipeHoldingInput() { ::close(read_end); }
    PipeHoldingInput(const PipeHoldingInput&) = delete;
    PipeHoldingInput& operator=(const PipeHoldingInput&) = delete;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;  // fmemopen rejects an empty buffer (EINVAL)
    std::unique_ptr<PipeHoldingInput> piped;  // declared first: outlives the source
    std::unique_ptr<PcapFileSource> source;
    try {
        if ((data[size - 1] & 0x10) != 0 && size <= kPipeBytes) {
            piped = std::make_unique<PipeHoldingInput>(data, size);
            source = std::make_unique<PcapFileSource>(piped->read_end, "fuzz-input", "");
        } else {
            // fmemopen takes a non-const buffer; "rb" never writes to it.
            std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(data), size, "rb");
            if (stream == nullptr) return 0;
            source = std::make_unique<PcapFileSource>(stream, "fuzz-input", "");
        }
    } catch (const CaptureError&) {
        return 0;  // not a capture: the CLI's exit 1; the constructor closed the stream
    }
    std::unique_ptr<PcapFileSource> reference;  // libpcap's walk of the same bytes
    if (source->reads_in_place()) {
        std::FILE* again = fmemopen(const_cast<std::uint8_t*>(data), size, "rb");
        check(again != nullptr);
        reference = std::make_unique<PcapFileSource>(again, "fuzz-input", "", RecordReader::libpcap);
    }

    // One-second intervals, so odd timestamps (backwards, huge, ns/µs confusion) cross
    // interval boundaries; a small sketch keeps executions fast.
    flowsketch::app::PipelineConfig config;
    config.interval_seconds = 1.0;
    config.measurement.top_k = kTopK;
    config.measurement.sketch = flowsketch::core::CountMinParams::for_error(
        0.05, 0.05, flowsketch::core::CountMinVariant::kirsch_mitzenmacher);
    // The flow lifecycle stays on (it is on for -r) but sized for 1,000 flows: at the default
    // million its filters cost a few MB to zero on every execution.
    config.measurement.lifecycle.max_flows = 1000;
    CheckingWriter writer(config.interval_seconds);
    flowsketch::app::Pipeline pipeline(config, writer);

    // In batches, as run_measure reads; the batch size comes from the input's last
    // byte, so batches end anywhere relative to the reader's blocks.
    const std::size_t batch_size = 1 + data[size - 1] % 16;
    Frame frames[16];
    std::uint64_t frames_read = 0;
    for (;;) {
        if (frames_read >= kMaxFrames) break;
        ReadStatus status = ReadStatus::frame;
        const std::size_t n = source->next_batch(std::span<Frame>(frames, batch_size), status);
        check(n <= batch_size && (n == 0) == (status != ReadStatus::frame));
        const int link = source->link_type();
        if (n > 0 && source->reads_interfaces()) {
            check(source->batch_interface() < source->interfaces().size());
            check(link == source->interfaces()[source->batch_interface()].link_type);
        }
        // Where the walk read on past libpcap's refusal (in this read: only next() crosses
        // such a block, one frame at a time), libpcap has no more frames to compare.
        if (source->reads_past_libpcap()) reference.reset();
        if (reference != nullptr) {
            for (std::size_t i = 0; i < n; ++i) {
                Frame expected;
                check(reference->next(expected) == ReadStatus::frame);
                check(frames[i].timestamp_ns == expected.timestamp_ns);
                check(frames[i].captured_length == expected.captured_length);
                check(frames[i].wire_length == expected.wire_length);
                check(frames[i].captured_length == 0 ||
                      std::memcmp(frames[i].data, expected.data, frames[i].captured_length) == 0);
            }
            if (n == 0) {
                Frame expected;
                check(reference->next(expected) == status);
                check(source->damage_message() == reference->damage_message());
            }
        }
        if (n > 0) {
            for (std::size_t i = 0; i < n; ++i) {
                check(frames[i].data != nullptr || frames[i].captured_length == 0);
            }
            pipeline.on_frames(std::span<const Frame>(frames, n), link);
            frames_read += n;
            continue;
        }
        if (status == ReadStatus::damaged) {
            check(!source->damage_message().empty());
            pipeline.note_damage(source->path() + ": " + source->damage_message());
        }
        break;
    }
    pipeline.finish();
    check(writer.final_seen());
    check(writer.final_frames() == frames_read);
    check(pipeline.frames_total() == frames_read);
    return 0;
}
