/* The floor of a no-op check of N files: one process that reads the list of
 * paths (one a line, relative to ROOT) and fstatat()s each from an fd on ROOT,
 * without following links, as mesh-host's no-op fast path does for a file whose
 * stat fingerprint is recorded. It does nothing else: no parsing, no store, no
 * comparison. It prints how many it found, so a wrong list cannot look fast.
 *
 *   mesh_bench_fstatat_floor ROOT LIST
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: mesh_bench_fstatat_floor ROOT LIST\n");
    return 2;
  }
  int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FILE* list = fopen(argv[2], "re");
  if (root < 0 || !list) {
    perror("mesh_bench_fstatat_floor");
    return 1;
  }
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  long found = 0, missing = 0;
  while ((len = getline(&line, &cap, list)) > 0) {
    if (line[len - 1] == '\n') line[--len] = '\0';
    const char* rel = line;
    while (*rel == '/') ++rel; /* relative to ROOT */
    struct stat st;
    if (fstatat(root, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      ++found;
    else
      ++missing;
  }
  free(line);
  fclose(list);
  close(root);
  printf("%ld found, %ld missing\n", found, missing);
  return missing ? 1 : 0;
}
