#include "capture/live/pcap_live_source.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <limits>

#include "capture/bpf_filter.hpp"

namespace flowsketch::capture {
namespace {

struct DispatchContext {
    PcapLiveSource::FrameHandler handler;
    void* context;
    std::int64_t subsecond_scale;  // 1 for nanosecond timestamps, 1000 for microsecond
};

extern "C" void on_packet(u_char* user, const pcap_pkthdr* header, const u_char* data) {
    auto* dispatch = reinterpret_cast<DispatchContext*>(user);
    Frame frame;
    frame.timestamp_ns =
        clamp_timestamp_ns(static_cast<std::int64_t>(header->ts.tv_sec),
                           static_cast<std::int64_t>(header->ts.tv_usec) * dispatch->subsecond_scale);
    frame.captured_length = header->caplen;
    frame.wire_length = header->len;
    frame.data = data;
    dispatch->handler(dispatch->context, frame);
}

// next_batch's handler: the frames go into the caller's span, in order.
struct BatchContext {
    std::span<Frame> frames;
    std::size_t count = 0;
};

void collect_frame(void* context, const Frame& frame) {
    auto* batch = static_cast<BatchContext*>(context);
    if (batch->count < batch->frames.size()) batch->frames[batch->count++] = frame;
}

}  // namespace

PcapLiveSource::PcapLiveSource(const LiveOptions& options) : name_(options.interface) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ = pcap_create(options.interface.c_str(), errbuf);
    if (handle_ == nullptr) throw CaptureError("interface " + options.interface + ": " + errbuf);
    const auto fail = [&](const std::string& what) {
        std::string message = "interface " + options.interface + ": " + what;
        pcap_close(handle_);
        handle_ = nullptr;
        throw CaptureError(message);
    };
    pcap_set_snaplen(handle_, options.snaplen);
    pcap_set_promisc(handle_, options.promiscuous ? 1 : 0);
    pcap_set_timeout(handle_, options.timeout_ms);
    if (options.immediate) pcap_set_immediate_mode(handle_, 1);
    if (options.buffer_size > 0) pcap_set_buffer_size(handle_, options.buffer_size);
    // Nanosecond timestamps where the kernel offers them; fine if it does not.
    pcap_set_tstamp_precision(handle_, PCAP_TSTAMP_PRECISION_NANO);

    const int status = pcap_activate(handle_);
    if (status < 0) {
        std::string reason = pcap_statustostr(status);
        const char* detail = pcap_geterr(handle_);
        if (status == PCAP_ERROR && detail != nullptr && *detail != '\0') reason = detail;
        // libpcap often repeats the status text as the detail: say it once.
        if ((status == PCAP_ERROR_NO_SUCH_DEVICE || status == PCAP_ERROR_PERM_DENIED) &&
            detail != nullptr && *detail != '\0' && reason.find(detail) == std::string::npos &&
            std::string(detail).find(reason) == std::string::npos) {
            reason += std::string(" (") + detail + ")";
        }
        fail(reason);
    }
    subsecond_scale_ = pcap_get_tstamp_precision(handle_) == PCAP_TSTAMP_PRECISION_NANO ? 1 : 1000;
    link_type_ = pcap_datalink(handle_);
    if (!options.filter.empty()) {
        std::string message;
        BpfProgram program = compile_filter(handle_, options.filter, message);
        if (program == nullptr) {
            pcap_close(handle_);
            handle_ = nullptr;
            throw FilterError(message);
        }
        const int set = pcap_setfilter(handle_, program.get());
        program.reset();
        if (set != 0) fail(std::string("cannot apply filter: ") + pcap_geterr(handle_));
    }
    if (pcap_setnonblock(handle_, 1, errbuf) != 0) fail(errbuf);
    fd_ = pcap_get_selectable_fd(handle_);
}

PcapLiveSource::~PcapLiveSource() { close(); }

void PcapLiveSource::close() noexcept {
    if (handle_ != nullptr) pcap_close(handle_);
    handle_ = nullptr;
    fd_ = -1;
}

int PcapLiveSource::dispatch(int max_frames, FrameHandler handler, void* context) {
    if (handle_ == nullptr) return 0;  // closed
    DispatchContext dispatch{handler, context, subsecond_scale_};
    const int n = pcap_dispatch(handle_, max_frames, on_packet, reinterpret_cast<u_char*>(&dispatch));
    if (n == PCAP_ERROR) throw CaptureError("interface " + name_ + ": " + pcap_geterr(handle_));
    return n < 0 ? 0 : n;
}

std::size_t PcapLiveSource::next_batch(std::span<Frame> frames, ReadStatus& status) {
    if (handle_ == nullptr) {
        status = ReadStatus::end_of_file;
        return 0;
    }
    BatchContext batch{frames};
    const std::size_t most = std::min<std::size_t>(frames.size(), std::numeric_limits<int>::max());
    dispatch(static_cast<int>(most), collect_frame, &batch);
    status = batch.count > 0 ? ReadStatus::frame : ReadStatus::would_block;
    return batch.count;
}

CaptureStats PcapLiveSource::stats() {
    if (handle_ == nullptr) return totals_;
    pcap_stat raw{};
    if (pcap_stats(handle_, &raw) != 0) return totals_;
    const std::uint32_t now[3] = {raw.ps_recv, raw.ps_drop, raw.ps_ifdrop};
    std::uint64_t* targets[3] = {&totals_.received, &totals_.dropped, &totals_.if_dropped};
    for (int i = 0; i < 3; ++i) {
        *targets[i] += static_cast<std::uint32_t>(now[i] - last_raw_[i]);  // modulo 2^32
        last_raw_[i] = now[i];
    }
    return totals_;
}

}  // namespace flowsketch::capture
