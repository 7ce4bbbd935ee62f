#include "distributed/process_group/device_mesh.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "core/base/error.h"
#include "distributed/process_group/init.h"

namespace anvil::distributed {

namespace {

std::string shape_str(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string names_str(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s;
}

}  // namespace

DeviceMesh::DeviceMesh(World& world, std::string device_type, std::vector<int> shape,
                       std::vector<std::string> dim_names, const NewGroupOptions& group_options)
    : device_type_(std::move(device_type)), shape_(std::move(shape)), names_(std::move(dim_names)) {
  const std::string what = "DeviceMesh('" + device_type_ + "', shape " + shape_str(shape_) + ")";
  ANVIL_CHECK(device_type_ == "cpu" || device_type_ == "cuda", what, ": device type '", device_type_,
              "' is neither 'cpu' nor 'cuda'");
  ANVIL_CHECK(!shape_.empty(), what, ": the shape needs at least one dimension");
  for (int n : shape_) ANVIL_CHECK(n >= 1, what, ": every dimension needs at least one rank");
  const int64_t total = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
  ANVIL_CHECK(total == world.size(), what, ": the mesh holds ", total, " ranks but the world has ", world.size(),
              " (the shape's product must be the world size)");
  if (!names_.empty()) {
    ANVIL_CHECK(names_.size() == shape_.size(), what, ": ", names_.size(), " dimension names (", names_str(names_),
                ") for ", shape_.size(), " dimensions");
    for (size_t i = 0; i < names_.size(); ++i) {
      ANVIL_CHECK(!names_[i].empty(), what, ": dimension ", i, " has an empty name");
      ANVIL_CHECK(std::count(names_.begin(), names_.end(), names_[i]) == 1, what, ": the dimension name '", names_[i],
                  "' is used twice");
    }
  }
  const size_t nd = shape_.size();
  std::vector<int> stride(nd, 1);
  for (size_t d = nd - 1; d > 0; --d) stride[d - 1] = stride[d] * shape_[d];
  auto coord = [&](int r, size_t d) { return r / stride[d] % shape_[d]; };
  ranks_.resize(static_cast<size_t>(total));
  std::iota(ranks_.begin(), ranks_.end(), 0);
  for (size_t d = 0; d < nd; ++d) coordinate_.push_back(coord(world.rank(), d));
  // Every rank walks the same lines in the same order (dimension by
  // dimension, each line by its first rank), as new_group requires.
  groups_.resize(nd);
  for (size_t d = 0; d < nd; ++d) {
    for (int first = 0; first < total; ++first) {
      if (coord(first, d) != 0) continue;
      std::vector<int> line;
      for (int k = 0; k < shape_[d]; ++k) line.push_back(first + k * stride[d]);
      auto group = world.new_group(line, group_options);
      if (group->is_member()) groups_[d] = std::move(group);
    }
  }
}

int DeviceMesh::size() const { return std::accumulate(shape_.begin(), shape_.end(), 1, std::multiplies<>()); }

size_t DeviceMesh::check_dim(int dim) const {
  ANVIL_CHECK(dim >= 0 && dim < ndim(), str(), ": dimension ", dim, " is not in [0, ", ndim(), ")");
  return static_cast<size_t>(dim);
}

int DeviceMesh::dim_index(const std::string& name) const {
  ANVIL_CHECK(!names_.empty(), str(), ": the mesh has no dimension names, so there is no dimension '", name,
              "' (pass dim_names when making it, or use dimension indices)");
  auto it = std::find(names_.begin(), names_.end(), name);
  ANVIL_CHECK(it != names_.end(), str(), ": no dimension '", name, "' (the dimensions are ", names_str(names_), ")");
  return static_cast<int>(it - names_.begin());
}

std::shared_ptr<SubGroup> DeviceMesh::get_group() const {
  ANVIL_CHECK(ndim() == 1, str(), ": get_group() without a dimension needs a 1-D mesh; this one has ", ndim(),
              " dimensions (name one)");
  return groups_[0];
}

DeviceMesh DeviceMesh::operator[](const std::string& dim) const {
  const size_t d = static_cast<size_t>(dim_index(dim));
  DeviceMesh sub;
  sub.device_type_ = device_type_;
  sub.shape_ = {shape_[d]};
  sub.names_ = {names_[d]};
  sub.ranks_ = groups_[d]->ranks();
  sub.coordinate_ = {coordinate_[d]};
  sub.groups_ = {groups_[d]};
  return sub;
}

std::string DeviceMesh::str() const {
  // Nested lists, one level per dimension.
  std::function<std::string(size_t, size_t)> nest = [&](size_t d, size_t offset) {
    size_t block = 1;
    for (size_t k = d + 1; k < shape_.size(); ++k) block *= static_cast<size_t>(shape_[k]);
    std::string s = "[";
    for (size_t i = 0; i < static_cast<size_t>(shape_[d]); ++i) {
      if (i) s += ", ";
      s += d + 1 == shape_.size() ? std::to_string(ranks_[offset + i]) : nest(d + 1, offset + i * block);
    }
    return s + "]";
  };
  std::string s = "DeviceMesh('" + device_type_ + "', " + nest(0, 0);
  if (!names_.empty()) s += ", mesh_dim_names=(" + names_str(names_) + (names_.size() == 1 ? ",)" : ")");
  return s + ")";
}

DeviceMesh init_device_mesh(const std::string& device_type, const std::vector<int>& shape,
                            const std::vector<std::string>& dim_names) {
  return DeviceMesh(default_world(), device_type, shape, dim_names);
}

}  // namespace anvil::distributed
