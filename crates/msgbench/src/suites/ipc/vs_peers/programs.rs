//! The reference programs msgbench runs beside its ipc rows, and how
//! each maps onto a msgbench transport: the IPC comparison study's own
//! programs (goldsborough/ipc-bench, the study's `<method> -c COUNT -s
//! SIZE`) and rigtorp/ipc-bench's ping-pong programs. Their sources are
//! in the repository's `peers/` directory (peers/README.md).

/// Which project a program comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Project {
    /// github.com/goldsborough/ipc-bench: prints the study's results
    /// block (count, average, minimum, maximum, rate).
    Goldsborough,
    /// github.com/rigtorp/ipc-bench: prints "average latency: N ns",
    /// half a round trip.
    Rigtorp,
}

impl Project {
    /// Repository and commit of the kept sources.
    pub fn upstream(self) -> &'static str {
        match self {
            Project::Goldsborough => {
                "github.com/goldsborough/ipc-bench@589146a3f14f7675c2224ed47e414093bba13a69"
            }
            Project::Rigtorp => {
                "github.com/rigtorp/ipc-bench@b28120382e209422b06e6dea0c927bce29d18df2"
            }
        }
    }
}

/// One reference program.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// Its project.
    pub project: Project,
    /// Its directory under `source/` (goldsborough) or its file stem
    /// under `src/` (rigtorp).
    pub name: &'static str,
    /// The executable that is run (goldsborough's parent starts its own
    /// `NAME-server` and `NAME-client`).
    pub exe: &'static str,
    /// msgbench's transport on the same mechanism.
    pub transport: &'static str,
    /// Its sources besides its main file (goldsborough: the parent's
    /// server and client are built from `server.c` and `client.c`).
    pub pair: bool,
    /// Extra source files in its directory.
    pub extra: &'static [&'static str],
    /// What it does differently from msgbench's row.
    pub differs: &'static str,
}

/// Every program, in the order they run.
pub const PROGRAMS: &[Program] = &[
    gold(
        "domain",
        "domain",
        "uds-stream",
        true,
        "a stream socket at a fixed path, send and recv each way: the same mechanism",
    ),
    gold(
        "tcp",
        "tcp",
        "tcp",
        true,
        "loopback TCP, send and recv each way: the same mechanism",
    ),
    gold(
        "pipe",
        "pipe",
        "pipe",
        false,
        "a pipe one way (stdio fwrite/fread) and a signal each way (SIGUSR1/2) to pace it",
    ),
    gold(
        "fifo",
        "fifo",
        "fifo",
        true,
        "a named pipe one way (stdio) and a signal each way to pace it",
    ),
    gold(
        "mq",
        "mq",
        "sysv-msg",
        true,
        "one System V queue (msgsnd/msgrcv), two message types: the same mechanism",
    ),
    gold(
        "signal",
        "signal",
        "signal",
        true,
        "a signal each way, no payload (its size is ignored)",
    ),
    gold(
        "shm",
        "shm",
        "shm-spin",
        true,
        "a shared segment, both sides spinning on a guard byte: the same wait",
    ),
    gold(
        "eventfd",
        "eventfd-bi",
        "eventfd",
        false,
        "an eventfd counter each way, no payload (its size is set to 1)",
    ),
    rig(
        "pipe_lat",
        "pipe",
        "two pipes, write and read each way: the same mechanism; prints half a round trip",
    ),
    rig(
        "unix_lat",
        "uds-stream",
        "a stream socketpair, write and read each way; prints half a round trip",
    ),
    rig(
        "tcp_lat",
        "tcp",
        "loopback TCP, write and read each way; prints half a round trip",
    ),
];

const fn gold(
    name: &'static str,
    exe: &'static str,
    transport: &'static str,
    pair: bool,
    differs: &'static str,
) -> Program {
    let extra: &'static [&'static str] = if matches!(name.as_bytes(), b"mq") {
        &["mq-common.c"]
    } else {
        &[]
    };
    Program {
        project: Project::Goldsborough,
        name,
        exe,
        transport,
        pair,
        extra,
        differs,
    }
}

const fn rig(name: &'static str, transport: &'static str, differs: &'static str) -> Program {
    Program {
        project: Project::Rigtorp,
        name,
        exe: name,
        transport,
        pair: false,
        extra: &[],
        differs,
    }
}

impl Program {
    /// How a table names it, e.g. `ipc-bench domain`.
    pub fn label(&self) -> String {
        match self.project {
            Project::Goldsborough => format!("ipc-bench {}", self.exe),
            Project::Rigtorp => format!("rigtorp {}", self.exe),
        }
    }
}
