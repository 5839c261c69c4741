//! Building the reference programs: the kept sources (the repository's
//! `peers/`, or `$MSGBENCH_PEERS`) compiled with the machine's C compiler
//! (`$CC`, else `cc`) into a temporary directory, removed on drop.
//! goldsborough's programs find their server and client from the path of
//! their own source file (up to the last `ipc-bench`, then
//! `build/source`), so its sources are copied under `TMP/ipc-bench/` and
//! built into `TMP/ipc-bench/build/source/NAME/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::programs::{Program, Project};

/// Where the kept sources are: `$MSGBENCH_PEERS`, else the repository's
/// `peers/` directory this executable was built from.
pub fn sources() -> PathBuf {
    match std::env::var_os("MSGBENCH_PEERS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers"),
    }
}

/// The built programs, in a temporary directory removed on drop.
pub struct Built {
    dir: tempfile::TempDir,
}

impl Built {
    /// The executable of `p`.
    pub fn exe(&self, p: &Program) -> PathBuf {
        match p.project {
            Project::Goldsborough => self.gold_out().join(p.name).join(p.exe),
            Project::Rigtorp => self.dir.path().join("rigtorp").join(p.exe),
        }
    }

    /// The directory the programs run in (their relative files: the
    /// SysV keys of mq and shm come from `ftok` on `mq` and `shm` here).
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn gold_src(&self) -> PathBuf {
        self.dir.path().join("ipc-bench/source")
    }

    fn gold_out(&self) -> PathBuf {
        self.dir.path().join("ipc-bench/build/source")
    }
}

/// The C compiler: `$CC`, else `cc`.
fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Builds every program of `programs` from `src`; the error says which
/// step failed (no compiler, a missing source, a compile error).
pub fn build(src: &Path, programs: &[Program]) -> Result<Built> {
    let gold = src.join("ipc-bench/source");
    if !gold.join("common/process.c").is_file() {
        bail!(
            "no ipc-bench sources at {} (set MSGBENCH_PEERS to the repository's peers/ directory)",
            src.display()
        );
    }
    let dir = tempfile::Builder::new()
        .prefix("msgbench-peers-")
        .tempdir()
        .context("cannot make a temporary directory")?;
    let built = Built { dir };
    copy_dir(&gold, &built.gold_src())?;
    std::fs::create_dir_all(built.work())?;
    for f in ["mq", "shm"] {
        std::fs::write(built.work().join(f), b"")?;
    }
    std::fs::create_dir_all(built.dir.path().join("rigtorp"))?;
    for p in programs {
        build_one(&built, src, p).with_context(|| format!("building {}", p.label()))?;
    }
    Ok(built)
}

/// Copies the directory tree `from` to `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// Builds program `p` (goldsborough's: its parent, and its server and
/// client where it has them).
fn build_one(b: &Built, src: &Path, p: &Program) -> Result<()> {
    if p.project == Project::Rigtorp {
        let main = src
            .join("rigtorp-ipc-bench/src")
            .join(format!("{}.c", p.name));
        return cc(&[main], &b.exe(p), &[]);
    }
    let root = b.gold_src();
    let dir = root.join(p.name);
    let mut common: Vec<PathBuf> = std::fs::read_dir(root.join("common"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "c"))
        .collect();
    common.sort();
    common.extend(p.extra.iter().map(|f| dir.join(f)));
    let out = b.gold_out().join(p.name);
    std::fs::create_dir_all(&out)?;
    let mut mains = vec![(format!("{}.c", p.exe), p.exe.to_string())];
    if p.pair {
        for side in ["server", "client"] {
            mains.push((format!("{side}.c"), format!("{}-{side}", p.name)));
        }
    }
    for (main, exe) in mains {
        let mut files = vec![dir.join(main)];
        files.extend(common.iter().cloned());
        cc(&files, &out.join(exe), &[&root])?;
    }
    Ok(())
}

/// Compiles and links `files` into `out` as the projects' own builds do
/// (`-O3`, GNU C11, libm, pthreads, librt), warnings off: they are not
/// ours to fix.
fn cc(files: &[PathBuf], out: &Path, include: &[&Path]) -> Result<()> {
    let mut c = Command::new(compiler());
    c.args(["-O3", "-std=gnu11", "-w"]);
    for i in include {
        c.arg("-I").arg(i);
    }
    c.args(files)
        .arg("-o")
        .arg(out)
        .args(["-lm", "-lpthread", "-lrt"]);
    let o = c
        .output()
        .with_context(|| format!("cannot run the C compiler {:?} (set CC)", compiler()))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let first = err.lines().find(|l| l.contains("error")).unwrap_or("");
        bail!("{} failed ({}): {first}", compiler(), o.status);
    }
    Ok(())
}
