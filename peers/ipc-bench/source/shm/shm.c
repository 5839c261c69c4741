#include "common/parent.h"

int main(int argc, char* argv[]) {
	setup_parent("shm", argc, argv);
}
