#include "core/base/dtype.h"

#include "core/base/error.h"

namespace anvil {

size_t itemsize(DType t) {
  switch (t) {
    case DType::Float64:
    case DType::Int64:
      return 8;
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::UInt8:
    case DType::Bool:
      return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::UInt8:
      return "uint8";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool})
    if (name == dtype_name(t)) return t;
  if (name == "F32") return kFloat32;  // safetensors spellings
  if (name == "F64") return kFloat64;
  if (name == "F16") return kFloat16;
  if (name == "BF16") return kBFloat16;
  if (name == "I32") return kInt32;
  if (name == "I64") return kInt64;
  if (name == "U8") return kUInt8;
  if (name == "BOOL") return kBool;
  fail("dtype_from_name: unknown dtype '", name, "'");
}

static int category(DType t) { return t == kBool ? 0 : is_integral(t) ? 1 : 2; }

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    // float16 with bfloat16 widens to float32, as in PyTorch.
    if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  return itemsize(a) >= itemsize(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

}  // namespace anvil
