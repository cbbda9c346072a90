// streamrt_greedy_decode: greedy generation with a KV-cache decoder as transformers / optimum export it
// (inputs input_ids, attention_mask, position_ids, past_key_values.N.key / .value; outputs logits,
// present.N.key / .value), through streamrt's public API. Token ids in, token ids out: no tokenizer.
//
//   streamrt_greedy_decode PLAN --prompt 15,7,99 --new-tokens 32        generate, print the ids
//   streamrt_greedy_decode PLAN --prompt-len 2048 --new-tokens 0 --repeat 3    time a 2048-token prefill
//                                                      (in pieces of the profile's most new tokens)
//   streamrt_greedy_decode PLAN --past 2048 --new-tokens 16             decode after a (random) 2048-token cache
//
// The cache never leaves device memory, and per step only the new ids, the mask and the positions go down
// and the last position's logits come back. A plan built with --kv-cache-in-place (TensorDesc::seq_capacity)
// gets ONE buffer per past / present pair, of the plan's capacity, bound to both: each step writes only its
// new positions there. Other plans get two buffers of the run's whole length per pair: a step reads its
// pasts from one and writes its presents into the other (the exported Concat copies the whole cache there),
// and the two swap. Device buffers are allocated before the weight-streaming budget is set, so
// `--budget auto` gives the weights what the cache and I/O leave free.
// Batch 1. Prints the cache bytes allocated, tokens per second, bytes streamed per token and stall time per
// token; --json appends the same as one JSON line.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "core/byte_size.h"
#include "core/float16.h"
#include "streamrt/runtime.h"

using namespace streamrt;

