// bagua-train: data-parallel MLP training on Fashion-MNIST with one bagua algorithm.
// Run with mpirun; see doc/training.md.
#include <mpi.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "algorithm.hpp"
#include "bagua.h"
#include "idx.hpp"
#include "trainer.hpp"

// OpenBLAS's thread control (declared here: the cblas.h in use may be another vendor's).
extern "C" void openblas_set_num_threads(int);

namespace {

constexpr const char *kDefaultData = "/usr/share/datasets/fashion-mnist";

struct Options {
  train::TrainConfig config;
  std::string data = kDefaultData;
  std::string csv, summary_csv;
  bool check = false, quiet = false, list = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void print_usage(FILE *out) {
  const train::TrainConfig d;
  const train::AlgorithmSettings s;
  std::fprintf(out,
               "usage: mpirun -np N bagua-train [options]\n"
               "  --algorithm NAME       communication algorithm (default %s), one of:\n",
               d.algorithm.c_str());
  for (const auto &a : train::algorithm_list())
    std::fprintf(out, "                           %-20s %s\n", a.name, a.description);
  std::fprintf(
      out,
      "  --epochs N             epochs (default %d)\n"
      "  --batch N              batch size per rank (default %d)\n"
      "  --lr X                 learning rate (default %g)\n"
      "  --schedule S           learning rate over the run: cosine (to 0) or constant "
      "(default cosine)\n"
      "  --momentum X           SGD momentum (default %g)\n"
      "  --hidden H             units in each hidden layer (default %d)\n"
      "  --layers L             hidden layers (default %d)\n"
      "  --seed N               seed of weights, shuffling and stragglers (default %llu)\n"
      "  --target-accuracy P    test accuracy (percent) for time-to-accuracy (default %g)\n"
      "  --straggler-prob P     probability that a rank sleeps after a step (default %g)\n"
      "  --straggler-delay K    sleep length, in mean compute times of a step (default %g)\n"
      "  --interval K           decentralized, lowprec-ring: communicate every K steps "
      "(default %d)\n"
      "  --partial-group P      partial: group size, 0 = half the ranks (default %d)\n"
      "  --async-interval-ms T  async: pause between averaging rounds (default %d)\n"
      "  --async-momentum X     async: SGD momentum in place of --momentum (default %g)\n"
      "  --bucket-kb K          gradient allreduces: bucket cap of the bucketed communicator,\n"
      "                         in KiB (default %d: 4 buckets for the default model)\n"
      "  --no-buckets           gradient allreduces: one flat plain call after backward\n"
      "  --evals-per-epoch N    test-set evaluations per epoch (default %d)\n"
      "  --max-steps N          stop after N steps, 0 = no limit (default 0)\n"
      "  --test-limit N         evaluate on the first N test images, 0 = all (default 0)\n"
      "  --eval-model M         replicas that differ: evaluate their 'average' or each rank's\n"
      "                         'local' weights (mean accuracy) (default average)\n"
      "  --data DIR             Fashion-MNIST idx .gz files (default %s)\n"
      "  --csv FILE             write one row per evaluation\n"
      "  --summary-csv FILE     append one summary row\n"
      "  --check                fail unless the loss fell below half its start and, for\n"
      "                         centralized algorithms, all ranks hold identical weights\n"
      "  --quiet                no per-epoch lines\n"
      "  --list-algorithms      print the algorithm names, one per line, and exit\n",
      d.epochs, d.batch, double(d.lr), double(d.momentum), d.hidden, d.hidden_layers,
      static_cast<unsigned long long>(d.seed), d.target_accuracy, d.straggler_prob,
      d.straggler_delay, s.interval, s.partial_group, s.async_interval_ms, double(s.async_momentum),
      s.bucket_kb, d.evals_per_epoch, kDefaultData);
}

std::string format_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

double parse_number(const std::string &flag, const char *text, double lo, double hi) {
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v >= lo && v <= hi))
    throw UsageError(flag + " '" + text + "' is not a number in [" + format_number(lo) + ", " +
                     format_number(hi) + "]");
  return v;
}

int parse_int(const std::string &flag, const char *text, int lo, int hi) {
  const double v = parse_number(flag, text, lo, hi);
  if (v != std::floor(v)) throw UsageError(flag + " '" + text + "' is not an integer");
  return int(v);
}

void check_algorithm_name(const std::string &name) {
  std::string names;
  for (const auto &a : train::algorithm_list()) {
    if (name == a.name) return;
    names += std::string(names.empty() ? "" : ", ") + a.name;
  }
  throw UsageError("unknown algorithm '" + name + "'; available: " + names);
}

bool parse_eval_model(const std::string &name) {
  if (name == "average" || name == "local") return name == "average";
  throw UsageError("--eval-model '" + name + "' is not one of: average, local");
}

bool parse_schedule(const std::string &name) {
  if (name == "cosine" || name == "constant") return name == "cosine";
  throw UsageError("--schedule '" + name + "' is not one of: cosine, constant");
}

