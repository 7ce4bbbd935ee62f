#include "nn/serialize/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/serialize/atomic_file.h"

namespace anvil::nn::serialize {

// The format is little-endian; so is every machine anvil runs on, which lets
// tensor memory go to and from the file as it is.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

constexpr const char* kMetadataKey = "__metadata__";

struct DTypeInfo {
  DType dtype;
  const char* name;
  // The dtype's position in the Rust library's `Dtype` enum. Its writer sorts
  // tensors by this, descending, then by name: matching it gives equal bytes.
  int rank;
};

constexpr DTypeInfo kDTypes[] = {
    {kBool, "BOOL", 0},  {kUInt8, "U8", 4},     {kFloat16, "F16", 11}, {kBFloat16, "BF16", 12},
    {kInt32, "I32", 13}, {kFloat32, "F32", 15}, {kFloat64, "F64", 17}, {kInt64, "I64", 18},
};

const DTypeInfo& info_of(DType dtype) {
  for (const auto& info : kDTypes)
    if (info.dtype == dtype) return info;
  fail("safetensors: dtype ", dtype, " has no safetensors equivalent");
}

const DTypeInfo* info_named(const std::string& name) {
  for (const auto& info : kDTypes)
    if (name == info.name) return &info;
  return nullptr;
}

std::string supported_names() {
  std::string s;
  for (const auto& info : kDTypes) s += (s.empty() ? "" : ", ") + std::string(info.name);
  return s;
}

// ------------------------------------------------------------------ writing

struct PlannedTensor {
  std::string name;
  Tensor data;  // contiguous, on the CPU
  const DTypeInfo* info;
  uint64_t begin = 0, end = 0;
};

// Everything the file will hold, checked before a byte is written.
struct FilePlan {
  std::string header;  // the padded JSON
  std::vector<PlannedTensor> tensors;  // in file order
};

FilePlan plan_file(const StateDict& tensors, const Metadata& metadata, const std::string& where) {
  FilePlan plan;
  std::set<std::string> seen;
  NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    ANVIL_CHECK(!name.empty(), where, ": a tensor has an empty name");
    ANVIL_CHECK(name != kMetadataKey, where, ": '", kMetadataKey, "' is reserved for metadata, not a tensor name");
    ANVIL_CHECK(seen.insert(name).second, where, ": tensor name '", name, "' appears twice");
    ANVIL_CHECK(t.defined(), where, ": tensor '", name, "' is undefined");
    plan.tensors.push_back({name, t.detach().cpu().contiguous(), &info_of(t.dtype())});
  }
  std::stable_sort(plan.tensors.begin(), plan.tensors.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    if (a.info->rank != b.info->rank) return a.info->rank > b.info->rank;
    return a.name < b.name;  // bytewise, as Rust compares Strings
  });

  // Insertion-ordered, so the header lists metadata first, then the tensors
  // in data order, as the Python library does.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[kMetadataKey] = std::move(meta);
  }
  uint64_t offset = 0;
  for (auto& p : plan.tensors) {
    p.begin = offset;
    p.end = offset + p.data.nbytes();
    offset = p.end;
    header[p.name] = {{"dtype", p.info->name}, {"shape", p.data.shape()}, {"data_offsets", {p.begin, p.end}}};
  }
  try {
    plan.header = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": a tensor name or metadata string is not valid UTF-8 (", e.what(), ")");
  }
  // Padding to a multiple of 8 keeps the data section 8-byte aligned.
  plan.header.append((8 - plan.header.size() % 8) % 8, ' ');
  return plan;
}

void write_planned(std::ostream& out, const FilePlan& plan) {
  const uint64_t n = plan.header.size();
  char prefix[8];
  std::memcpy(prefix, &n, 8);
  out.write(prefix, 8);
  out.write(plan.header.data(), static_cast<std::streamsize>(plan.header.size()));
  for (const auto& p : plan.tensors)
    out.write(static_cast<const char*>(p.data.data_ptr()), static_cast<std::streamsize>(p.data.nbytes()));
}

