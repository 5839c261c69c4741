//! A private namespace directory for one run of a suite, under the
//! user's namespace, removed (with whatever the run left in it) on drop.

use std::path::Path;

use msgpass::Namespace;

/// A run's own namespace directory, `<base>/<name>`, removed on drop.
pub struct RunDir(Namespace);

impl RunDir {
    /// Creates (mode 0700) and checks `<base>/<name>`.
    pub fn create(base: &Namespace, name: &str) -> msgpass::Result<RunDir> {
        Namespace::open(base.root().join(name)).map(RunDir)
    }

    /// The directory as a namespace, for servers and clients.
    pub fn ns(&self) -> &Namespace {
        &self.0
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.0.root()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.root());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_goes_with_its_contents() {
        let base = std::env::temp_dir().join(format!("msgbench-rundir-{}", std::process::id()));
        let ns = Namespace::open(&base).expect("base");
        let path = {
            let d = RunDir::create(&ns, "run-1").expect("run dir");
            std::fs::write(d.path().join("left"), b"x").expect("file");
            assert_eq!(d.ns().root(), base.join("run-1"));
            d.path().to_path_buf()
        };
        assert!(!path.exists());
        std::fs::remove_dir_all(&base).expect("cleanup");
    }
}