// Returns false when --help was given.
bool parse_options(int argc, char **argv, Options *o) {
  train::TrainConfig &c = o->config;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return false;
    if (flag == "--list-algorithms") {
      o->list = true;
      continue;
    }
    if (flag == "--check") {
      o->check = true;
      continue;
    }
    if (flag == "--quiet") {
      o->quiet = true;
      continue;
    }
    if (flag == "--no-buckets") {
      c.settings.buckets = false;
      continue;
    }
    if (i + 1 >= argc) throw UsageError("unknown option or missing value: " + flag);
    const char *v = argv[++i];
    if (flag == "--algorithm")
      c.algorithm = v;
    else if (flag == "--epochs")
      c.epochs = parse_int(flag, v, 1, 100000);
    else if (flag == "--batch")
      c.batch = parse_int(flag, v, 1, 60000);
    else if (flag == "--lr")
      c.lr = float(parse_number(flag, v, 0, 100));
    else if (flag == "--schedule")
      c.cosine_schedule = parse_schedule(v);
    else if (flag == "--momentum")
      c.momentum = float(parse_number(flag, v, 0, 0.999));
    else if (flag == "--hidden")
      c.hidden = parse_int(flag, v, 1, 16384);
    else if (flag == "--layers")
      c.hidden_layers = parse_int(flag, v, 1, 256);
    else if (flag == "--seed")
      c.seed = uint64_t(parse_int(flag, v, 0, 1 << 30));
    else if (flag == "--target-accuracy")
      c.target_accuracy = parse_number(flag, v, 0, 100);
    else if (flag == "--straggler-prob")
      c.straggler_prob = parse_number(flag, v, 0, 1);
    else if (flag == "--straggler-delay")
      c.straggler_delay = parse_number(flag, v, 0, 1000);
    else if (flag == "--interval")
      c.settings.interval = parse_int(flag, v, 1, 1 << 20);
    else if (flag == "--partial-group")
      c.settings.partial_group = parse_int(flag, v, 0, 1 << 20);
    else if (flag == "--bucket-kb")
      c.settings.bucket_kb = parse_int(flag, v, 1, 1 << 20);
    else if (flag == "--async-momentum")
      c.settings.async_momentum = float(parse_number(flag, v, 0, 0.999));
    else if (flag == "--async-interval-ms")
      c.settings.async_interval_ms = parse_int(flag, v, 0, 1 << 20);
    else if (flag == "--evals-per-epoch")
      c.evals_per_epoch = parse_int(flag, v, 1, 1000);
    else if (flag == "--max-steps")
      c.max_steps = parse_int(flag, v, 0, 1 << 30);
    else if (flag == "--test-limit")
      c.test_limit = parse_int(flag, v, 0, 1 << 30);
    else if (flag == "--eval-model")
      c.evaluate_average = parse_eval_model(v);
    else if (flag == "--data")
      o->data = v;
    else if (flag == "--csv")
      o->csv = v;
    else if (flag == "--summary-csv")
      o->summary_csv = v;
    else
      throw UsageError("unknown option: " + flag);
  }
  check_algorithm_name(c.algorithm);
  return true;
}

bool file_is_empty(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  return !in || in.tellg() == 0;
}

double seconds_per_epoch(const train::TrainResult &r) {
  const train::EvalPoint &last = r.points.back();
  return last.wall_s / last.epoch_progress;
}

void print_progress(const train::TrainConfig &c, const train::EvalPoint &p) {
  std::printf(
      "[%s] epoch %5.2f/%d  step %6ld  loss %.4f  test acc %6.2f%%  time %7.2f s  "
      "sent %8.2f MB/rank\n",
      c.algorithm.c_str(), p.epoch_progress, c.epochs, p.step, p.train_loss, p.test_accuracy,
      p.wall_s, p.bytes_per_rank / 1e6);
  std::fflush(stdout);
}

void print_summary(const train::TrainConfig &c, const train::TrainResult &r, int ranks) {
  const train::EvalPoint &last = r.points.back();
  char target[32] = "not reached";
  if (r.time_to_target_s >= 0) std::snprintf(target, sizeof target, "%.2f s", r.time_to_target_s);
  std::printf(
      "[%s] done: %d ranks, %ld steps, final test accuracy %.2f%%, time to %.1f%%: %s, "
      "%.2f s/epoch, %.2f MB sent per rank\n"
      "[%s] per step: compute (forward+backward+optimizer) %.2f ms, communication %.2f ms, "
      "compute/communication %.2f\n",
      c.algorithm.c_str(), ranks, r.steps, last.test_accuracy, c.target_accuracy, target,
      seconds_per_epoch(r), last.bytes_per_rank / 1e6, c.algorithm.c_str(), r.compute_ms_per_step,
      r.comm_ms_per_step, r.compute_ms_per_step / std::max(r.comm_ms_per_step, 1e-9));
  if (r.bucket_bytes.empty()) return;
  std::printf("[%s] %zu buckets at the end (MB):", c.algorithm.c_str(), r.bucket_bytes.size());
  for (size_t bytes : r.bucket_bytes) std::printf(" %.3f", double(bytes) / 1e6);
  std::printf("\n");
}

