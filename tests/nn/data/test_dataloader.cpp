// DataLoader: order, seeding, workers, drop_last, no lost or duplicated
// sample; samplers; transforms; text dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/ops.h"
#include "nn/data/data.h"

namespace anvil::nn::data {
namespace {

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  // Example i has data [i, 2i] and target i, so batches can be traced back.
  Tensor idx = arange(n, kFloat32);
  return std::make_shared<TensorDataset>(stack({idx, idx * 2.0}, 1), arange(n));
}

std::vector<int64_t> epoch_targets(DataLoader& loader, std::vector<int64_t>* batch_sizes = nullptr) {
  std::vector<int64_t> seen;
  for (const Example& b : loader) {
    auto t = b.target.to_vector<int64_t>();
    auto d = b.data.to_vector<float>();
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(d[2 * i], static_cast<float>(t[i]));
      EXPECT_EQ(d[2 * i + 1], 2.0f * static_cast<float>(t[i]));
    }
    if (batch_sizes) batch_sizes->push_back(static_cast<int64_t>(t.size()));
    seen.insert(seen.end(), t.begin(), t.end());
  }
  return seen;
}

TEST(DataLoader, SequentialOrderAndLastPartialBatch) {
  DataLoader loader(numbered(10), {.batch_size = 4});
  std::vector<int64_t> sizes;
  auto seen = epoch_targets(loader, &sizes);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_EQ(loader.num_batches(), 3);
}

TEST(DataLoader, DropLastDropsTheTail) {
  DataLoader loader(numbered(10), {.batch_size = 4, .drop_last = true});
  std::vector<int64_t> sizes;
  epoch_targets(loader, &sizes);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(loader.num_batches(), 2);
}

TEST(DataLoader, ShuffleIsAPermutationSeededAndNewEachEpoch) {
  DataLoader a(numbered(100), {.batch_size = 7, .shuffle = true, .seed = 5});
  DataLoader b(numbered(100), {.batch_size = 7, .shuffle = true, .seed = 5});
  auto e0 = epoch_targets(a), e1 = epoch_targets(a);
  EXPECT_EQ(e0, epoch_targets(b));  // same seed, same first epoch
  EXPECT_NE(e0, e1);  // a new order each epoch
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);  // nothing lost or duplicated
  std::vector<int64_t> identity(100);
  for (int64_t i = 0; i < 100; ++i) identity[i] = i;
  EXPECT_NE(e0, identity);
}

TEST(DataLoader, WorkersGiveTheSameBatchesInTheSameOrder) {
  DataLoader serial(numbered(1000), {.batch_size = 32, .shuffle = true, .seed = 9});
  auto expected = epoch_targets(serial);
  for (int workers : {1, 2, 4}) {
    DataLoader parallel(numbered(1000),
                        {.batch_size = 32, .shuffle = true, .seed = 9, .num_workers = workers, .prefetch_factor = 3});
    EXPECT_EQ(epoch_targets(parallel), expected) << workers << " workers";
  }
}

TEST(DataLoader, StoppingAnEpochEarlyIsSafe) {
  DataLoader loader(numbered(500), {.batch_size = 10, .num_workers = 3});
  int taken = 0;
  for (const Example& b : loader) {
    (void)b;
    if (++taken == 3) break;
  }
  EXPECT_EQ(taken, 3);
  EXPECT_EQ(epoch_targets(loader).size(), 500u);  // the next epoch is complete
}

TEST(DataLoader, WorkerErrorsReachTheConsumer) {
  struct Broken : Dataset {
    int64_t size() const override { return 10; }
    Example get(int64_t i) const override {
      ANVIL_CHECK(i != 6, "Broken: sample 6 is corrupt");
      auto v = static_cast<float>(i);
      return {from_vector(std::vector<float>{v, 2 * v}), scalar_tensor(i)};
    }
  };
  DataLoader loader(std::make_shared<Broken>(), {.batch_size = 2, .num_workers = 2});
  EXPECT_THROW(epoch_targets(loader), Error);
  EXPECT_THROW(DataLoader(numbered(3), {.batch_size = 0}), Error);
}