namespace {

struct Options {
  std::string plan, budget = "auto", json, device = "auto", label;
  std::vector<int64_t> prompt;
  int64_t prompt_len = 0, past = 0, new_tokens = 16, repeat = 1, prefill_chunk = 0;
  bool cuda_graph = false;
  bool stream_ahead = true;
};

// One past / present pair: one buffer of the plan's capacity bound to both (stored in place), or two
// buffers of the run's length that swap every step.
struct KvPair {
  std::string past, present;
  TensorDesc desc;  // the past's: dtype, [batch, heads, -1, head_dim], capacity
  Dims dims;        // the profile's max
  DataType dtype;
  bool in_place = false;
  DeviceBuffer buf[2];
  int cur = 0;  // buf[cur] holds the pasts
};

struct Io {
  std::string ids = "input_ids", mask, pos, logits;
  std::vector<KvPair> kv;
  int64_t vocab = 0;
  int64_t max_new = 1;  // the profile's most new tokens per step
  int64_t logits_rows = 1;  // planned max rows of the logits (batch x positions)
  DataType logits_dtype;
};

Result<Io> discover(const Engine& e) {
  Io io;
  bool have_ids = false;
  for (const TensorDesc& d : e.io_tensors()) {
    if (d.is_input) {
      if (d.name == "input_ids") {
        have_ids = true;
        io.max_new = d.max.size() == 2 ? d.max[1] : 1;
      }
      else if (d.name == "attention_mask") io.mask = d.name;
      else if (d.name == "position_ids") io.pos = d.name;
      else if (d.name.rfind("past_key_values.", 0) == 0) {
        if (d.dims.size() != 4 || d.dims[2] != -1)
          return invalid_argument("input '" + d.name + "': expected [batch, heads, past (dynamic), head_dim]");
        KvPair p;
        p.past = d.name;
        p.present = "present." + d.name.substr(16);
        p.desc = d;
        p.dims = d.max;
        p.dtype = d.dtype;
        io.kv.push_back(std::move(p));
      } else {
        return invalid_argument("input '" + d.name + "' is not one of input_ids, attention_mask, position_ids, "
                                "past_key_values.N.key / .value");
      }
    } else if (d.name == "logits" || (io.logits.empty() && d.name.rfind("present.", 0) != 0)) {
      io.logits = d.name;
      io.vocab = d.max.empty() ? 0 : d.max.back();
      io.logits_rows = 1;
      for (size_t k = 0; k + 1 < d.max.size(); ++k) io.logits_rows *= d.max[k];
      io.logits_dtype = d.dtype;
    }
  }
  if (!have_ids) return invalid_argument("the plan has no input 'input_ids'");
  if (io.logits.empty() || io.vocab <= 0) return invalid_argument("the plan has no logits output of known width");
  const std::vector<TensorDesc> descs = e.io_tensors();  // a copy: `present` points into it
  for (KvPair& p : io.kv) {
    const TensorDesc* present = nullptr;
    for (const TensorDesc& d : descs)
      if (!d.is_input && d.name == p.present) present = &d;
    if (!present) return invalid_argument("input '" + p.past + "' has no matching output '" + p.present + "'");
    // Stored in place: both with one capacity along the positions' axis, so one buffer serves both.
    p.in_place = p.desc.seq_capacity > 0 && p.desc.seq_axis == 2 && present->seq_capacity == p.desc.seq_capacity &&
                 present->seq_axis == 2;
    if (p.desc.seq_capacity > 0 && !p.in_place)
      return invalid_argument("'" + p.past + "' and '" + p.present + "' are stored with different capacities");
  }
  return io;
}

Dims kv_dims(const KvPair& p, int64_t positions) { return {p.dims[0], p.dims[1], positions, p.dims[3]}; }

uint64_t kv_bytes(const KvPair& p, int64_t positions) { return p.desc.storage_bytes(kv_dims(p, positions)); }

// Writes `host` (the dense cache of `filled` positions) into the pair's current buffer, in its layout.
Status fill_cache(KvPair& p, int64_t filled, const std::vector<uint8_t>& host) {
  std::vector<uint8_t> stored(p.buf[p.cur].size(), 0);
  SRT_RETURN_IF_ERROR(pack_to_storage(p.desc, kv_dims(p, filled), host.data(), stored.data()));
  return p.buf[p.cur].copy_from_host(stored.data(), stored.size());
}

// Device memory for the cache with the first `filled` positions set: zeros, or random values for a
// synthetic cache. In place: one buffer per pair of the plan's capacity, which must hold `positions`;
// else two buffers per pair, `positions` long. Returns the bytes allocated.
Result<uint64_t> allocate_cache(DeviceType dev, Io& io, int64_t positions, int64_t filled, bool random) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.f, 0.5f);
  uint64_t total = 0;
  for (KvPair& p : io.kv) {
    if (p.in_place && positions > p.desc.seq_capacity)
      return invalid_argument("the run needs " + std::to_string(positions) + " cache positions; '" + p.past +
                              "' has room for " + std::to_string(p.desc.seq_capacity) + " (the plan's profile)");
    const uint64_t bytes = p.in_place ? kv_bytes(p, p.desc.seq_capacity) : kv_bytes(p, positions);
    for (int b = 0; b < (p.in_place ? 1 : 2); ++b) {
      SRT_ASSIGN_OR_RETURN(p.buf[b], DeviceBuffer::allocate(dev, bytes));
      total += bytes;
    }
    if (filled == 0) continue;
    if (p.dtype != DataType::kFloat16 && p.dtype != DataType::kFloat32)
      return unsupported("cache '" + p.past + "' is " + dtype_name(p.dtype) + ": float16 / float32 only");
    std::vector<uint8_t> host(static_cast<size_t>(dims_numel(kv_dims(p, filled))) * dtype_size(p.dtype), 0);
    if (random) {
      for (size_t i = 0; i < host.size() / dtype_size(p.dtype); ++i) {
        if (p.dtype == DataType::kFloat16) reinterpret_cast<uint16_t*>(host.data())[i] = Half::from_float(n(rng));
        else reinterpret_cast<float*>(host.data())[i] = n(rng);
      }
    }
    SRT_RETURN_IF_ERROR(fill_cache(p, filled, host));
  }
  return total;
}

float logit(const std::vector<uint8_t>& row, DataType t, int64_t i) {
  if (t == DataType::kFloat16) return Half::to_float(reinterpret_cast<const uint16_t*>(row.data())[i]);
  if (t == DataType::kBFloat16) return BFloat16::to_float(reinterpret_cast<const uint16_t*>(row.data())[i]);
  return reinterpret_cast<const float*>(row.data())[i];
}

struct StepResult {
  int64_t next = 0;
  double ms = 0;
  StreamingStats stats;
  CudaGraphStats graphs;
};

class Decoder {
 public:
  Decoder(std::shared_ptr<Engine> e, Io io, int64_t max_new) : e_(std::move(e)), io_(std::move(io)), max_new_(max_new) {}

