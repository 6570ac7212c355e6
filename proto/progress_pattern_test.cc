#include "proto/progress_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

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

// Lines quoted from the output of common JAX trainers.
TEST(ProgressPatternTest, TheDefaultReadsTheStepLinesOfJaxTrainers) {
  ProgressPattern p(kDefaultProgressPattern);
  // MaxText (AI-Hypercomputer/maxtext, its metric logger), bare and through absl logging.
  EXPECT_EQ(9, p.Step("completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, "
                      "Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374"));
  EXPECT_EQ(15107, p.Step("completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191"));
  EXPECT_EQ(2, p.Step("I0811 21:55:06.119312 138304841739136 metric_logger.py:226] completed step: "
                      "2, seconds: 10.228, TFLOP/s/device: 350.869, Tokens/s/device: 19222.175, "
                      "total_weights: 1572864, loss: 12.980, lm_loss: 12.980, perplexity: "
                      "433463.719"));
  // The flax examples (imagenet), through CLU's LoggingWriter: the step in brackets.
  EXPECT_EQ(400, p.Step("I1002 21:38:13.425730 139917864867392 logging_writer.py:35] [400] "
                        "steps_per_second=1.583725, train_accuracy=0.3724340796470642, "
                        "train_learning_rate=0.35846155881881714, train_loss=3.219879150390625"));
  // levanter's bar: tqdm(desc="train") with set_postfix(loss=...), as tqdm draws it (each redraw
  // ends with a carriage return; the reader takes the text before it).
  EXPECT_EQ(120, p.Step("train:  12%|\u2588\u258f        | 120/1000 [01:23<10:12,  1.44it/s, "
                        "loss=3.45]"));
  EXPECT_EQ(1000,
            p.Step("train: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| "
                   "1000/1000 [11:34<00:00,  1.44it/s, loss=2.1]"));
  // This project's JAX example.
  EXPECT_EQ(37, p.Step("step 37 loss 0.230212 (checkpoint saved)"));
  // Not steps: another bar (data loading, evaluation), a rate, a count of steps.
  EXPECT_EQ(std::nullopt,
            p.Step("eval:  50%|\u2588\u2588\u2588\u2588\u2588     | 5/10 [00:01<00:01]"));
  EXPECT_EQ(std::nullopt, p.Step("Loading checkpoint shards:  50%|\u2588\u2588\u2588     | 1/2"));
  EXPECT_EQ(std::nullopt, p.Step("steps_per_second=1.583725"));
  EXPECT_EQ(std::nullopt, p.Step("training for 1000 steps"));
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

// The prefilter never changes what matches: on lines made to sit at its edges (every case, the
// long s and the Kelvin sign that RE2 folds to s and k, bytes outside ASCII, no digit) and on
// many random lines over an alphabet of the patterns' own letters, Step and StepUnfiltered agree.
TEST(ProgressPatternTest, ThePrefilterNeverChangesWhatMatches) {
  const std::vector<std::string> patterns = {
      kDefaultProgressPattern, R"(it=(\d+) )",   R"((?i)loss (\d+))", R"((\d+))",
      R"((?i)k(\d+))",         R"((?i)ss(\d+))", R"(é(\d+))",         R"((?:ab|cd)x(\d+))"};
  std::vector<std::string> lines = {"step 12",
                                    "STEP 12",
                                    "sTeP: 12",
                                    "\xC5\xBFtep 12",
                                    "\xC5\xBFTEP 12",
                                    "iter 3",
                                    "ITERATION 3",
                                    "step twelve",
                                    "no digits at all",
                                    "it=41 x",
                                    "LOSS 7",
                                    "\xE2\x84\xAA"
                                    "5",
                                    "K5",
                                    "k5",
                                    "\xC3\xA9"
                                    "5",
                                    "\xC3\x89"
                                    "5",
                                    "abx7 cdx8",
                                    "\xC5\xBF\xC5\xBF"
                                    "3",
                                    "SS3",
                                    "global_step 9",
                                    "x step 1 \xFF\xFE"};
  std::mt19937 random(7);
  const std::vector<std::string> alphabet = {"s",
                                             "t",
                                             "e",
                                             "p",
                                             "i",
                                             "r",
                                             "S",
                                             "T",
                                             "E",
                                             "P",
                                             "I",
                                             "R",
                                             "k",
                                             "K",
                                             "a",
                                             "b",
                                             "c",
                                             "d",
                                             "x",
                                             "o",
                                             "l",
                                             " ",
                                             ":",
                                             "=",
                                             "#",
                                             "_",
                                             "0",
                                             "1",
                                             "9",
                                             "\xC5\xBF",
                                             "\xE2\x84\xAA",
                                             "\xC3\xA9",
                                             "\xC3\x89"};
  for (int i = 0; i < 20000; ++i) {
    std::string line;
    const int n = static_cast<int>(random() % 24);
    for (int j = 0; j < n; ++j) line += alphabet[random() % alphabet.size()];
    lines.push_back(line);
  }
  for (const std::string& pattern : patterns) {
    ProgressPattern p(pattern);
    int steps = 0;
    for (const std::string& line : lines) {
      ASSERT_EQ(p.StepUnfiltered(line), p.Step(line)) << pattern << " on '" << line << "'";
      steps += p.Step(line).has_value();
    }
    EXPECT_GT(steps, 0) << pattern;  // the comparison saw matches, not only misses
  }
  // The default's prefilter is there (lines without "step" or "iter" are not searched).
  EXPECT_FALSE(ProgressPattern(kDefaultProgressPattern).atoms().empty());
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

TEST(ProgressPatternTest, MayMatchLooksAtManyLinesAtOnceAndNeverMissesOne) {
  const ProgressPattern p(kDefaultProgressPattern);
  EXPECT_FALSE(p.MayMatch("loss 0.5\nlr 3e-4\n"));     // digits, no "step"/"iter"
  EXPECT_FALSE(p.MayMatch("step\nthe next step\n"));   // "step", no digit
  EXPECT_TRUE(p.MayMatch("loss 0.5\nSTEP 12\nlr\n"));  // one line may: the text may
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "tokens/s 123456 mfu 0.41\n";
  EXPECT_FALSE(p.MayMatch(many));
  EXPECT_TRUE(p.MayMatch(many + "Iteration 7\n"));
  EXPECT_FALSE(ProgressPattern("").MayMatch("step 1\n"));  // off
}

// The prefilter compares sixteen positions at a time and the rest one by one: an atom across two
// blocks, in any case, at either end, and text where the atoms' first letters are everywhere.
TEST(ProgressPatternTest, MayMatchFindsAnAtomWhereverItIsAndWhateverItsCase) {
  const ProgressPattern p(kDefaultProgressPattern);
  std::string base64;
  for (int i = 0; i < 70000; ++i) base64 += "sStTiIlL0+/9"[(i * 7 + i / 13) % 12];
  base64 += '\n';  // "s", "t", "i" and "l" everywhere, never "step" or "iter"
  ASSERT_EQ(base64.find_first_of("eEpPrR"), std::string::npos);
  EXPECT_FALSE(p.MayMatch(base64));
  for (size_t at :
       {size_t{0}, size_t{16382}, size_t{16383}, size_t{16384}, size_t{32760}, base64.size() - 1}) {
    for (const char* word : {"step 5", "StEp 5", "ITER 5"}) {
      std::string text = base64;
      text.insert(at, std::string("\n") + word + "\n");
      EXPECT_TRUE(p.MayMatch(text)) << word << " at " << at;
    }
  }
  EXPECT_TRUE(p.MayMatch("STEP 1"));  // shorter than a word of eight
  // Past the first sixteen bytes too: a byte outside ASCII anywhere leaves it to the regex.
  for (size_t at : {size_t{20}, size_t{40}, size_t{4095}}) {
    std::string text(at, 'x');
    EXPECT_TRUE(p.MayMatch(text + "\xc5\xbftep 5 " + std::string(at, 'y'))) << at;
  }
  // Not an ASCII "step", but Unicode folds a long s to s: the regex decides.
  EXPECT_TRUE(p.MayMatch("\xc5\xbftep 5"));
  EXPECT_FALSE(p.MayMatch("STE 1"));
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

// Long texts (many blocks of sixteen, so the vector loops run) over the patterns' own letters,
// for the default (five atoms: tested by nibble classes) and a pattern of ten atoms (compared
// atom by atom): whenever one of the text's lines is a step, MayMatch says maybe.
TEST(ProgressPatternTest, MayMatchOfLongTextsNeverMissesALineThatMatches) {
  const std::vector<std::string> patterns = {
      kDefaultProgressPattern,
      R"((?i)(?:alpha|bravo|charlie|delta|echo|foxtrot|golf|hotel|india|juliet) (\d+))"};
  const std::vector<std::string> alphabet = {"s",
                                             "t",
                                             "e",
                                             "p",
                                             "i",
                                             "r",
                                             "S",
                                             "T",
                                             "E",
                                             "P",
                                             "a",
                                             "l",
                                             "h",
                                             "o",
                                             "c",
                                             "j",
                                             " ",
                                             ":",
                                             "0",
                                             "7",
                                             "\n",
                                             "ste 5",
                                             "ITER 3",
                                             "sTeP=4",
                                             "itep 2",
                                             "alpha 9",
                                             "JULIET 4",
                                             "alph 5",
                                             "echo",
                                             "golf x",
                                             "%|",
                                             "\xC5\xBF",
                                             "logging_writer.py:12] [3",
                                             "train: 5%|#| 8"};
  std::mt19937 random(11);
  for (const std::string& pattern : patterns) {
    const ProgressPattern p(pattern);
    int maybe = 0, steps = 0;
    for (int i = 0; i < 4000; ++i) {
      std::string text;
      const int n = 8 + static_cast<int>(random() % 60);
      for (int j = 0; j < n; ++j) text += alphabet[random() % alphabet.size()];
      bool step = false;
      for (size_t at = 0; at <= text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        step = step || p.StepUnfiltered(std::string_view(text).substr(at, end - at)).has_value();
        at = end + 1;
      }
      const bool may = p.MayMatch(text);
      if (step) {
        ASSERT_TRUE(may) << pattern << " on '" << text << "'";
      }
      maybe += may;
      steps += step;
    }
    EXPECT_GT(steps, 100) << pattern;   // the texts had steps
    EXPECT_LT(maybe, 4000) << pattern;  // and the filter still says no to some
  }
}

}  // namespace
}  // namespace podrun