// ------------------------------------------------------------------ reading

struct HeaderEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

struct ParsedHeader {
  std::vector<HeaderEntry> entries;  // in data order
  Metadata metadata;
};

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& where, const std::string& name) {
  uint64_t r = 0;
  ANVIL_CHECK(!__builtin_mul_overflow(a, b, &r), where, ": tensor '", name, "' has a shape too large to address");
  return r;
}

std::string offsets_str(const HeaderEntry& e) { return detail::concat("[", e.begin, ", ", e.end, "]"); }

HeaderEntry parse_entry(const std::string& name, const nlohmann::json& value, uint64_t data_size,
                        const std::string& where) {
  const std::string what = where + ": tensor '" + name + "'";
  ANVIL_CHECK(value.is_object(), what, ": expected an object {dtype, shape, data_offsets}, got ", value.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    ANVIL_CHECK(value.contains(key), what, ": missing \"", key, "\"");

  const auto& dtype = value["dtype"];
  ANVIL_CHECK(dtype.is_string(), what, ": \"dtype\" must be a string, got ", dtype.dump());
  const DTypeInfo* info = info_named(dtype.get<std::string>());
  ANVIL_CHECK(info != nullptr, what, ": unsupported dtype '", dtype.get<std::string>(), "' (anvil reads ",
              supported_names(), ")");

  HeaderEntry e{name, info->dtype, {}, 0, 0};
  const auto& shape = value["shape"];
  ANVIL_CHECK(shape.is_array(), what, ": \"shape\" must be an array, got ", shape.dump());
  uint64_t numel = 1;
  for (const auto& d : shape) {
    ANVIL_CHECK(d.is_number_unsigned() && d.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()), what,
                ": \"shape\" must hold non-negative integers, got ", shape.dump());
    e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    numel = checked_mul(numel, d.get<uint64_t>(), where, name);
  }
  const uint64_t nbytes = checked_mul(numel, itemsize(info->dtype), where, name);

  const auto& offsets = value["data_offsets"];
  ANVIL_CHECK(
      offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
      what, ": \"data_offsets\" must be two non-negative integers [begin, end], got ", offsets.dump());
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  ANVIL_CHECK(e.begin <= e.end, what, ": data_offsets ", offsets_str(e), " end before they begin");
  ANVIL_CHECK(e.end <= data_size, what, ": data_offsets ", offsets_str(e), " reach past the end of the data (",
              data_size, " bytes; is the file truncated?)");
  ANVIL_CHECK(e.end - e.begin == nbytes, what, ": shape ", e.shape, " of ", info->name, " needs ", nbytes,
              " bytes but data_offsets ", offsets_str(e), " span ", e.end - e.begin);
  return e;
}

ParsedHeader parse_header(std::string_view text, uint64_t data_size, const std::string& where) {
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": the header is not valid JSON (", e.what(), ")");
  }
  ANVIL_CHECK(header.is_object(), where, ": the header must be a JSON object, got ", header.type_name());

  ParsedHeader out;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      ANVIL_CHECK(value.is_object(), where, ": \"", kMetadataKey, "\" must be an object of strings, got ",
                  value.type_name());
      for (const auto& [key, v] : value.items()) {
        ANVIL_CHECK(v.is_string(), where, ": metadata '", key, "' must be a string, got ", v.dump());
        out.metadata[key] = v.get<std::string>();
      }
      continue;
    }
    out.entries.push_back(parse_entry(name, value, data_size, where));
  }

  // The format requires the tensors to tile the data section exactly: no
  // overlap (two tensors aliasing bytes) and no holes (hidden payloads).
  std::sort(out.entries.begin(), out.entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  uint64_t covered = 0;
  const HeaderEntry* previous = nullptr;
  for (const auto& e : out.entries) {
    ANVIL_CHECK(e.begin >= covered, where, ": tensors '", previous ? previous->name : "", "' ",
                previous ? offsets_str(*previous) : "", " and '", e.name, "' ", offsets_str(e), " overlap");
    ANVIL_CHECK(e.begin == covered, where, ": data bytes [", covered, ", ", e.begin,
                ") belong to no tensor (the format allows no holes)");
    covered = e.end;
    previous = &e;
  }
  ANVIL_CHECK(covered == data_size, where, ": the data section has ", data_size, " bytes but the tensors cover only ",
              covered, " (trailing bytes)");
  return out;
}

