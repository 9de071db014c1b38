/*
 * replay.c - run a fuzz target's function over files, with any compiler.
 *
 * usage: replay_NAME PATH...   each PATH is a file or a directory whose
 * regular files are all read. Every input goes through the target's
 * LLVMFuzzerTestOneInput, which aborts on a broken promise. An empty set of
 * inputs is a failure, so a lost corpus cannot pass unnoticed.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f) {
		perror(path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		fclose(f);
		return -1;
	}
	/* an exact-size heap copy, so ASan sees any read past the end */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

static int run_dir(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];
	struct stat st;
	int rc = 0;

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (run_file(path) != 0)
			rc = -1;
		else
			(*count)++;
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	struct stat st;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			rc |= run_dir(argv[i], &count);
		} else if (run_file(argv[i]) == 0) {
			count++;
		} else {
			rc = -1;
		}
	}
	printf("replayed %u inputs\n", count);
	if (count == 0) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	return rc ? 1 : 0;
}
