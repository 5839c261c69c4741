
#include <stdlib.h>
#include "common/parent.h"

int main(int argc, char* argv[]) {
	setup_parent("mq", argc, argv);
	return EXIT_SUCCESS;
}
