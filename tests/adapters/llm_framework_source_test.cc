// The framework-source tools stay inside the checkout: ".." and symlinks that lead out are
// refused, reads report their location, searches do not follow links.
#include "adapters/tuner/llm/framework_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace attune::llm {
namespace {

namespace fs = std::filesystem;

class LlmFrameworkSource : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("attune-llm-source-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "megatron/training");
    fs::create_directories(base_ / "outside");
    std::ofstream(base_ / "megatron/training/arguments.py")
        << "def add_args(parser):\n"
        << "    parser.add_argument('--overlap-grad-reduce', action='store_true')\n"
        << "    assert args.use_distributed_optimizer\n";
    std::ofstream(base_ / "outside/secret.txt") << "overlap-grad-reduce secret\n";
    fs::create_symlink(base_ / "outside/secret.txt", base_ / "megatron/link.txt");
    fs::create_directory_symlink(base_ / "outside", base_ / "megatron/linkdir");
    auto source = FrameworkSource::open((base_ / "megatron").string());
    ASSERT_TRUE(source.ok()) << source.error();
    source_.emplace(std::move(source).value());
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path base_;
  std::optional<FrameworkSource> source_;
};

TEST_F(LlmFrameworkSource, ConfinesPathsToTheCheckout) {
  EXPECT_TRUE(source_->confine("training/arguments.py"));
  EXPECT_TRUE(source_->confine("training/../training/arguments.py"));
  EXPECT_TRUE(source_->confine((base_ / "megatron/training/arguments.py").string()));
  EXPECT_TRUE(source_->confine("."));
  EXPECT_TRUE(source_->confine("training/not-yet-there.py"));
  EXPECT_FALSE(source_->confine("../outside/secret.txt"));
  EXPECT_FALSE(source_->confine("training/../../outside/secret.txt"));
  EXPECT_FALSE(source_->confine("/etc/passwd"));
  EXPECT_FALSE(source_->confine("link.txt"));            // a symlink that leads out
  EXPECT_FALSE(source_->confine("linkdir/secret.txt"));  // through a linked folder
  // A sibling whose name starts like the root's is not inside it.
  fs::create_directories(base_ / "megatron-evil");
  EXPECT_FALSE(source_->confine((base_ / "megatron-evil").string()));
  EXPECT_FALSE(FrameworkSource::open((base_ / "missing").string()).ok());
}

TEST_F(LlmFrameworkSource, ReadsLinesWithTheirLocation) {
  auto path = source_->confine("training/arguments.py");
  ASSERT_TRUE(path);
  auto excerpt = source_->read(*path, 2, 99);
  ASSERT_TRUE(excerpt.ok()) << excerpt.error();
  EXPECT_EQ(excerpt->location, "training/arguments.py:2-3");
  EXPECT_NE(excerpt->text.find("2|     parser.add_argument('--overlap-grad-reduce'"),
            std::string::npos);
  EXPECT_EQ(excerpt->text.find("def add_args"), std::string::npos);
  EXPECT_FALSE(source_->read(*path, 10, 12).ok());
  EXPECT_FALSE(source_->read(*path, 0, 1).ok());
  EXPECT_FALSE(source_->read(*path, 3, 2).ok());
}

TEST_F(LlmFrameworkSource, SearchesWithoutFollowingLinks) {
  auto hits = source_->search("overlap-grad-reduce", source_->root());
  ASSERT_TRUE(hits.ok()) << hits.error();
  EXPECT_NE(hits->find("training/arguments.py:2: "), std::string::npos) << *hits;
  EXPECT_EQ(hits->find("secret"), std::string::npos) << *hits;
  auto none = source_->search("no-such-flag", source_->root());
  ASSERT_TRUE(none.ok());
  EXPECT_NE(none->find("no match"), std::string::npos);
  EXPECT_FALSE(source_->search("", source_->root()).ok());
}

}  // namespace
}  // namespace attune::llm
