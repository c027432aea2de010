#include "core/verify/exact_counter.hpp"

#include <algorithm>
#include <limits>

#include "core/key/hash.hpp"
#include "core/lifecycle/flow_lifecycle.hpp"

namespace flowsketch::core {
namespace {

// A node of an unordered container: the value, the next pointer and the
// cached hash (libstdc++ caches it for non-trivial hashers).
template <class Value>
constexpr std::size_t node_bytes = sizeof(Value) + 2 * sizeof(void*);

template <class Map>
std::size_t table_bytes(const Map& map) noexcept {
    return map.size() * node_bytes<typename Map::value_type> + map.bucket_count() * sizeof(void*);
}

std::vector<ExactKeyCounts> empty_tables(const std::vector<KeySpec>& extra_keys) {
    std::vector<ExactKeyCounts> tables(extra_keys.size() + 1);
    for (std::size_t i = 0; i < extra_keys.size(); ++i) tables[i + 1].spec = extra_keys[i];
    return tables;
}

}  // namespace

std::size_t FlowKeyHasher::operator()(const FlowKey& key) const noexcept {
    return static_cast<std::size_t>(hash_key(key, 0x7665726966790000ULL).h1);
}

ExactCounter::ExactCounter(const std::vector<KeySpec>& extra_keys, const FlowLifecycleConfig* lifecycle,
                           std::uint64_t max_entries, std::uint64_t hash_seed)
    : max_entries_(max_entries),
      hash_seed_(hash_seed),
      interval_(empty_tables(extra_keys)),
      run_(empty_tables(extra_keys)) {
    if (lifecycle != nullptr) {
        track_flows_ = true;
        life_.period_ns = std::max<std::int64_t>(lifecycle->generation_period_ns(), 1);
        life_.generations = lifecycle->generations;
    }
}

bool ExactCounter::refuse(const std::string& table) {
    exceeded_ = table;
    return false;
}

bool ExactCounter::count(std::vector<ExactKeyCounts>& window, const PacketRecord& packet,
                         const FlowKey& five_tuple, const char* window_name) {
    for (std::size_t k = 0; k < window.size(); ++k) {
        ExactKeyCounts& table = window[k];
        const FlowKey key = k == 0 ? five_tuple : table.spec.apply(packet.key);
        const auto [it, inserted] = table.counts.try_emplace(key);
        if (inserted && table.counts.size() > max_entries_) {
            return refuse(std::string(window_name) + "'s " + table.spec.key_only().name() + " keys");
        }
        it->second.packets += 1;
        it->second.bytes += packet.wire_length;
        if (table.spec.counts_distinct()) {
            const std::uint64_t item = field_hash(packet.key, table.spec.distinct(), hash_seed_);
            if (table.distinct[key].insert(item).second) {
                if (++table.distinct_pairs > max_entries_) {
                    return refuse(std::string(window_name) + "'s " + table.spec.name() + " pairs");
                }
            }
        }
    }
    return true;
}

bool ExactCounter::add_batch(std::span<const PacketRecord> packets) {
    if (!exceeded_.empty()) return false;
    for (const PacketRecord& packet : packets) {
        FlowKey five_tuple = packet.key;
        five_tuple.vlan = 0;  // as FlowMeasurement keys the 5-tuple and the lifecycle
        if (!count(interval_, packet, five_tuple, "the interval")) return false;
        if (!count(run_, packet, five_tuple, "the run")) return false;
        interval_packets_ += 1;
        interval_bytes_ += packet.wire_length;
        run_packets_ += 1;
        run_bytes_ += packet.wire_length;
        if (track_flows_ && !observe(five_tuple, packet.timestamp_ns, packet.tcp_flags)) return false;
    }
    return true;
}

// FlowLifecycle's clock: the first time seen starts generation 0; a boundary
// every period after it; time never runs backwards.
void ExactCounter::advance_clock(std::int64_t timestamp_ns) noexcept {
    Lifecycle& life = life_;
    if (!life.started) {
        life.started = true;
        life.gen_start_ns = timestamp_ns;
        life.next_boundary_ns = timestamp_ns > std::numeric_limits<std::int64_t>::max() - life.period_ns
                                    ? std::numeric_limits<std::int64_t>::max()
                                    : timestamp_ns + life.period_ns;
        return;
    }
    if (timestamp_ns < life.next_boundary_ns) return;
    const auto period = static_cast<std::uint64_t>(life.period_ns);
    const std::uint64_t boundaries =
        (static_cast<std::uint64_t>(timestamp_ns) - static_cast<std::uint64_t>(life.gen_start_ns)) / period;
    life.current += static_cast<std::int64_t>(boundaries);
    life.gen_start_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(life.gen_start_ns) + boundaries * period);
    life.next_boundary_ns = life.gen_start_ns > std::numeric_limits<std::int64_t>::max() - life.period_ns
                                ? std::numeric_limits<std::int64_t>::max()
                                : life.gen_start_ns + life.period_ns;
}