  // I/O buffers first: the budget is set after them and before the context (which fixes it).
  Status allocate(int64_t positions) {
    const DeviceType dev = e_->device();
    SRT_ASSIGN_OR_RETURN(ids_, DeviceBuffer::allocate(dev, max_new_ * 8));
    SRT_ASSIGN_OR_RETURN(pos_, DeviceBuffer::allocate(dev, max_new_ * 8));
    SRT_ASSIGN_OR_RETURN(mask_, DeviceBuffer::allocate(dev, positions * 8));
    // The planned max of the output: one row when the export keeps only the last position.
    logits_bytes_ = static_cast<uint64_t>(std::max<int64_t>(io_.logits_rows, 1) * io_.vocab) * dtype_size(io_.logits_dtype);
    SRT_ASSIGN_OR_RETURN(logits_, DeviceBuffer::allocate(dev, logits_bytes_));
    return ok_status();
  }

  Status create_context(bool cuda_graph) {
    SRT_ASSIGN_OR_RETURN(ctx_, e_->create_execution_context());
    ctx_->set_streaming_profiling(true);
    if (cuda_graph) SRT_RETURN_IF_ERROR(ctx_->set_cuda_graph(true));
    return ok_status();
  }

  // One forward over `ids` after `past` cached positions; `mask` covers past + new positions and
  // `first_pos` is the first new token's position id.
  Result<StepResult> step(const std::vector<int64_t>& ids, int64_t past, const std::vector<int64_t>& mask,
                          int64_t first_pos) {
    const int64_t n = static_cast<int64_t>(ids.size());
    auto t0 = std::chrono::steady_clock::now();
    SRT_RETURN_IF_ERROR(ctx_->set_input_shape(io_.ids, {1, n}));
    SRT_RETURN_IF_ERROR(ids_.copy_from_host(ids.data(), n * 8));
    SRT_RETURN_IF_ERROR(ctx_->set_tensor_address(io_.ids, ids_.data(), ids_.size()));
    if (!io_.mask.empty()) {
      SRT_RETURN_IF_ERROR(ctx_->set_input_shape(io_.mask, {1, static_cast<int64_t>(mask.size())}));
      SRT_RETURN_IF_ERROR(mask_.copy_from_host(mask.data(), mask.size() * 8));
      SRT_RETURN_IF_ERROR(ctx_->set_tensor_address(io_.mask, mask_.data(), mask_.size()));
    }
    if (!io_.pos.empty()) {
      std::vector<int64_t> pos(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = first_pos + i;
      SRT_RETURN_IF_ERROR(ctx_->set_input_shape(io_.pos, {1, n}));
      SRT_RETURN_IF_ERROR(pos_.copy_from_host(pos.data(), n * 8));
      SRT_RETURN_IF_ERROR(ctx_->set_tensor_address(io_.pos, pos_.data(), pos_.size()));
    }
    for (KvPair& p : io_.kv) {
      SRT_RETURN_IF_ERROR(ctx_->set_input_shape(p.past, kv_dims(p, past)));
      SRT_RETURN_IF_ERROR(ctx_->set_tensor_address(p.past, p.buf[p.cur].data(), p.buf[p.cur].size()));
      // In place the present is the past's buffer: the step writes only the new positions.
      DeviceBuffer& out = p.in_place ? p.buf[p.cur] : p.buf[1 - p.cur];
      SRT_RETURN_IF_ERROR(ctx_->set_tensor_address(p.present, out.data(), out.size()));
    }
    SRT_RETURN_IF_ERROR(ctx_->set_tensor_address(io_.logits, logits_.data(), logits_bytes_));
    SRT_RETURN_IF_ERROR(ctx_->execute());
    SRT_ASSIGN_OR_RETURN(Dims ld, ctx_->tensor_shape(io_.logits));
    const int64_t rows = ld.size() >= 2 ? ld[ld.size() - 2] : 1;
    const uint64_t row_bytes = static_cast<uint64_t>(io_.vocab) * dtype_size(io_.logits_dtype);
    std::vector<uint8_t> all(rows * row_bytes);  // the graph keeps the last position (or all of them)
    SRT_RETURN_IF_ERROR(logits_.copy_to_host(all.data(), all.size()));
    std::vector<uint8_t> row(all.end() - static_cast<std::ptrdiff_t>(row_bytes), all.end());
    StepResult r;
    float best = logit(row, io_.logits_dtype, 0);
    for (int64_t v = 1; v < io_.vocab; ++v) {
      const float x = logit(row, io_.logits_dtype, v);
      if (x > best) best = x, r.next = v;
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    SRT_ASSIGN_OR_RETURN(r.stats, ctx_->last_run_stats());
    if (e_->device() == DeviceType::kCuda) {
      SRT_ASSIGN_OR_RETURN(r.graphs, ctx_->last_run_graph_stats());
    }
    swap_back();
    return r;
  }

  // The presents just written become the pasts (in place they already are).
  void swap_back() {
    for (KvPair& p : io_.kv)
      if (!p.in_place) p.cur = 1 - p.cur;
  }

  // Back to `start` masked-out (zero) positions, to repeat a prefill.
  Status reset(int64_t start) {
    for (KvPair& p : io_.kv) {
      std::vector<uint8_t> zeros(static_cast<size_t>(dims_numel(kv_dims(p, start))) * dtype_size(p.dtype), 0);
      SRT_RETURN_IF_ERROR(fill_cache(p, start, zeros));
    }
    return ok_status();
  }

 private:
  std::shared_ptr<Engine> e_;
  Io io_;
  int64_t max_new_;
  DeviceBuffer ids_, pos_, mask_, logits_;
  uint64_t logits_bytes_ = 0;
  std::unique_ptr<ExecutionContext> ctx_;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Summary {
  std::vector<double> ms;
  uint64_t bytes = 0;
  double stall = 0, copy = 0;
  uint64_t steps = 0, replayed = 0, launches = 0;
  void add(const StepResult& r) {
    ms.push_back(r.ms);
    bytes += r.stats.bytes_streamed, stall += r.stats.stall_ms, copy += r.stats.copy_ms;
    steps += r.graphs.steps, replayed += r.graphs.replayed_steps, launches += r.graphs.graph_launches;
  }
  std::string json(const char* mode) const {
    const double n = ms.empty() ? 1 : static_cast<double>(ms.size());
    std::ostringstream s;
    s << "\"mode\":\"" << mode << "\",\"steps\":" << ms.size() << ",\"median_ms\":" << median(ms)
      << ",\"min_ms\":" << (ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()))
      << ",\"bytes_streamed_per_step\":" << static_cast<uint64_t>(bytes / n) << ",\"stall_ms_per_step\":" << stall / n
      << ",\"copy_ms_per_step\":" << copy / n << ",\"graph_replayed_steps_per_step\":" << replayed / n
      << ",\"graph_launches_per_step\":" << launches / n;
    return s.str();
  }
};

Status run(const Options& o) {
  RuntimeOptions ro;
  ro.stream_next_run_ahead = o.stream_ahead;
  if (o.device == "cpu") ro.device = DeviceType::kCpu;
  else if (o.device == "cuda") ro.device = DeviceType::kCuda;
  SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create(ro));
  SRT_ASSIGN_OR_RETURN(auto engine, rt->load_engine(o.plan));
  SRT_ASSIGN_OR_RETURN(Io io, discover(*engine));
  SRT_ASSIGN_OR_RETURN(BudgetSpec spec, parse_budget(o.budget));

  constexpr int64_t kMaxPositions = int64_t{1} << 32;  // keeps the sums below from overflowing
  if (o.past > kMaxPositions || o.prompt_len > kMaxPositions || o.new_tokens > kMaxPositions)
    return invalid_argument("--past, --prompt-len and --new-tokens take at most " + std::to_string(kMaxPositions));
  if (o.prompt_len > 0 && io.vocab < 4) return invalid_argument("--prompt-len: the vocabulary is too small for random ids");
  std::vector<int64_t> prompt = o.prompt;
  std::mt19937 rng(3);
  for (int64_t i = static_cast<int64_t>(prompt.size()); i < o.prompt_len; ++i)
    prompt.push_back(3 + static_cast<int64_t>(rng() % static_cast<uint32_t>(io.vocab - 3)));
  if (prompt.empty() && o.past == 0) return invalid_argument("give --prompt, --prompt-len or --past");
  // A prompt runs after one masked-out cache position (exports specialize an empty cache away);
  // --past starts from a random cache of that length instead.
  const int64_t start = o.past > 0 ? o.past : 1;
  const int64_t positions = start + static_cast<int64_t>(prompt.size()) + std::max<int64_t>(o.new_tokens, 1);
  // A prompt longer than the profile's new tokens (or --prefill-chunk) runs in pieces, the cache growing
  // between them (chunked prefill): activations are planned for the piece, not the whole prompt.
  const int64_t chunk = o.prefill_chunk > 0 ? std::min(o.prefill_chunk, io.max_new) : io.max_new;
  const int64_t max_new = std::max<int64_t>(std::min<int64_t>(static_cast<int64_t>(prompt.size()), chunk), 1);
  if (o.repeat > 1 && o.past > 0) return invalid_argument("--repeat re-runs a prefill from an empty cache: not with --past");

  // The load placed weights at the automatic budget; give that memory back until the cache and the I/O
  // buffers have theirs.
  if (engine->streamable_weights_size() > 0) SRT_RETURN_IF_ERROR(engine->set_weight_streaming_budget(0));
  SRT_ASSIGN_OR_RETURN(const uint64_t cache_bytes, allocate_cache(engine->device(), io, positions, start, o.past > 0));
  size_t in_place = 0;  // pairs stored in place (the builder may have left some dense)
  int64_t capacity = 0;
  for (const KvPair& p : io.kv)
    if (p.in_place) ++in_place, capacity = std::max(capacity, p.desc.seq_capacity);
  const size_t pairs = io.kv.size();
  Decoder dec(engine, std::move(io), max_new);
  SRT_RETURN_IF_ERROR(dec.allocate(positions));
  // Weights get what the cache, the I/O buffers and the context leave free.
  const uint64_t budget = resolve_budget(spec, engine->streamable_weights_size(),
                                         engine->weight_streaming_automatic_budget());
  if (engine->streamable_weights_size() > 0) SRT_RETURN_IF_ERROR(engine->set_weight_streaming_budget(budget));
  SRT_RETURN_IF_ERROR(dec.create_context(o.cuda_graph));
  std::printf("plan %s on %s: %s streamable, budget %s (%s), memory contract %s\n", o.plan.c_str(),
              engine->device() == DeviceType::kCuda ? "cuda" : "cpu",
              format_bytes(engine->streamable_weights_size()).c_str(), format_bytes(budget).c_str(),
              format_budget(spec).c_str(), format_bytes(engine->minimum_device_memory()).c_str());
  std::string layout = in_place == pairs ? "in place: one buffer of " + std::to_string(capacity) + " positions per pair"
                       : in_place == 0 ? "two buffers of " + std::to_string(positions) + " positions per pair"
                                       : std::to_string(in_place) + " in place (one buffer of " + std::to_string(capacity) +
                                             " positions), the others two buffers of " + std::to_string(positions);
  std::printf("KV cache: %zu pairs, %s (%s)\n", pairs, format_bytes(cache_bytes).c_str(), layout.c_str());

  std::vector<int64_t> mask(static_cast<size_t>(start), o.past > 0 ? 1 : 0);
  std::vector<int64_t> out;
  Summary prefill, decode;
  int64_t past = start, next = 0;
  if (!prompt.empty()) {
    for (int64_t r = 0; r < o.repeat; ++r) {  // repeats re-run the same prefill from the empty cache
      if (r > 0) SRT_RETURN_IF_ERROR(dec.reset(start));
      std::vector<int64_t> m = mask;
      StepResult all;
      for (size_t off = 0; off < prompt.size(); off += static_cast<size_t>(chunk)) {
        const size_t n = std::min(prompt.size() - off, static_cast<size_t>(chunk));
        m.insert(m.end(), n, 1);
        const std::vector<int64_t> piece(prompt.begin() + static_cast<std::ptrdiff_t>(off),
                                         prompt.begin() + static_cast<std::ptrdiff_t>(off + n));
        SRT_ASSIGN_OR_RETURN(StepResult s, dec.step(piece, start + static_cast<int64_t>(off), m,
                                                    o.past + static_cast<int64_t>(off)));
        all.next = s.next, all.ms += s.ms;
        all.stats.bytes_streamed += s.stats.bytes_streamed, all.stats.stall_ms += s.stats.stall_ms;
        all.stats.copy_ms += s.stats.copy_ms;
      }
      prefill.add(all);
      next = all.next;
    }
    mask.insert(mask.end(), prompt.size(), 1);
    past += static_cast<int64_t>(prompt.size());
    out.push_back(next);
  } else {
    next = 3;
  }
  for (int64_t t = prompt.empty() ? 0 : 1; t < o.new_tokens; ++t) {
    mask.push_back(1);
    SRT_ASSIGN_OR_RETURN(StepResult s, dec.step({next}, past, mask, past - (o.past > 0 ? 0 : 1)));
    decode.add(s);
    next = s.next;
    out.push_back(next);
    ++past;
  }

  if (!prefill.ms.empty())
    std::printf("prefill %zu tokens: %.2f ms (median of %zu), %s streamed, stall %.2f ms\n", prompt.size(),
                median(prefill.ms), prefill.ms.size(), format_bytes(prefill.bytes / prefill.ms.size()).c_str(),
                prefill.stall / prefill.ms.size());
  const int64_t decode_past = start + static_cast<int64_t>(prompt.size()) - (o.past > 0 ? 0 : 1);
  if (!decode.ms.empty()) {
    const double n = static_cast<double>(decode.ms.size());
    std::printf("decode %zu tokens after %lld cached: %.2f tokens/s (median %.2f ms/token), %s streamed/token, "
                "stall %.2f ms/token\n", decode.ms.size(), static_cast<long long>(decode_past),
                1000.0 / median(decode.ms), median(decode.ms), format_bytes(static_cast<uint64_t>(decode.bytes / n)).c_str(),
                decode.stall / n);
    if (decode.launches)
      std::printf("CUDA graphs: %.0f of %.0f plan steps a token replayed, in %.1f graph launches\n", decode.replayed / n,
                  decode.steps / n, decode.launches / n);
  }
  std::printf("tokens:");
  for (int64_t id : out) std::printf(" %lld", static_cast<long long>(id));
  std::printf("\n");

  if (!o.json.empty()) {
    std::ofstream f(o.json, std::ios::app);
    std::ostringstream common;
    common << "\"impl\":\"streamrt\",\"label\":\"" << o.label << "\",\"prompt\":" << prompt.size()
           << ",\"budget_bytes\":" << budget << ",\"streamable_bytes\":" << engine->streamable_weights_size()
           << ",\"min_device_memory\":" << engine->minimum_device_memory() << ",\"kv_in_place\":"
           << in_place << ",\"cache_bytes\":" << cache_bytes;
    if (!prefill.ms.empty()) f << "{" << common.str() << ",\"past\":" << o.past << "," << prefill.json("prefill") << "}\n";
    std::ostringstream ids;
    for (size_t i = 0; i < out.size(); ++i) ids << (i ? "," : "") << out[i];
    if (!decode.ms.empty()) f << "{" << common.str() << ",\"past\":" << decode_past << "," << decode.json("decode")
                              << ",\"tokens\":[" << ids.str() << "]}\n";
    if (!f) return io_error("cannot write " + o.json);
  }
  return ok_status();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"greedy generation with a KV-cache decoder plan (token ids in, ids out)"};
  Options o;
  app.add_option("plan", o.plan, "plan built from a transformers-layout decoder export")->required()->check(CLI::ExistingFile);
  app.add_option("--prompt", o.prompt, "prompt token ids")->delimiter(',');
  app.add_option("--prompt-len", o.prompt_len, "random prompt of this many tokens (after --prompt's)")->check(CLI::NonNegativeNumber);
  app.add_option("--past", o.past, "start from a random cache of this many positions (decode timing)")->check(CLI::NonNegativeNumber);
  app.add_option("--new-tokens", o.new_tokens, "tokens to generate")->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", o.repeat, "run the prefill this many times (timing)")->check(CLI::PositiveNumber);
  app.add_option("--prefill-chunk", o.prefill_chunk, "prompt tokens per step (default: the profile's most)")->check(CLI::PositiveNumber);
  app.add_option("--budget", o.budget, "weight-streaming budget: auto, a percentage or a size (e.g. 4GiB)");
  app.add_option("--device", o.device, "auto | cpu | cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_flag("--stream-ahead,!--no-stream-ahead", o.stream_ahead,
               "streamed weights: each token's run ends by copying the next token's first streamed weights "
               "(RuntimeOptions::stream_next_run_ahead; on by default)");
  app.add_flag("--cuda-graph", o.cuda_graph,
               "capture runs as CUDA graphs: the steps a token leaves unchanged replay as captured pieces when no "
               "weight streams (with streamed weights the tokens run eagerly: their shapes change every token)");
  app.add_option("--json", o.json, "append the results as JSON lines to this file");
  app.add_option("--label", o.label, "a label for the JSON lines (e.g. the benchmark point)");
  app.footer("Example: streamrt_greedy_decode llama.plan --prompt 128000,791,6864 --new-tokens 32 --budget auto");
  CLI11_PARSE(app, argc, argv);
  Status s = run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
