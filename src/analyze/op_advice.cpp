#include "ktune/analyze/op_advice.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ktune/analyze/gemm_calls.hpp"
#include "ktune/analyze/kernel_name.hpp"
#include "ktune/core/enum_names.hpp"
#include "ktune/core/text.hpp"

namespace ktune::analyze {
namespace {

constexpr EnumName<ProgramPattern> kPatternNames[] = {
    {ProgramPattern::casts, "casts"},
    {ProgramPattern::elementwise_chain, "elementwise_chain"},
    {ProgramPattern::attention, "attention"},
    {ProgramPattern::small_gemms, "small_gemms"},
};

// The ops that convert or copy a tensor: .to(dtype), .float(), .half(), type_as, copy_.
constexpr std::string_view kCastOps[] = {"aten::copy_", "aten::_to_copy", "aten::to"};
constexpr std::string_view kGemmOps[] = {"aten::mm",      "aten::bmm",       "aten::addmm",
                                         "aten::baddbmm", "aten::matmul",    "aten::linear",
                                         "aten::addbmm",  "aten::_scaled_mm"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string took(std::int64_t ns) {
  return duration_text(static_cast<double>(ns));
}

double share(double part, std::int64_t whole) {
  return whole > 0 ? part / static_cast<double>(whole) : 0.0;
}

}  // namespace

const char* to_string(ProgramPattern p) {
  return name_of(kPatternNames, p);
}

ProgramPatterns::Kind ProgramPatterns::kind_of(std::string_view kernel, std::string_view op) {
  const std::string name = lower(kernel);
  // A fused attention kernel (flash, fMHA, cuDNN's SDPA) is already what the advice asks for.
  if (contains(name, "flash") || contains(name, "fmha") || contains(name, "attention"))
    return Kind::other;
  if (contains(name, "softmax") || contains(op, "softmax")) return Kind::softmax;
  if (std::find(std::begin(kGemmOps), std::end(kGemmOps), op) != std::end(kGemmOps) ||
      contains(name, "gemm") || is_cublaslt_kernel(kernel))
    return Kind::gemm;
  if (contains(name, "elementwise_kernel")) return Kind::elementwise;
  return Kind::other;
}

void ProgramPatterns::close_chain(Stream& s) {
  if (s.chain.size() >= advice_threshold::kMinChain) {
    std::string key;
    for (const std::string& label : s.chain) key += (key.empty() ? "" : " -> ") + label;
    Tally& t = chains_[key];
    ++t.count;
    t.launches += s.chain.size();
    t.gpu_ns += s.chain_ns;
    // One fused kernel reads the chain's inputs and writes its outputs once: at most (n - 1) / n
    // of the chain's time, the intermediate tensors' writes and reads, goes.
    const double n = static_cast<double>(s.chain.size());
    t.saving_ns += static_cast<double>(s.chain_ns) * (n - 1) / n;
  }
  s.chain.clear();
  s.chain_ns = 0;
}

void ProgramPatterns::on_kernel(const trace::KernelRecord& k, const LaunchShape& shape,
                                std::string_view op, std::int64_t duration_ns) {
  const std::string& name = k.display_name();
  if (!op.empty()) {
    OpGroup& g = ops_[std::string(op)];
    if (g.name.empty()) g.name = op;
    ++g.kernels;
    g.total_ns += duration_ns;
  }
  const Kind kind = kind_of(name, op);
  Stream& s = streams_[{k.device_id, k.stream_id}];
  if (kind == Kind::elementwise) {
    s.chain.push_back(op.empty() ? shown_name(name, NameStyle::middle) : std::string(op));
    s.chain_ns += duration_ns;
  } else {
    close_chain(s);
  }
  // GEMM, [elementwise...], softmax, [elementwise...], GEMM.
  switch (kind) {
    case Kind::gemm:
      if (s.attention == 2) {
        ++attention_.count;
        attention_.launches += s.attention_launches + 1;
        attention_.gpu_ns += s.attention_ns + duration_ns;
        // A fused attention kernel keeps the scores on chip: the softmax and the scaling or
        // masking between the GEMMs go; the GEMMs' own math stays.
        attention_.saving_ns += static_cast<double>(s.attention_ns - s.attention_gemm_ns);
      }
      s.attention = 1;
      s.attention_launches = 1;
      s.attention_ns = s.attention_gemm_ns = duration_ns;
      break;
    case Kind::softmax:
      if (s.attention == 1) {
        s.attention = 2;
        ++s.attention_launches;
        s.attention_ns += duration_ns;
      } else {
        s.attention = 0;
      }
      break;
    case Kind::elementwise:
      if (s.attention > 0) {
        ++s.attention_launches;
        s.attention_ns += duration_ns;
      }
      break;
    case Kind::other:
      s.attention = 0;
      break;
  }
  if (kind == Kind::gemm) {
    auto g = std::find_if(gemms_.begin(), gemms_.end(),
                          [&](const Gemm& x) { return x.shape == shape && x.name == name; });
    if (g == gemms_.end()) {
      gemms_.push_back({name, shape});
      g = gemms_.end() - 1;
    }
    ++g->launches;
    g->gpu_ns += duration_ns;
  }
}

std::vector<OpGroup> ProgramPatterns::ops(std::int64_t kernel_total_ns) const {
  std::vector<OpGroup> out;
  for (const auto& [name, g] : ops_) {
    out.push_back(g);
    out.back().share = share(static_cast<double>(g.total_ns), kernel_total_ns);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpGroup& a, const OpGroup& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::vector<OpAdvice> ProgramPatterns::advice(std::int64_t kernel_total_ns) {
  using namespace advice_threshold;
  for (auto& [key, s] : streams_) close_chain(s);
  std::vector<OpAdvice> out;

  // Casts: the conversion ops' own kernels.
  OpAdvice casts{ProgramPattern::casts,
                 "Remove dtype conversions: keep weights and activations in one dtype "
                 "(convert once, outside the loop, or let torch.autocast choose), and drop "
                 ".to()/.float()/.half() round trips",
                 "",
                 0,
                 0,
                 0,
                 0};
  for (std::string_view op : kCastOps)
    if (const auto it = ops_.find(std::string(op)); it != ops_.end()) {
      casts.launches += it->second.kernels;
      casts.gpu_ns += it->second.total_ns;
      casts.evidence += fmt::format("{}{}: {} kernels, {}", casts.evidence.empty() ? "" : "; ", op,
                                    it->second.kernels, took(it->second.total_ns));
    }
  casts.share = share(static_cast<double>(casts.gpu_ns), kernel_total_ns);
  casts.saving = casts.share;  // a conversion that is not needed goes entirely
  if (casts.share >= kCastShare) {
    casts.evidence += fmt::format(" ({:.1f} % of GPU time)", 100 * casts.share);
    out.push_back(casts);
  }

  // Elementwise chains, by their sequence of ops: the largest first.
  std::vector<std::pair<std::string, Tally>> chains(chains_.begin(), chains_.end());
  std::stable_sort(chains.begin(), chains.end(),
                   [](const auto& a, const auto& b) { return a.second.gpu_ns > b.second.gpu_ns; });
  Tally all;
  for (const auto& [key, t] : chains) {
    all.count += t.count;
    all.launches += t.launches;
    all.gpu_ns += t.gpu_ns;
    all.saving_ns += t.saving_ns;
  }
  if (!chains.empty() && share(static_cast<double>(all.gpu_ns), kernel_total_ns) >= kMinShare)
    out.push_back(
        {ProgramPattern::elementwise_chain,
         "Fuse the elementwise chains: torch.compile (or a hand-fused kernel) runs each "
         "chain as one kernel that reads its inputs and writes its result once",
         fmt::format("{} chains of {}+ elementwise kernels back to back on one stream, "
                     "{} launches, {}; most time in: {} ({} times, {})",
                     all.count, kMinChain, all.launches, took(all.gpu_ns), chains.front().first,
                     chains.front().second.count, took(chains.front().second.gpu_ns)),
         all.launches, all.gpu_ns, share(static_cast<double>(all.gpu_ns), kernel_total_ns),
         share(all.saving_ns, kernel_total_ns)});

  if (attention_.count > 0 &&
      share(static_cast<double>(attention_.gpu_ns), kernel_total_ns) >= kMinShare)
    out.push_back(
        {ProgramPattern::attention,
         "Write the attention as torch.nn.functional.scaled_dot_product_attention: its flash or "
         "memory-efficient kernel fuses the two GEMMs and the softmax and never stores the score "
         "matrix",
         fmt::format("{} times a GEMM, a softmax and a GEMM in a row on one stream (matmul, "
                     "softmax, matmul written out), {} launches, {}",
                     attention_.count, attention_.launches, took(attention_.gpu_ns)),
         attention_.launches, attention_.gpu_ns,
         share(static_cast<double>(attention_.gpu_ns), kernel_total_ns),
         share(attention_.saving_ns, kernel_total_ns)});

  std::stable_sort(gemms_.begin(), gemms_.end(),
                   [](const Gemm& a, const Gemm& b) { return a.gpu_ns > b.gpu_ns; });
  for (const Gemm& g : gemms_) {
    const double mean = static_cast<double>(g.gpu_ns) / static_cast<double>(g.launches);
    if (g.launches < kManyGemms || mean >= kSmallGemmNs ||
        share(static_cast<double>(g.gpu_ns), kernel_total_ns) < kMinShare)
      continue;
    out.push_back({ProgramPattern::small_gemms,
                   "Batch the small GEMMs of one shape: one torch.bmm (or a grouped GEMM, or the "
                   "weights stacked into one matrix) instead of many launches that each leave "
                   "most SMs idle",
                   fmt::format("{} launches of {} with grid {}x{}x{} block {}x{}x{}, {:.2f} us "
                               "each on average, {}",
                               g.launches, shown_name(g.name, NameStyle::middle), g.shape.grid.x,
                               g.shape.grid.y, g.shape.grid.z, g.shape.block.x, g.shape.block.y,
                               g.shape.block.z, mean / 1000, took(g.gpu_ns)),
                   g.launches, g.gpu_ns, share(static_cast<double>(g.gpu_ns), kernel_total_ns), 0});
  }
  std::stable_sort(out.begin(), out.end(), [](const OpAdvice& a, const OpAdvice& b) {
    return a.saving != b.saving ? a.saving > b.saving : a.share > b.share;
  });
  return out;
}

}  // namespace ktune::analyze