bool ExactCounter::observe(const FlowKey& flow, std::int64_t timestamp_ns, std::uint8_t tcp_flags) {
    Lifecycle& life = life_;
    advance_clock(timestamp_ns);
    const auto [it, inserted] = life.last.try_emplace(flow, life.current);
    if (inserted) {
        if (life.last.size() > max_entries_) return refuse("the flow lifecycle's flows");
        ++life.interval.new_flows;
    } else if (life.current - it->second > life.generations) {
        // Expired since its last packet, and new again: counted expired in
        // the interval its expiry boundary fell in.
        ++life.interval.new_flows;
        if (it->second + life.generations + 1 > life.interval_start) ++life.interval.expired;
        it->second = life.current;
    } else {
        it->second = life.current;
    }
    if (flow.protocol == 6 && (tcp_flags & (tcp_fin | tcp_rst)) != 0) {
        life.ended.insert(flow);
        if (life.ended.size() > max_entries_) return refuse("the interval's ended flows");
    }
    return true;
}

void ExactCounter::advance_to(std::int64_t timestamp_ns) {
    if (track_flows_) advance_clock(timestamp_ns);
}

ExactFlowCounts ExactCounter::interval_flows() const {
    const Lifecycle& life = life_;
    ExactFlowCounts counts = life.interval;
    counts.ended = life.ended.size();
    for (const auto& [flow, last] : life.last) {
        const std::int64_t boundary = last + life.generations + 1;
        if (boundary > life.interval_start && boundary <= life.current) ++counts.expired;
        if (life.current - last <= life.generations) ++counts.active;
    }
    return counts;
}

void ExactCounter::start_new_interval() {
    if (track_flows_) {
        const ExactFlowCounts closing = interval_flows();
        life_.closed.new_flows += closing.new_flows;
        life_.closed.expired += closing.expired;
        life_.closed.ended += closing.ended;
        // Flows expired for good leave the map: they can only come back new.
        std::erase_if(life_.last, [&](const auto& entry) {
            return life_.current - entry.second > life_.generations;
        });
        life_.interval = ExactFlowCounts{};
        life_.ended.clear();
        life_.interval_start = life_.current;
    }
    interval_ = empty_tables([&] {
        std::vector<KeySpec> extra;
        for (std::size_t k = 1; k < run_.size(); ++k) extra.push_back(run_[k].spec);
        return extra;
    }());
    interval_packets_ = 0;
    interval_bytes_ = 0;
}

ExactWindow ExactCounter::window(Window window) const {
    ExactWindow out;
    const bool run = window == Window::run;
    out.packets = run ? run_packets_ : interval_packets_;
    out.bytes = run ? run_bytes_ : interval_bytes_;
    for (const ExactKeyCounts& table : run ? run_ : interval_) out.keys.push_back(&table);
    if (track_flows_) {
        out.has_flows = true;
        out.flows = interval_flows();
        if (run) {
            out.flows.new_flows += life_.closed.new_flows;
            out.flows.expired += life_.closed.expired;
            out.flows.ended += life_.closed.ended;
        }
    }
    return out;
}

std::size_t ExactCounter::memory_bytes() const noexcept {
    std::size_t bytes = sizeof(*this);
    for (const auto* windows : {&interval_, &run_}) {
        for (const ExactKeyCounts& table : *windows) {
            bytes += sizeof(table) + table_bytes(table.counts) + table_bytes(table.distinct);
            for (const auto& [key, items] : table.distinct) bytes += table_bytes(items);
        }
    }
    bytes += table_bytes(life_.last) + table_bytes(life_.ended);
    return bytes;
}

}  // namespace flowsketch::core
