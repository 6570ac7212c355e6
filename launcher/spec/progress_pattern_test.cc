#include "launcher/spec/progress_pattern.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace podrun {
namespace {

TEST(ProgressPatternTest, TheDefaultCatchesTheCommonTrainingLoopLines) {
  ProgressPattern p(kDefaultProgressPattern);
  EXPECT_EQ(12, p.Step("step 12"));
  EXPECT_EQ(12, p.Step("Step: 12, loss=0.31"));
  EXPECT_EQ(12, p.Step("epoch 3 step=12 lr=1e-4"));
  EXPECT_EQ(12, p.Step("Step 12/1000"));
  EXPECT_EQ(12, p.Step("global_step 12"));
  EXPECT_EQ(12, p.Step("train_step: 12"));
  EXPECT_EQ(7, p.Step("Iteration 7 took 0.1 s"));
  EXPECT_EQ(7, p.Step("[iter #7]"));
  EXPECT_EQ(std::nullopt, p.Step("taking 5 steps back"));
  EXPECT_EQ(std::nullopt, p.Step("loss 0.3"));
  EXPECT_EQ(std::nullopt, p.Step("stepping 4"));
}

TEST(ProgressPatternTest, AUserPatternTakesItsOneGroupAndNoneIsOff) {
  ProgressPattern p(R"(it=(\d+) )");
  EXPECT_EQ(41, p.Step("it=41 loss=2"));
  EXPECT_EQ(std::nullopt, p.Step("step 41"));
  ProgressPattern off("");
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(std::nullopt, off.Step("step 41"));
}

TEST(ProgressPatternTest, AGroupThatIsNotANumberOrTooLargeIsNoStep) {
  ProgressPattern p(R"(at (\S+))");
  EXPECT_EQ(std::nullopt, p.Step("at abc"));
  EXPECT_EQ(std::nullopt, p.Step("at 99999999999999999999999"));
  EXPECT_EQ(5, p.Step("at 5"));
}

TEST(ProgressPatternTest, ABadPatternOrAWrongGroupCountIsRefusedWithTheReason) {
  try {
    ProgressPattern p("step (\\d+");
    FAIL() << "compiled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad regex"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ProgressPattern("step \\d+"), std::invalid_argument);
  EXPECT_THROW(ProgressPattern("(step) (\\d+)"), std::invalid_argument);
}

}  // namespace
}  // namespace podrun
