#include "nn/serialize/atomic_file.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "serialize_test_util.h"

namespace anvil::nn::serialize::test {
namespace {

class AtomicFile : public ScratchDir {};

TEST_F(AtomicFile, WritesAndReplaces) {
  atomic_write_file(path("f"), std::string_view("first version"));
  EXPECT_EQ(read_bytes(path("f")), "first version");
  atomic_write_file(path("f"), [](std::ostream& out) { out << "second"; });
  EXPECT_EQ(read_bytes(path("f")), "second");
  EXPECT_EQ(listing(), (std::vector<std::string>{"f"}));
}

TEST_F(AtomicFile, TemporaryNameCarriesThePid) {
  EXPECT_EQ(temporary_path_for(path("ckpt")).string(), path("ckpt").string() + ".tmp." + std::to_string(::getpid()));
}

TEST_F(AtomicFile, AWriterThatThrowsLeavesTheOldFileAndNoTemporary) {
  atomic_write_file(path("f"), std::string_view("intact"));
  bool temporary_existed = false;
  EXPECT_THROW(atomic_write_file(path("f"),
                                 [&](std::ostream& out) {
                                   out << std::string(1 << 16, 'x');  // past the stream's buffer
                                   out.flush();
                                   temporary_existed = fs::exists(temporary_path_for(path("f")));
                                   throw std::runtime_error("simulated crash");
                                 }),
               std::runtime_error);
  EXPECT_TRUE(temporary_existed);  // the partial bytes never went to `f` itself
  EXPECT_EQ(read_bytes(path("f")), "intact");
  EXPECT_EQ(listing(), (std::vector<std::string>{"f"}));
}

TEST_F(AtomicFile, AThrowingFirstWriteCreatesNothing) {
  EXPECT_THROW(atomic_write_file(path("new"), [](std::ostream&) { throw Error("boom"); }), Error);
  EXPECT_TRUE(listing().empty());
}

TEST_F(AtomicFile, MissingFolderIsAClearError) {
  const auto p = path("no/such/dir/f");
  const std::string msg = error_of([&] { atomic_write_file(p, std::string_view("x")); });
  EXPECT_NE(msg.find("cannot create"), std::string::npos) << msg;
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::nn::serialize::test
