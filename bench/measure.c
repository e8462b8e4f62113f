/* Runs one command and prints its wall time, CPU (user + system) and peak RSS:
 *   mesh_bench_measure OUT CMD ARGS...   (OUT gets "wall_us cpu_us maxrss_kib exit")
 * A small exec'd program of its own, so that the peak RSS is the command's: a child
 * forked straight from a large benchmark process would carry that process's
 * resident size into its own ru_maxrss (the kernel keeps the high-water mark of
 * the memory the child had before its exec). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: mesh_bench_measure OUT CMD ARGS...\n");
    return 2;
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t pid = vfork();
  if (pid < 0) return 125;
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) return 125;
  clock_gettime(CLOCK_MONOTONIC, &b);
  long long wall = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
  long long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
                  ru.ru_stime.tv_usec;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE* out = fopen(argv[1], "we");
  if (!out) return 125;
  fprintf(out, "%lld %lld %ld %d\n", wall, cpu, ru.ru_maxrss, code);
  fclose(out);
  return code;
}