// Reinterpreting bytes other than 0 and 1 as C++ bool is undefined behavior.
void check_bools(const Tensor& t, const std::string& name, const std::string& where) {
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i)
    ANVIL_CHECK(p[i] <= 1, where, ": BOOL tensor '", name, "' holds byte ", int(p[i]), " at element ", i,
                " (expected 0 or 1)");
}

// Reads the raw parts of a file: the 8-byte length, the header and where the
// data starts. `read(offset, dst, n)` fills dst from the file or buffer.
template <typename Read> SafetensorsContents read_contents(uint64_t total_size, Read&& read, const std::string& where) {
  ANVIL_CHECK(total_size >= 8, where, ": truncated: ", total_size,
              " bytes is shorter than the 8-byte header length that starts a safetensors file");
  uint64_t header_size = 0;
  read(0, reinterpret_cast<char*>(&header_size), 8);
  ANVIL_CHECK(header_size <= total_size - 8, where, ": the header length says ", header_size, " bytes but only ",
              total_size - 8, " follow (truncated, or not a safetensors file)");
  std::string header(header_size, '\0');
  read(8, header.data(), header_size);
  const uint64_t data_start = 8 + header_size;
  ParsedHeader parsed = parse_header(header, total_size - data_start, where);

  SafetensorsContents out;
  out.metadata = std::move(parsed.metadata);
  for (const auto& e : parsed.entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) read(data_start + e.begin, static_cast<char*>(t.data_ptr()), e.end - e.begin);
    if (e.dtype == kBool) check_bools(t, e.name, where);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  std::sort(out.tensors.begin(), out.tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) { return info_of(dtype).name; }

void save_safetensors(const std::filesystem::path& path, const StateDict& tensors, const Metadata& metadata) {
  const FilePlan plan = plan_file(tensors, metadata, "save_safetensors('" + path.string() + "')");
  atomic_write_file(path, [&](std::ostream& out) { write_planned(out, plan); });
}

std::string serialize_safetensors(const StateDict& tensors, const Metadata& metadata) {
  const FilePlan plan = plan_file(tensors, metadata, "serialize_safetensors");
  std::ostringstream out;
  write_planned(out, plan);
  return std::move(out).str();
}

SafetensorsContents load_safetensors_with_metadata(const std::filesystem::path& path) {
  const std::string where = "load_safetensors('" + path.string() + "')";
  std::error_code ec;
  ANVIL_CHECK(std::filesystem::exists(path, ec), where, ": no such file");
  ANVIL_CHECK(std::filesystem::is_regular_file(path, ec), where, ": not a regular file");
  const uint64_t size = std::filesystem::file_size(path, ec);
  ANVIL_CHECK(!ec, where, ": cannot read the file size: ", ec.message());
  std::ifstream in(path, std::ios::binary);
  ANVIL_CHECK(in.is_open(), where, ": cannot open the file: ", std::strerror(errno));
  auto read = [&](uint64_t offset, char* dst, uint64_t n) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(dst, static_cast<std::streamsize>(n));
    ANVIL_CHECK(in.good() && uint64_t(in.gcount()) == n, where, ": reading ", n, " bytes at offset ", offset,
                " failed (the file changed while reading?)");
  };
  return read_contents(size, read, where);
}

StateDict load_safetensors(const std::filesystem::path& path) { return load_safetensors_with_metadata(path).tensors; }

SafetensorsContents deserialize_safetensors(std::string_view bytes) {
  auto read = [&](uint64_t offset, char* dst, uint64_t n) { std::memcpy(dst, bytes.data() + offset, n); };
  return read_contents(bytes.size(), read, "deserialize_safetensors");
}

}  // namespace anvil::nn::serialize
