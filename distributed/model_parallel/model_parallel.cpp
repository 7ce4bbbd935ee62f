#include "distributed/model_parallel/model_parallel.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace anvil::distributed {

Boundaries balanced_boundaries(const std::vector<double>& costs, int parts) {
  const size_t n = costs.size();
  ANVIL_CHECK(parts >= 1, "balanced_boundaries: need at least one part, got ", parts);
  ANVIL_CHECK(static_cast<size_t>(parts) <= std::max<size_t>(n, 1), "balanced_boundaries: cannot split ", n,
              " layers into ", parts, " non-empty parts");
  // best[k][i]: smallest possible max part cost splitting layers [0, i) into k
  // parts; cut[k][i]: where the last of those parts starts. n and parts are
  // small (layers of one model), so the O(parts * n^2) table is fine.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  std::vector<std::vector<double>> best(static_cast<size_t>(parts) + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> cut(static_cast<size_t>(parts) + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= static_cast<size_t>(parts); ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) {
        double c = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (c < best[k][i]) best[k][i] = c, cut[k][i] = j;
      }
  Boundaries b(static_cast<size_t>(parts) - 1);
  size_t i = n;
  for (size_t k = static_cast<size_t>(parts); k > 1; --k) {
    i = cut[k][i];
    b[k - 2] = i;
  }
  return b;
}

Boundaries balance_by_parameters(const nn::Sequential& seq, int parts) {
  std::vector<double> costs;
  for (const auto& m : seq) {
    double c = 1;
    for (const Tensor& p : m->parameters()) c += static_cast<double>(p.numel());
    costs.push_back(c);
  }
  return balanced_boundaries(costs, parts);
}

void check_boundaries(const Boundaries& boundaries, size_t n, int parts) {
  ANVIL_CHECK(parts >= 1, "model parallel: need at least one part, got ", parts);
  ANVIL_CHECK(boundaries.size() + 1 == static_cast<size_t>(parts), "model parallel: ", boundaries.size(),
              " boundaries for ", parts, " parts; expected ", parts - 1, " (where parts 1..", parts - 1, " start)");
  size_t last = 0;
  for (size_t i = 0; i < boundaries.size(); ++i) {
    ANVIL_CHECK(boundaries[i] > last && boundaries[i] < n, "model parallel: boundary ", i, " = ", boundaries[i],
                " must be above the previous one (", last, ") and below the number of layers (", n,
                "), so that every part has a layer");
    last = boundaries[i];
  }
}

std::vector<PartRange> part_ranges(const Boundaries& boundaries, size_t n) {
  std::vector<PartRange> ranges;
  size_t begin = 0;
  for (size_t b : boundaries) {
    ranges.push_back({begin, b});
    begin = b;
  }
  ranges.push_back({begin, n});
  return ranges;
}

ModelParallelSequential::ModelParallelSequential(const nn::Sequential& seq, std::vector<Device> devices,
                                                 Boundaries boundaries)
    : nn::Module("ModelParallelSequential"), devices_(std::move(devices)), boundaries_(std::move(boundaries)) {
  const int parts = static_cast<int>(devices_.size());
  ANVIL_CHECK(parts >= 1, "ModelParallelSequential: needs at least one device");
  if (boundaries_.empty() && parts > 1) boundaries_ = balance_by_parameters(seq, parts);
  check_boundaries(boundaries_, seq.size(), parts);
  ranges_ = part_ranges(boundaries_, seq.size());
  // Children keep seq's names, so state_dict keys are those of the unsplit model.
  auto named = seq.named_children();
  for (auto& [name, m] : named) {
    add_child(name, m);
    layers_.push_back(m);
  }
  for (size_t i = 0; i < ranges_.size(); ++i)
    for (size_t l = ranges_[i].begin; l < ranges_[i].end; ++l) layers_[l]->to(devices_[i]);
}

Tensor ModelParallelSequential::forward(const Tensor& x) {
  Tensor out = x;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    // The hop between devices: differentiable, so its backward moves the
    // gradient back to the previous part's device.
    out = out.to(devices_[i]);
    for (size_t l = ranges_[i].begin; l < ranges_[i].end; ++l) out = layers_[l]->forward(out);
  }
  return out;
}

std::vector<Tensor> ModelParallelSequential::part_parameters(size_t i) const {
  std::vector<Tensor> params;
  PartRange r = ranges_.at(i);
  for (size_t l = r.begin; l < r.end; ++l)
    for (const Tensor& p : layers_[l]->parameters()) params.push_back(p);
  return params;
}

std::string ModelParallelSequential::placement() const {
  std::ostringstream out;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    int64_t count = 0;
    for (const Tensor& p : part_parameters(i)) count += p.numel();
    out << "part " << i << " on " << devices_[i].str() << ": layers " << ranges_[i].begin << "-" << ranges_[i].end - 1
        << " (";
    for (size_t l = ranges_[i].begin; l < ranges_[i].end; ++l)
      out << (l > ranges_[i].begin ? ", " : "") << layers_[l]->type_name();
    out << "), " << count << " parameters\n";
  }
  return out.str();
}

std::shared_ptr<ModelParallelSequential> split_across_devices(const std::shared_ptr<nn::Sequential>& seq,
                                                              std::vector<Device> devices, Boundaries boundaries) {
  ANVIL_CHECK(seq != nullptr, "split_across_devices: null Sequential");
  return std::make_shared<ModelParallelSequential>(*seq, std::move(devices), std::move(boundaries));
}

std::shared_ptr<nn::Sequential> stage_of_sequential(const nn::Sequential& seq, int stage, int num_stages,
                                                    Boundaries boundaries) {
  ANVIL_CHECK(stage >= 0 && stage < num_stages, "stage_of_sequential: stage ", stage, " outside [0, ", num_stages, ")");
  if (boundaries.empty() && num_stages > 1) boundaries = balance_by_parameters(seq, num_stages);
  check_boundaries(boundaries, seq.size(), num_stages);
  PartRange r = part_ranges(boundaries, seq.size())[static_cast<size_t>(stage)];
  auto out = std::make_shared<nn::Sequential>();
  auto named = seq.named_children();
  for (size_t l = r.begin; l < r.end; ++l) out->push_back(named[l].first, named[l].second);
  return out;
}

}  // namespace anvil::distributed
