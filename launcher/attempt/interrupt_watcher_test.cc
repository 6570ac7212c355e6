// InterruptWatcher: a Ctrl-C reaches on_interrupt, and ends a blocking gcloud at once.
#include "launcher/attempt/interrupt_watcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_gcloud.h"

namespace podrun {
namespace {

TEST(InterruptWatcher, CtrlCDuringABlockingGcloudStopsItAtOnce) {
  std::atomic<int> interrupts{0};
  InterruptWatcher watcher([&] { ++interrupts; });
  const auto pid_file = std::filesystem::temp_directory_path() /
                        ("interrupt_watcher_test." + std::to_string(::getpid()));
  // A `gcloud ... delete` that would take 30 s, on a thread of the attempt (SIGINT blocked).
  std::optional<Error> error;
  auto began = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration took{};
  std::thread deleter([&] {
    try {
      RunGcloud(GcloudCommand{{"sh", "-c", "echo $$ > " + pid_file.string() + "; exec sleep 30",
                               "delete"},
                              kGcloudDeleteDeadline},
                "tpu node-1");
    } catch (const Error& e) {
      error = e;
    }
    took = std::chrono::steady_clock::now() - began;
  });
  for (int i = 0; i < 200 && !std::filesystem::exists(pid_file); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pid_t gcloud = 0;
  std::ifstream(pid_file) >> gcloud;
  ASSERT_GT(gcloud, 0);
  began = std::chrono::steady_clock::now();
  ::kill(::getpid(), SIGINT);  // as the terminal's Ctrl-C reaches podrun
  deleter.join();

  EXPECT_EQ(1, interrupts.load());
  EXPECT_LT(took, std::chrono::seconds(1));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(ExitCode::kInterrupted, error->code());
  EXPECT_NE(std::string::npos, std::string(error->what()).find("tpu node-1: interrupted"))
      << error->what();
  EXPECT_EQ(-1, ::kill(gcloud, 0));  // stopped and reaped
  EXPECT_EQ(ESRCH, errno);
  std::filesystem::remove(pid_file);
}

TEST(InterruptWatcher, SleepUnlessInterruptedEndsOnCtrlC) {
  InterruptWatcher watcher([] {});
  watcher.Stop();  // SIGINT stays blocked: this thread takes it
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(::getpid(), SIGINT);
  });
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(SleepUnlessInterrupted(std::chrono::seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(2));
  interrupter.join();
}

}  // namespace
}  // namespace podrun
