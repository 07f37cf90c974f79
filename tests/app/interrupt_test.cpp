// A sweep or maxbatch killed while it runs (the real binary, a signal while it works): the
// CSV holds exactly rows an uninterrupted run also writes, whole points (searches) only,
// the message says how to go on, and --resume completes it to the same bytes as a run
// never stopped, refusing a file that is not that command's CSV.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"

extern char** environ;

namespace allocsim {
namespace {

using namespace test;

// Starts the allocsim binary with `args`, its stdout and stderr to files.
pid_t start(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  std::vector<std::string> argv_text{ALLOCSIM_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, ALLOCSIM_BINARY, &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  REQUIRE(failed == 0);
  return pid;
}

TEST_CASE("sweep: SIGINT or SIGTERM writes every finished row, and --resume completes the same bytes", "[sweep][interrupt]") {
  const TempDir dir;
  // 120 short points: a few milliseconds each, so the signal comes long before the end.
  const std::vector<std::string> sweep{"sweep", "--workload", "random:n=5000", "--param", "seed=1:60:1",
                                       "--policy", "bestfit,caching", "--quiet"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = sweep;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string full = dir.file("full.csv");
  REQUIRE(cli(with({"--csv", full})).status == 0);
  const std::vector<std::string> expected = lines(read_file(full));
  REQUIRE(expected.size() == 1 + 120);
  const std::set<std::string> expected_rows(expected.begin() + 1, expected.end());

  for (const int signal : {SIGINT, SIGTERM}) {
    const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    INFO(name);
    const std::string csv = dir.file(name + ".csv");
    const std::string err = dir.file(name + ".err");
    const pid_t pid = start(with({"--csv", csv, "--threads", "1", "--save-every", "0"}), dir.file(name + ".out"), err);
    // Wait for a few rows on disk, then interrupt.
    int status = 0;
    bool exited = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lines(read_file(csv)).size() < 4 && std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    REQUIRE_FALSE(exited);  // the sweep must still be running when the signal comes
    REQUIRE(kill(pid, signal) == 0);
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + signal);
    const std::string message = read_file(err);
    CHECK(one_line(message));
    CHECK_THAT(message, Catch::Contains("interrupted by " + name) && Catch::Contains("written to " + csv) &&
                            Catch::Contains("--resume"));

    // Whole rows, every one of them a row of the uninterrupted run, the header first.
    const std::string written = read_file(csv);
    REQUIRE(written.ends_with('\n'));
    const std::vector<std::string> rows = lines(written);
    REQUIRE(rows.size() >= 4);
    CHECK(rows.size() < expected.size());
    CHECK(rows.front() == expected.front());
    for (std::size_t i = 1; i < rows.size(); ++i) CHECK(expected_rows.contains(rows[i]));
    std::ostringstream finished;
    finished << rows.size() - 1 << " of 120 points finished";
    CHECK_THAT(message, Catch::Contains(finished.str()));

    const Outcome resumed = cli(with({"--csv", csv, "--resume"}));
    REQUIRE(resumed.status == 0);
    std::ostringstream summary;
    summary << "(" << 120 - (rows.size() - 1) << " run, " << rows.size() - 1 << " kept from the CSV)";
    CHECK_THAT(resumed.out, Catch::Contains(summary.str()));
    CHECK(read_file(csv) == read_file(full));
  }
}

// Whether the process has its SIGINT handler in place (Linux: SigCgt in /proc/PID/status),
// waited for up to 60 s.
bool catches_sigint(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("SigCgt:") && (std::stoull(line.substr(7), nullptr, 16) >> (SIGINT - 1) & 1)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST_CASE("maxbatch: SIGINT writes the finished searches, and --resume completes the same bytes", "[maxbatch][interrupt][resume]") {
  const TempDir dir;
  // 18 searches of some 30 ms, one at a time: the signal comes about half way.
  const std::vector<std::string> maxbatch{"maxbatch", "--workload", "resnet50", "--policy",
                                          "direct,bestfit,caching,bfc,growth,firstfit", "--capacity", "8GiB",
                                          "--threads", "1"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = maxbatch;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string full = dir.file("full.csv");
  const auto began = std::chrono::steady_clock::now();
  REQUIRE(cli(with({"--csv", full})).status == 0);
  const auto took = std::chrono::steady_clock::now() - began;
  const std::vector<std::string> expected = lines(read_file(full));
  REQUIRE(expected.size() == 1 + 18);
  const std::set<std::string> expected_rows(expected.begin() + 1, expected.end());

  const std::string csv = dir.file("part.csv");
  const std::string err = dir.file("part.err");
  // maxbatch writes its CSV only at the end or the signal, so there is nothing to watch:
  // the signal comes after a guess of half the run. On a loaded machine the guess can
  // miss (the run already over, or no search finished yet); then it is tried again,
  // sooner or later, before the checks below judge the last try.
  int status = 0;
  auto wait = std::chrono::duration_cast<std::chrono::microseconds>(took / 2);
  for (int attempt = 1;; ++attempt) {
    std::filesystem::remove(csv);
    const pid_t pid = start(with({"--csv", csv}), dir.file("part.out"), err);
    REQUIRE(catches_sigint(pid));  // before that, SIGINT would kill it outright
    std::this_thread::sleep_for(wait);
    REQUIRE(kill(pid, SIGINT) == 0);
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (attempt == 5) break;
    const bool ended_first = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const bool none_finished = lines(read_file(csv)).size() < 2;
    if (!ended_first && !none_finished) break;
    wait = ended_first ? wait / 2 : wait * 3 / 2;
  }
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 128 + SIGINT);  // still running when the signal came
  const std::string message = read_file(err);
  CHECK(one_line(message));
  CHECK_THAT(message, Catch::Contains("interrupted by SIGINT") && Catch::Contains("written to " + csv) &&
                          Catch::Contains("the same command with --resume runs the rest"));
  const std::vector<std::string> rows = lines(read_file(csv));
  REQUIRE(rows.size() >= 2);
  CHECK(rows.size() < expected.size());
  CHECK(rows.front() == expected.front());
  for (std::size_t i = 1; i < rows.size(); ++i) CHECK(expected_rows.contains(rows[i]));
  std::ostringstream finished;
  finished << rows.size() - 1 << " of 18 searches finished";
  CHECK_THAT(message, Catch::Contains(finished.str()));

  const Outcome resumed = cli(with({"--csv", csv, "--resume"}));
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.out, Catch::Contains("policy direct: kept from " + csv + ": largest batch "));
  CHECK(read_file(csv) == read_file(full));
  // Resumed once more, everything is kept: the same bytes again, every search reported as kept.
  const Outcome again = cli(with({"--csv", csv, "--resume"}));
  REQUIRE(again.status == 0);
  CHECK(again.out.find("runs out of memory") == std::string::npos);
  CHECK(read_file(csv) == read_file(full));
}

TEST_CASE("maxbatch: --resume refuses a sweep CSV and another workload's, leaving the file as it was", "[maxbatch][interrupt][resume]") {
  const TempDir dir;
  const std::vector<std::string> options{"--policy", "direct", "--capacity", "256MiB"};
  const auto command = [&](std::vector<std::string> args) {
    args.insert(args.end(), options.begin(), options.end());
    return cli(args);
  };
  const std::string sweep = dir.file("sweep.csv");
  REQUIRE(command({"sweep", "--workload", "seed_cnn", "--csv", sweep}).status == 0);
  const std::string other = dir.file("other.csv");
  REQUIRE(command({"maxbatch", "--workload", "seed_cnn_steps1", "--limit", "64", "--csv", other}).status == 0);
  for (const std::string& file : {sweep, other}) {
    INFO(file);
    const std::string before = read_file(file);
    const auto written = std::filesystem::last_write_time(file);
    const Outcome refused = command({"maxbatch", "--workload", "seed_cnn", "--limit", "64", "--csv", file, "--resume"});
    CHECK(refused.status == 2);
    CHECK(one_line(refused.err));
    CHECK_THAT(refused.err, Catch::Contains("--resume: " + file));
    CHECK(read_file(file) == before);
    CHECK(std::filesystem::last_write_time(file) == written);
  }
  CHECK(command({"maxbatch", "--workload", "seed_cnn", "--resume"}).status == 2);  // no --csv to resume from
}

}  // namespace
}  // namespace allocsim
