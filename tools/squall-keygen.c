/*
 * squall-keygen - make a group key for group.key_file.
 *
 *   squall-keygen FILE
 *
 * Writes a new random 32-byte key to FILE (64 hexadecimal digits and a
 * newline), created with mode 0600; an existing FILE is left alone. Copy
 * the same file to every member's host, private to the user the members
 * run as, and name it in the group file:
 *
 *   group = { ... key_file = "group.key"; };
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <squall/error.h>

#include "rdma/auth.h"

int main(int argc, char **argv)
{
	struct squall_error err = { 0 };

	bool help = argc == 2 && !strcmp(argv[1], "--help");

	if (help || argc != 2 || argv[1][0] == '-') {
		fprintf(help ? stdout : stderr, "usage: squall-keygen FILE\n"
			"  writes a new group key to FILE (mode 0600) for "
			"group.key_file\n");
		return help ? 0 : 2;
	}
	if (squall_key_make(argv[1], &err)) {
		fprintf(stderr, "squall-keygen: %s\n", err.msg);
		return 1;
	}
	printf("squall-keygen: wrote a new group key to %s (mode 0600)\n",
	       argv[1]);
	return 0;
}
