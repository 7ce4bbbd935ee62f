#pragma once
/// @file
/// State dicts as safetensors files (https://github.com/huggingface/safetensors),
/// byte-compatible with what the Python `safetensors` library writes and reads:
///
///     [8 bytes: N, little-endian u64][N bytes: JSON header, space-padded to a
///     multiple of 8][raw little-endian tensor data]
///
/// The header maps each name to {"dtype": "F32", "shape": [2, 3],
/// "data_offsets": [begin, end]} (offsets relative to the data section), plus
/// an optional "__metadata__" object of string -> string.
///
///     serialize::save_safetensors("model.safetensors", model->state_dict(), {{"format", "pt"}});
///     model->load_state_dict(serialize::load_safetensors("model.safetensors"));
///
/// Like the Python library, the writer lays the tensors out by dtype (widest
/// alignment first: I64, F64, F32, I32, BF16, F16, U8, BOOL) then by name, so
/// every tensor is aligned for its type; the same tensors give the same bytes
/// as safetensors.torch.save_file / safetensors.numpy.save_file (metadata keys
/// in sorted order; Python's order is that of a hash map). Loading accepts any
/// layout the format allows. Dtypes: F64 F32 F16 BF16 I64 I32 U8 BOOL.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "nn/module.h"

namespace anvil::nn::serialize {

/// Free-form text stored in the header's "__metadata__" (the Python library
/// accepts string values only).
using Metadata = std::map<std::string, std::string>;

/// A safetensors file's tensors and metadata.
struct SafetensorsContents {
  StateDict tensors;  ///< sorted by name (as safe_open(...).keys() lists them); CPU tensors
  Metadata metadata;  ///< the "__metadata__" strings
};

/// Tensors on another device or non-contiguous are copied to contiguous CPU
/// memory first. Names must be unique, non-empty and not "__metadata__".
/// The file is replaced atomically (see atomic_file.h). Empty metadata writes
/// no "__metadata__" entry.
void save_safetensors(const std::filesystem::path& path, const StateDict& tensors, const Metadata& metadata = {});
/// The tensors of a safetensors file, as CPU tensors sorted by name.
StateDict load_safetensors(const std::filesystem::path& path);
/// The tensors and the metadata of a safetensors file.
SafetensorsContents load_safetensors_with_metadata(const std::filesystem::path& path);

/// The same in memory (safetensors.numpy.save / load).
std::string serialize_safetensors(const StateDict& tensors, const Metadata& metadata = {});
SafetensorsContents deserialize_safetensors(
    std::string_view bytes);  ///< The tensors and metadata of safetensors bytes.

/// "F32" for kFloat32, ...; the safetensors dtype strings.
const char* safetensors_dtype_name(DType dtype);

}  // namespace anvil::nn::serialize
