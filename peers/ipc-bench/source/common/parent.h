#ifndef IPC_BENCH_PARENT_H
#define IPC_BENCH_PARENT_H

void setup_parent(char* name, int argc, char* argv[]);

#endif /* IPC_BENCH_PARENT_H */