TEST(DistributedSampler, ShardsAreDisjointCoverEverythingAndFollowTheEpoch) {
  const int64_t n = 103;
  for (int64_t world : {2, 3, 4}) {
    std::multiset<int64_t> all;
    for (int64_t r = 0; r < world; ++r) {
      DistributedSampler s(n, {.rank = r, .world_size = world, .shuffle = true, .seed = 1});
      s.set_epoch(3);
      auto mine = s.indices();
      EXPECT_EQ(static_cast<int64_t>(mine.size()), (n + world - 1) / world);
      all.insert(mine.begin(), mine.end());
    }
    for (int64_t i = 0; i < n; ++i) EXPECT_GE(all.count(i), 1u) << i;
    EXPECT_EQ(static_cast<int64_t>(all.size()), ((n + world - 1) / world) * world);  // padding only
  }
  DistributedSampler s(n, {.rank = 0, .world_size = 2, .seed = 1});
  EXPECT_NE(s.indices(0), s.indices(1));
  DistributedSampler d(n, {.rank = 1, .world_size = 2, .shuffle = false, .drop_last = true});
  auto v = d.indices(0);
  EXPECT_EQ(v.size(), 51u);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 3);
  EXPECT_THROW(DistributedSampler(n, {.rank = 2, .world_size = 2}), Error);
}

TEST(Transforms, NormalizeCropFlip) {
  Tensor img = arange(2 * 1 * 3 * 3, kFloat32).reshape({2, 1, 3, 3});
  Example e{img, arange(2)};
  auto norm = transforms::normalize({1.0}, {2.0})(e, 0);
  EXPECT_EQ(norm.data.to_vector<float>()[4], (4.0f - 1.0f) / 2.0f);

  auto flipped_all = transforms::random_horizontal_flip(1.0)(e, 42).data.to_vector<float>();
  EXPECT_EQ(flipped_all[0], 2.0f);  // row [0 1 2] becomes [2 1 0]
  EXPECT_EQ(flipped_all[2], 0.0f);
  auto none = transforms::random_horizontal_flip(0.0)(e, 42).data.to_vector<float>();
  EXPECT_EQ(none, img.to_vector<float>());

  // Cropping 3x3 out of a 1-padded 5x5: every output is either 0 (padding) or
  // a pixel of the same image, and the same seed gives the same crop.
  auto crop = transforms::random_crop(3, 1);
  auto c1 = crop(e, 7).data.to_vector<float>(), c2 = crop(e, 7).data.to_vector<float>();
  EXPECT_EQ(c1, c2);
  for (size_t i = 0; i < c1.size(); ++i) {
    float v = c1[i];
    bool from_own_image = i < 9 ? (v >= 0 && v <= 8) : (v == 0 || (v >= 9 && v <= 17));
    EXPECT_TRUE(from_own_image) << i << ": " << v;
  }
  EXPECT_THROW(transforms::normalize({0.5, 0.5}, {1.0})(e, 0), Error);
}

TEST(CharDataset, ExamplesAreShiftedWindows) {
  CharDataset ds("hello world", 4);
  EXPECT_EQ(ds.size(), 7);
  EXPECT_EQ(ds.vocab_size(), 8);  // " dehlorw"
  Example e = ds.get(2);
  EXPECT_EQ(ds.decode(e.data.to_vector<int64_t>()), "llo ");
  EXPECT_EQ(ds.decode(e.target.to_vector<int64_t>()), "lo w");
  EXPECT_EQ(ds.decode(ds.encode("world")), "world");
  EXPECT_THROW(ds.encode("xyz"), Error);
  DataLoader loader(std::make_shared<CharDataset>("abcdefghij", 3), {.batch_size = 2});
  EXPECT_EQ((*loader.begin()).data.shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace anvil::nn::data
