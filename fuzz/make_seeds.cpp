// build-fuzz/bin/fuzz_seeds DIR: writes a seed corpus of valid inputs for
// each harness into DIR/<harness>/, made by anvil's own writers, so the
// fuzzers start from files that pass every check and mutate from there.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/random.h"
#include "distributed/store/tcp_store_protocol.h"
#include "nn/optim/adam.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"

using namespace anvil;
namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void safetensors_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  manual_seed(1);
  nn::StateDict small = {{"weight", randn({2, 3})}, {"bias", zeros({3})}};
  write_bytes(dir / "small.safetensors", nn::serialize::serialize_safetensors(small, {{"format", "pt"}}));
  nn::StateDict dtypes = {{"f64", randn({2}).to(kFloat64)},
                          {"f16", randn({3}).to(kFloat16)},
                          {"bf16", randn({2, 2}).to(kBFloat16)},
                          {"i64", arange(int64_t{5})},
                          {"i32", arange(int64_t{4}).to(kInt32)},
                          {"u8", arange(int64_t{7}).to(kUInt8)},
                          {"b", arange(int64_t{3}).to(kBool)},
                          {"scalar", full({}, 2.5)},
                          {"empty", zeros({0, 4})}};
  write_bytes(dir / "dtypes.safetensors", nn::serialize::serialize_safetensors(dtypes));
  write_bytes(dir / "none.safetensors", nn::serialize::serialize_safetensors({}));
}

void checkpoint_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  manual_seed(2);
  Tensor w = randn({3, 2}).requires_grad_();
  w.set_grad(randn({3, 2}));
  nn::optim::AdamW opt({w});
  opt.step();
  nn::serialize::Checkpoint c;
  c.model = {{"layer.weight", w.detach()}};
  c.optimizer = opt.state_dict();
  c.scheduler = nn::optim::SchedulerState{3, {1e-3}};
  c.rng = generator_state();
  c.step = 3;
  c.epoch = 1;
  c.extra = {{"best", full({}, 0.25)}};
  c.metadata = {{"run", "seed"}};
  nn::serialize::save_checkpoint(dir / "full.safetensors", c);
  nn::serialize::Checkpoint bare;
  bare.model = {{"w", zeros({2})}};
  nn::serialize::save_checkpoint(dir / "model_only.safetensors", bare);
}

// IDX: magic (0, 0, type, rank), big-endian int32 dims, then the data.
std::string idx_bytes(uint8_t type, const std::vector<int32_t>& dims, size_t element_bytes) {
  std::string b = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  size_t n = 1;
  for (int32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((d >> s) & 0xFF));
    n *= static_cast<size_t>(d);
  }
  for (size_t i = 0; i < n * element_bytes; ++i) b.push_back(static_cast<char>(i * 37 % 251));
  return b;
}

void idx_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  write_bytes(dir / "images.idx", idx_bytes(0x08, {3, 4, 5}, 1));
  write_bytes(dir / "labels.idx", idx_bytes(0x08, {6}, 1));
  write_bytes(dir / "floats.idx", idx_bytes(0x0D, {2, 3}, 4));
  write_bytes(dir / "shorts.idx", idx_bytes(0x0B, {4}, 2));
  // The same images gzip-compressed, as the Debian package ships them.
  const std::string raw = idx_bytes(0x08, {2, 4, 4}, 1);
  const std::string gz_path = (dir / "images.idx.gz").string();
  gzFile gz = gzopen(gz_path.c_str(), "wb");
  gzwrite(gz, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(gz);
}

// The tokenizer harness: a mode byte, then a tokenizer.json (0), a
// vocab.txt (1) or text (2).
void tokenizer_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  write_bytes(dir / "json", std::string(1, '\0') + R"({"model": {"type": "WordPiece", "unk_token": "[UNK]",
    "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "hello": 5, "world": 6, "##s": 7}},
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
    "strip_accents": null, "lowercase": true},
  "added_tokens": [{"id": 4, "content": "[MASK]"}], "truncation": {"max_length": 16}})");
  write_bytes(dir / "vocab", std::string(1, '\1') + "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n");
  write_bytes(dir / "text", std::string(1, '\2') +
                                "Hello, World! Caf\xc3\xa9 cr\xc3\xa8me [MASK] \xe4\xb8\xad\xe6\x96\x87 "
                                "\xf0\x9f\x98\x80 ...!!! hellos\tworld\x01");
}

