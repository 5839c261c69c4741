#include "common/parent.h"

int main(int argc, char* argv[]) {
	setup_parent("fifo", argc, argv);
}