void write_csv(const std::string &path, const train::TrainConfig &c, const train::TrainResult &r,
               int ranks) {
  std::ofstream out(path);
  out << "algorithm,ranks,epoch,epoch_progress,step,wall_s,train_loss,test_accuracy,"
         "bytes_per_rank\n";
  for (const auto &p : r.points)
    out << c.algorithm << ',' << ranks << ',' << p.epoch << ',' << p.epoch_progress << ',' << p.step
        << ',' << p.wall_s << ',' << p.train_loss << ',' << p.test_accuracy << ','
        << p.bytes_per_rank << '\n';
  if (!out) throw std::runtime_error("cannot write " + path);
}

void append_summary_csv(const std::string &path, const train::TrainConfig &c,
                        const train::TrainResult &r, int ranks) {
  const bool header = file_is_empty(path);
  std::ofstream out(path, std::ios::app);
  if (header)
    out << "algorithm,ranks,epochs,steps,final_accuracy,target_accuracy,time_to_target_s,"
           "s_per_epoch,bytes_per_rank,compute_ms_per_step,comm_ms_per_step,replicas_identical\n";
  const train::EvalPoint &last = r.points.back();
  out << c.algorithm << ',' << ranks << ',' << last.epoch_progress << ',' << r.steps << ','
      << last.test_accuracy << ',' << c.target_accuracy << ',' << r.time_to_target_s << ','
      << seconds_per_epoch(r) << ',' << last.bytes_per_rank << ',' << r.compute_ms_per_step << ','
      << r.comm_ms_per_step << ',' << (r.replicas_identical ? 1 : 0) << '\n';
  if (!out) throw std::runtime_error("cannot write " + path);
}

// --check: the loss fell well below its start, and centralized algorithms kept replicas equal.
bool check_result(const train::TrainResult &r, bool expect_identical) {
  const bool loss_ok = r.last_loss < 0.5 * r.first_loss;
  std::printf("check: loss %.4f -> %.4f (%s); weights checksum %016llx, %s (%s)\n", r.first_loss,
              r.last_loss, loss_ok ? "ok: below half" : "FAILED: not below half",
              static_cast<unsigned long long>(r.weights_checksum),
              r.replicas_identical ? "identical on all ranks" : "differing between ranks",
              !expect_identical      ? "not required"
              : r.replicas_identical ? "ok"
                                     : "FAILED");
  return loss_ok && (!expect_identical || r.replicas_identical);
}

int run(int argc, char **argv, int rank, int size) {
  Options o;
  try {
    if (!parse_options(argc, argv, &o)) {
      if (rank == 0) print_usage(stdout);
      return 0;
    }
    if (o.list) {
      for (const auto &a : train::algorithm_list())
        if (rank == 0) std::printf("%s\n", a.name);
      return 0;
    }
  } catch (const UsageError &e) {
    if (rank == 0) std::fprintf(stderr, "bagua-train: %s (see --help)\n", e.what());
    return 2;
  }
  const train::Dataset train_set = train::load_fashion_mnist(o.data, "train");
  const train::Dataset test_set = train::load_fashion_mnist(o.data, "t10k");
  const train::TrainConfig &c = o.config;
  if (rank == 0 && !o.quiet)
    std::printf(
        "[%s] %d ranks, MLP %d-%dx%d-10, batch %d per rank, lr %g, momentum %g, %d epochs\n",
        c.algorithm.c_str(), size, train_set.cols, c.hidden, c.hidden_layers, c.batch, double(c.lr),
        double(train::training_momentum(c.algorithm, c.momentum, c.settings)), c.epochs);

  const train::ProgressFn progress = [&](const train::EvalPoint &p) {
    if (rank == 0 && !o.quiet) print_progress(c, p);
  };
  const train::TrainResult r =
      train::run_training(c, train_set, test_set, MPI_COMM_WORLD, progress);
  bool ok = true;
  if (rank == 0) {
    print_summary(c, r, size);
    if (!o.csv.empty()) write_csv(o.csv, c, r, size);
    if (!o.summary_csv.empty()) append_summary_csv(o.summary_csv, c, r, size);
    if (o.check) ok = check_result(r, r.centralized);
  }
  MPI_Bcast(&ok, 1, MPI_C_BOOL, 0, MPI_COMM_WORLD);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    status = run(argc, argv, rank, size);
  } catch (const train::DataError &e) {
    // Every rank reads the same files, so every rank stops here: report once.
    if (rank == 0) std::fprintf(stderr, "bagua-train: %s\n", e.what());
    status = 1;
  } catch (const std::exception &e) {
    // A failed collective can leave ranks out of step: stop them all.
    std::fprintf(stderr, "bagua-train (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  bagua_finalize();
  MPI_Finalize();
  return status;
}