// Strings joined by NUL bytes after a selector byte (fuzz_launcher's format).
std::string nul_joined(char selector, const std::vector<std::string>& parts) {
  std::string out(1, selector);
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(1, '\0') : std::string()) + parts[i];
  return out;
}

void launcher_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  write_bytes(dir / "single_node", nul_joined(0, {"--nproc-per-node", "2", "--", "train", "--epochs", "1"}));
  write_bytes(
      dir / "torchrun_spelling",
      nul_joined(0, {"--nproc_per_node=4", "--nnodes=2", "--node_rank=1", "--master_addr=10.0.0.1",
                     "--master_port=29500", "--max-restarts", "3", "--kill-grace", "0.5", "--no-prefix", "prog"}));
  write_bytes(dir / "help", nul_joined(0, {"--help"}));
  write_bytes(dir / "parameter_server", nul_joined(0, {"--nproc-per-node", "4", "--ps", "1", "--max-restarts", "2",
                                                       "worker", "--mode", "async"}));
  write_bytes(dir / "parameter_server_multinode",
              nul_joined(0, {"--nproc_per_node=2", "--nnodes=2", "--node_rank=1", "--master_addr=10.0.0.1",
                             "--master_port=29500", "--ps=3", "prog"}));
  write_bytes(dir / "env", nul_joined(1, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2",
                                          "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500"}));
  write_bytes(dir / "env_slurm",
              nul_joined(1, {"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODEID=2", "SLURM_NNODES=3",
                             "SLURM_TASKS_PER_NODE=2(x2),4", "SLURM_STEP_NODELIST=gpu[08-09,11]",
                             "SLURM_JOB_NODELIST=rack[1-2]-n[01-03],login1", "SLURM_JOB_ID=4242123"}));
  write_bytes(dir / "env_openmpi",
              nul_joined(1, {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=0",
                             "OMPI_COMM_WORLD_LOCAL_SIZE=2", "MASTER_ADDR=head", "MASTER_PORT=29600"}));
}

// One wire frame (distributed/store/tcp_store_protocol.h): u32 length, then payload.
std::string frame(const distributed::Bytes& payload) {
  distributed::Bytes b;
  distributed::wire::put_u32(b, static_cast<uint32_t>(payload.size()));
  b.insert(b.end(), payload.begin(), payload.end());
  return {b.begin(), b.end()};
}

void store_server_seeds(const fs::path& dir) {
  namespace wire = distributed::wire;
  fs::create_directories(dir);
  distributed::Bytes set{wire::kSet}, get{wire::kGet}, add{wire::kAdd}, check{wire::kCheck}, wait{wire::kWait};
  wire::put_string(set, "key");
  wire::put_string(set, "value");
  wire::put_string(get, "key");
  wire::put_string(add, "counter");
  wire::put_i64(add, 5);
  for (distributed::Bytes* keys : {&check, &wait}) {
    wire::put_u32(*keys, 2);
    wire::put_string(*keys, "key");
    wire::put_string(*keys, "counter");
  }
  // The first byte odd: the harness sends a valid HELLO before the rest.
  write_bytes(dir / "every_command", "\1" + frame(set) + frame(get) + frame(add) + frame(check) + frame(wait));
  write_bytes(dir / "get_missing_key", "\1" + frame(get));
  distributed::Bytes hello{wire::kHello};
  wire::put_string(hello, "");
  write_bytes(dir / "own_hello", std::string(1, '\0') + frame(hello) + frame(add));
}

void store_client_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  const std::string accepted = frame({1});
  write_bytes(dir / "value", accepted + frame({'v', 'a', 'l'}));
  distributed::Bytes count;
  distributed::wire::put_i64(count, 7);
  write_bytes(dir / "count", accepted + frame(count));
  write_bytes(dir / "refused", frame({0}));
  write_bytes(dir / "over_limit", accepted + frame({0}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  safetensors_seeds(root / "safetensors");
  checkpoint_seeds(root / "checkpoint");
  idx_seeds(root / "idx");
  tokenizer_seeds(root / "tokenizer");
  launcher_seeds(root / "launcher");
  store_server_seeds(root / "store_server");
  store_client_seeds(root / "store_client");
  return 0;
}
