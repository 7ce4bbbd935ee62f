#pragma once
/// @file
/// DeviceMesh, after PyTorch's init_device_mesh: the world's ranks laid out
/// as an n-dimensional array (row-major, so with shape {dp, tp} ranks
/// 0..tp-1 form the first row), with named dimensions and, for each
/// dimension, the subgroup of the ranks that differ only along it.
///
///     DeviceMesh mesh = init_device_mesh("cpu", {2, 2}, {"dp", "tp"});
///     // ranks [[0, 1], [2, 3]]: rank 1's "tp" group is {0, 1}, its "dp" group {1, 3}
///     all_reduce(grad, ReduceOp::Avg, {.group = mesh.get_group("dp").get()});
///     int tp_rank = mesh.get_local_rank("tp");
///     DeviceMesh tp = mesh["tp"];             // the 1-D mesh along "tp" through this rank
///
/// Making a mesh is collective: every rank of the world makes the same mesh
/// at the same point, since each dimension's groups come from new_group
/// (every rank calls it for every group; each joins only its own, so a
/// dimension of size n costs one rendezvous among n ranks per rank).
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group/subgroup.h"

namespace anvil::distributed {

/// The world's ranks arranged as an n-dimensional grid, with one subgroup per dimension, as torch.distributed's
/// DeviceMesh (see the file comment).
class DeviceMesh {
 public:
  /// `shape`'s product must equal the world's size; `dim_names` is empty or
  /// one distinct, non-empty name per dimension. `device_type` ("cpu" or
  /// "cuda") says where the tensors live; the groups follow the world's
  /// backend (with "auto", Gloo for CPU tensors and NCCL for CUDA ones).
  DeviceMesh(World& world, std::string device_type, std::vector<int> shape, std::vector<std::string> dim_names = {},
             const NewGroupOptions& group_options = {});

  const std::string& device_type() const { return device_type_; }  ///< "cpu" or "cuda".
  int ndim() const { return static_cast<int>(shape_.size()); }  ///< Number of dimensions.
  const std::vector<int>& shape() const { return shape_; }  ///< The size of each dimension.
  const std::vector<std::string>& dim_names() const { return names_; }  ///< The dimensions' names (empty: unnamed).
  ///@{
  /// Ranks in the mesh, all of them.
  int size() const;
  int size(int dim) const { return shape_[check_dim(dim)]; }
  int size(const std::string& dim) const { return size(dim_index(dim)); }
  ///@}
  /// The world ranks in the mesh, flattened row-major (PyTorch's mesh tensor).
  const std::vector<int>& mesh() const { return ranks_; }
  /// This rank's index along each dimension (PyTorch's get_coordinate()).
  const std::vector<int>& coordinate() const { return coordinate_; }
  ///@{
  /// This rank's index along one dimension = its rank in that dimension's group.
  int get_local_rank(int dim) const { return coordinate_[check_dim(dim)]; }
  int get_local_rank(const std::string& dim) const { return get_local_rank(dim_index(dim)); }
  ///@}
  ///@{
  /// The group of the ranks that share this rank's coordinate in every other dimension.
  std::shared_ptr<SubGroup> get_group(int dim) const { return groups_[check_dim(dim)]; }
  std::shared_ptr<SubGroup> get_group(const std::string& dim) const { return get_group(dim_index(dim)); }
  ///@}
  /// A 1-D mesh's only group (throws on more dimensions: name one).
  std::shared_ptr<SubGroup> get_group() const;
  /// The 1-D mesh along `dim` through this rank; it shares the group.
  DeviceMesh operator[](const std::string& dim) const;
  /// Index of a named dimension; an unknown name throws, listing the names.
  int dim_index(const std::string& name) const;
  /// "DeviceMesh('cpu', [[0, 1], [2, 3]], mesh_dim_names=('dp', 'tp'))", as PyTorch prints it.
  std::string str() const;

 private:
  DeviceMesh() = default;
  size_t check_dim(int dim) const;

  std::string device_type_;
  std::vector<int> shape_;
  std::vector<std::string> names_;
  std::vector<int> ranks_;
  std::vector<int> coordinate_;
  std::vector<std::shared_ptr<SubGroup>> groups_;
};

/// A mesh over the default world (init_process_group's).
DeviceMesh init_device_mesh(const std::string& device_type, const std::vector<int>& shape,
                            const std::vector<std::string>& dim_names = {});

}  // namespace anvil::distributed
